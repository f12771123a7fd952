import type { PseoConfig } from '../config/config.ts';
import { hasActiveJob } from '../engine/job-store.ts';
import { ForbiddenError, InvalidPayloadError, NotFoundError } from '../errors/index.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { ensurePlanPages, readCurrentPlan } from '../plan/plan-store.ts';
import { readPlanPage, retiredAmong } from '../plan/plan-page-store.ts';
import { readPostForRegeneration } from '../posts/post-store.ts';
import { readWebsite } from '../websites/website-store.ts';
import { acceptJob, activeConflict, type AcceptedJob, type StartJobDeps } from './start-job.ts';

/**
 * Starts an on-demand job of one page that rewrites post `postId` of `userId`, with `instructions` added to the
 * prompt, charged at `token_per_page`: 404 when the post does not exist, 403 when it is someone else's, 409 when
 * its website has an active job, 400 when its plan page was retired (a sync of its source found no row for it: it is
 * never generated again), 402 when the balance or a daily cap is short. The new content replaces the post
 * when the job stores it; the previous version stays as a Directus revision (posts/post-revisions.ts).
 */
export async function regeneratePost(
	deps: StartJobDeps & { config: PseoConfig },
	userId: string,
	postId: number,
	instructions: string | null,
): Promise<AcceptedJob> {
	const post = await readPostForRegeneration(deps.database, postId);
	if (!post) throw new NotFoundError({ resource: 'Post', id: postId });
	const owner = post.userId ?? (await readWebsite(deps.database, post.pseoId))?.backend_user_id;
	if (owner !== userId) throw new ForbiddenError({ resource: 'Post', id: postId });
	if (await hasActiveJob(deps.database, post.pseoId)) throw activeConflict(post.pseoId);
	if ((await retiredAmong(deps.database, post.pseoId, [post.route])).size > 0) {
		throw new InvalidPayloadError({ reason: `Post ${postId}'s page ${post.route} was retired from the plan: a sync of its data source found no row for it. A retired page is not generated again; sync its row back to revive it.` });
	}
	// The plan's page for the route, with its keyword and intent, when the current plan still has it.
	await ensurePlanPages(deps.database, post.pseoId, deps.logger);
	const plan = await readCurrentPlan(deps.database, post.pseoId);
	const page: PlanPage = (await readPlanPage(deps.database, post.pseoId, post.route)) ?? { route: post.route, title: post.title, priority: 0 };
	return acceptJob(deps, {
		userId,
		pseoId: post.pseoId,
		mode: 'on_demand',
		kind: 'regenerate',
		rate: deps.config.tokenPerPage,
		routes: [page],
		planId: plan?.id ?? null,
		note: `regeneration of post ${postId}`,
		userCap: deps.config.userDailyTokenCap,
		regeneratePostId: postId,
		instructions,
	});
}
