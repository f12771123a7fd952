import type { PseoConfig } from '../config/config.ts';
import { readJob } from '../engine/job-store.ts';
import { InvalidPayloadError } from '../errors/index.ts';
import { retiredAmong } from '../plan/plan-page-store.ts';
import { postedRoutes } from '../posts/post-store.ts';
import { requireOwnedGeneration } from './read-jobs.ts';
import { acceptJob, type StartJobDeps } from './start-job.ts';
import type { ServiceContext } from '../shared/services.ts';

/**
 * Starts a new job, in the original job's mode and at that mode's current rate, for the routes in its
 * `failed_routes` that have not meanwhile got a post nor been retired from the plan (a sync of their source found no
 * row for them). 404/403 as for reading the job; 400 while it is still active
 * or when nothing is left to retry; 409 when the website has another active job; 402 when the balance is short.
 */
export async function retryJob(deps: StartJobDeps & { context: ServiceContext; config: PseoConfig }, userId: string, jobId: number): Promise<{ id: number; pages: number }> {
	await requireOwnedGeneration(deps.context, jobId, userId);
	const job = await readJob(deps.database, jobId);
	if (!job) throw new InvalidPayloadError({ reason: `Generation ${jobId} does not exist.` });
	if (job.status === 'pending' || job.status === 'running') {
		throw new InvalidPayloadError({ reason: `Generation ${jobId} is still ${job.status}; retry it once it has finished.` });
	}
	const failed = new Set(job.failed_routes.map((failure) => failure.route));
	const candidates = job.routes.filter((page) => failed.has(page.route));
	const posted = await postedRoutes(
		deps.database,
		job.pseo_id,
		candidates.map((page) => page.route),
	);
	const retired = await retiredAmong(
		deps.database,
		job.pseo_id,
		candidates.map((page) => page.route),
	);
	const routes = candidates.filter((page) => !posted.has(page.route) && !retired.has(page.route));
	if (routes.length === 0) {
		throw new InvalidPayloadError({ reason: `Generation ${jobId} has no failed route left to retry.` });
	}
	const rate = job.mode === 'on_demand' ? deps.config.tokenPerPage : deps.config.tokenPerBatchPage;
	const { id } = await acceptJob(deps, {
		userId,
		pseoId: job.pseo_id,
		mode: job.mode,
		kind: 'retry',
		rate,
		routes,
		planId: job.main_json_id,
		note: `retry of generation ${jobId}: ${routes.length} page(s)`,
		userCap: deps.config.userDailyTokenCap,
	});
	return { id, pages: routes.length };
}
