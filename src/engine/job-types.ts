import type { PlanPage } from '../plan/plan-page.ts';
import type { StoredStepError } from './step-failure.ts';

export interface FailedRoute {
	route: string;
	error: string;
}

type JobStatus = 'pending' | 'running' | 'completed' | 'failed';
export type JobMode = 'on_demand' | 'bulk';
/**
 * What started a job: the on-demand or bulk trigger, a retry of a finished job's failed pages, a regeneration of one
 * post, or a refresh of the website's stale posts. Its mode says how it runs; its kind says what it is for.
 */
export type JobKind = 'on_demand' | 'bulk' | 'retry' | 'regenerate' | 'refresh';

/**
 * The kind of a job from its stored row: the one it recorded, or for a job stored before jobs recorded one, what its
 * mode and `regenerate_post_id` say (a retry was then indistinguishable from a job of its mode).
 */
export function kindOf(row: { kind?: unknown; mode?: unknown; regenerate_post_id?: unknown }): JobKind {
	if (typeof row.kind === 'string' && row.kind !== '') return row.kind as JobKind;
	if (row.regenerate_post_id !== null && row.regenerate_post_id !== undefined) return 'regenerate';
	return row.mode === 'bulk' ? 'bulk' : 'on_demand';
}

/** Whether a job of `kind` rewrites posts that exist (a regeneration, a refresh) rather than creating new ones. */
export function rewritesPosts(kind: JobKind): boolean {
	return kind === 'regenerate' || kind === 'refresh';
}

/**
 * A generation job's record without its routes: what a bulk step that only polls its parts needs. A job's routes
 * are rows (job-route-store.ts), read in full only by the runners that walk all of them, and by a bulk step part
 * by part, so a 100,000-page job is never held whole for a poll.
 */
export interface JobHead {
	id: number;
	pseo_id: number;
	user_id: string;
	mode: JobMode;
	kind: JobKind;
	status: JobStatus;
	requested_count: number;
	created_count: number;
	failed_count: number;
	/** How many routes the job has (positions 0 to route_count - 1). */
	route_count: number;
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
	/** The provider and model it runs with, fixed when it was accepted; null for a job accepted before jobs named them. */
	provider: string | null;
	model: string | null;
	/** The failures of its latest steps in a row (step-failure.ts); null when its last step went well. */
	last_error: StoredStepError | null;
}

/** A generation job with its routes, in its order, and those that failed with their errors. */
export interface JobRecord extends JobHead {
	routes: PlanPage[];
	failed_routes: FailedRoute[];
}
