/** A plan item as a job stores it: the page to generate. */
export interface JobRoute {
	route: string;
	title: string;
	priority: number;
	primary_keyword?: string | null;
	search_intent?: string | null;
	page_type?: string | null;
	parent_route?: string | null;
	cluster?: string | null;
}

export interface FailedRoute {
	route: string;
	error: string;
}

export type JobStatus = 'pending' | 'running' | 'completed' | 'failed';
export type JobMode = 'on_demand' | 'bulk';

/** A generation job as the engine reads it from `pseo_generations`. */
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
	routes: JobRoute[];
	token_rate: number;
	main_json_id: number | null;
	batch_id: string | null;
	batch_input_file_id: string | null;
	lease_owner: string | null;
	attempts: number;
}
