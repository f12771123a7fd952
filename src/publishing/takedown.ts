import type { Knex } from 'knex';
import { publishedPostIds } from '../posts/post-publishing.ts';
import { afterCommit } from '../shared/transaction.ts';
import { readWebsite } from '../websites/website-store.ts';
import { insertPublication } from './publication-store.ts';
import { kickPublications } from './publication-runtime.ts';
import { readTarget } from './target-store.ts';

/*
 * Retired pages come down. A sync that retires pages (plan/plan-sync.ts) calls this in its own transaction, through
 * the callback the endpoint gives it (plan may not import publishing): the takedown of their published posts is
 * queued as a publication of its own, inserted in that transaction, so it exists exactly when the retirement
 * commits, and the publishing runtime runs it, durable and retried like every publication. It holds no website's
 * active slot: a sync never waits for, nor is refused by, a publication in flight (which leaves retired posts out).
 */

/**
 * Queues the takedown of the posts of `routes` (retired pages of website `pseoId`) that its publishing target has,
 * inside `trx`; nothing when the website has no target or none of them was published.
 */
export async function queueTakedown(trx: Knex.Transaction, pseoId: number, routes: readonly string[]): Promise<void> {
	const target = await readTarget(trx, pseoId);
	if (!target) return;
	const postIds = await publishedPostIds(trx, pseoId, routes);
	if (postIds.length === 0) return;
	const userId = target.userId ?? (await readWebsite(trx, pseoId))?.backend_user_id;
	if (!userId) return;
	await insertPublication(trx, { pseoId, userId, target: target.target, publishStatus: 'draft', schedule: null, postIds, phase: 'takedown' });
	afterCommit(trx, kickPublications);
}
