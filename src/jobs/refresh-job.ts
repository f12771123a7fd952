import type { PseoConfig } from '../config/config.ts';
import { hasActiveJob } from '../engine/job-store.ts';
import { InvalidPayloadError } from '../errors/index.ts';
import { planPagesAmong } from '../plan/plan-page-store.ts';
import { readCurrentPlan } from '../plan/plan-store.ts';
import { staleRoutes } from '../posts/post-store.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { acceptJob, activeConflict, type AcceptedJob, type StartJobDeps } from './start-job.ts';

export interface RefreshInput {
	userId: string;
	pseoId: number;
	/** At most this many stale posts, highest priority first; all of them when null. */
	postCount: number | null;
	/** Whether the refreshed posts that were published are published again when the job ends. */
	republish: boolean;
}

/**
 * Accepts a refresh job: a bulk job (kind `refresh`) that rewrites the website's stale posts (their plan page's data
 * changed since they were written; retired ones left out), highest priority first, all of them or the first
 * `postCount`, charged at `token_per_batch_page`. Each page is written from the facts its plan page holds now, at
 * acceptance: the job's routes carry them. Checked in the triggers' order: 404/403 on the website, 409 when it has an
 * active job, 400 when nothing is stale, 402 when the balance or a daily cap is short.
 */
export async function refreshJob(deps: StartJobDeps & { config: PseoConfig }, input: RefreshInput): Promise<AcceptedJob> {
	const { userId, pseoId, postCount } = input;
	await requireOwnedPseo(deps.database, pseoId, userId);
	// Cheap early answer; the unique index in acceptJob is what actually decides.
	if (await hasActiveJob(deps.database, pseoId)) throw activeConflict(pseoId);
	// A stale post whose plan page was deleted has no facts to be written from: it is left as it is.
	const routes = await planPagesAmong(deps.database, pseoId, await staleRoutes(deps.database, pseoId), postCount ?? undefined);
	if (routes.length === 0) {
		throw new InvalidPayloadError({ reason: `PSEO ${pseoId} has no stale post to refresh: every post was written from its plan page's current data.` });
	}
	const plan = await readCurrentPlan(deps.database, pseoId);
	return acceptJob(deps, {
		userId,
		pseoId,
		mode: 'bulk',
		kind: 'refresh',
		rate: deps.config.tokenPerBatchPage,
		routes,
		planId: plan?.id ?? null,
		note: `refresh of ${routes.length} stale page(s)`,
		userCap: deps.config.userDailyTokenCap,
		republish: input.republish,
	});
}
