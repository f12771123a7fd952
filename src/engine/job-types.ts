import type { PlanPage } from '../plan/plan-page.ts';

export interface FailedRoute {
	route: string;
	error: string;
}

type JobStatus = 'pending' | 'running' | 'completed' | 'failed';
export type JobMode = 'on_demand' | 'bulk';

/** A generation job as the engine reads it from the jobs table (job-store.ts). */
export interface JobRecord {
	id: number;
	pseo_id: number;
	user_id: string;
	mode: JobMode;
	status: JobStatus;
	requested_count: number;
	created_count: number;
	failed_count: number;
	failed_routes: FailedRoute[];
	routes: PlanPage[];
	token_rate: number;
	main_json_id: number | null;
	batch_id: string | null;
	batch_input_file_id: string | null;
	lease_owner: string | null;
	attempts: number;
	/** Set when its owner cancelled the job: whoever holds it next finishes the cancel instead of the work. */
	cancelled: boolean;
	/** The post a regeneration job rewrites (its one route); null for a job of new pages. */
	regenerate_post_id: number | null;
	/** The owner's instructions for a regeneration, added to the page prompt. */
	instructions: string | null;
}
