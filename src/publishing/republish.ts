import type { Knex } from 'knex';
import { jobsOwingRepublish, settleRepublish, type OwedRepublish } from '../engine/job-store.ts';
import { publishedPostsRewrittenBy } from '../posts/post-store.ts';
import { isUniqueViolation } from '../shared/database.ts';
import type { Logger } from '../shared/logger.ts';
import { transact } from '../shared/transaction.ts';
import { hasActivePublication, insertPublication, lastPublishStatus } from './publication-store.ts';
import { readTarget } from './target-store.ts';

/*
 * A refresh job rewrites stale posts; those a publishing target has are published again, in place, without a click:
 * the job owes a republish from its acceptance (`republish_pending`, unless its trigger said `republish: false`), and
 * once it has ended, the publication sweep creates one publication of its refreshed published posts to the website's
 * target, in the transaction that clears what it owes. The publication runs as every publication does (durable,
 * leased, resumed): a post with a remote id is updated under that id (WordPress), a post a webhook has is sent as a
 * `post.updated` event. A website with a publication still active keeps the debt until the next sweep, since a
 * website runs one publication at a time.
 */

/** Jobs whose republish one sweep looks at. */
const OWED_PER_SWEEP = 20;

/** Creates the publications finished refresh jobs owe; returns their ids. */
export async function republishRefreshedPosts(database: Knex, logger: Logger): Promise<number[]> {
	const created: number[] = [];
	for (const owed of await jobsOwingRepublish(database, OWED_PER_SWEEP)) {
		const id = await republish(database, owed, logger);
		if (id !== null) created.push(id);
	}
	return created;
}

async function republish(database: Knex, owed: OwedRepublish, logger: Logger): Promise<number | null> {
	const target = await readTarget(database, owed.pseoId);
	// Without a target, nothing was published where a republish could go: the debt is settled with nothing to send.
	const postIds = target ? await publishedPostsRewrittenBy(database, owed.pseoId, owed.jobId) : [];
	if (postIds.length > 0 && (await hasActivePublication(database, owed.pseoId))) return null;
	const publishStatus = postIds.length > 0 ? await lastPublishStatus(database, owed.pseoId) : null;
	try {
		const id = await transact(
			database,
			async (trx) => {
				if (!(await settleRepublish(trx, owed.jobId)) || postIds.length === 0 || !target) return null;
				return insertPublication(trx, { pseoId: owed.pseoId, userId: owed.userId, target: target.target, publishStatus, schedule: null, postIds });
			},
			{ logger, what: 'republish of refreshed posts', context: { jobId: owed.jobId, pseoId: owed.pseoId } },
		);
		if (id !== null) logger.info({ jobId: owed.jobId, pseoId: owed.pseoId, publicationId: id, posts: postIds.length }, 'pseo refreshed posts queued for republishing');
		return id;
	} catch (error) {
		// Another publication of the website began in between: the debt stays, for the next sweep.
		if (isUniqueViolation(error)) return null;
		throw error;
	}
}
