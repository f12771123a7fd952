import type { Knex } from 'knex';
import { sameFacts, type Facts } from '../shared/facts.ts';
import type { DirectusServices } from '../shared/services.ts';
import { POSTS, readPostRow, rewrittenFields, type PageContent } from './post-store.ts';

/** Rewrites a post with a regenerated page, inside the caller's transaction, keeping the previous version. */
export type RevisePost = (trx: Knex.Transaction, post: { postId: number; userId: string; generationId: number }, content: PageContent) => Promise<void>;

/**
 * Gets a `RevisePost` ready before its transaction opens. It reads Directus's schema there, not inside the
 * transaction: when the schema cache is cold (any schema change empties it), one request rebuilds it on the default
 * connection while the others wait up to CACHE_SCHEMA_SYNC_TIMEOUT for it, three times, then fail with "hit infinite
 * loop". On SQLite the pool has one connection: a transaction that asks for the schema holds the connection the
 * rebuild waits for, and every request of the instance failed after 30 s.
 */
export type PostReviser = () => Promise<RevisePost>;

/**
 * The facts a website's plan page of `route` holds now, read in the rewrite's transaction; undefined when the plan has
 * no page of that route. The hook passes the plan's reader in: posts cannot depend on the plan, which depends on them.
 */
export type CurrentFacts = (trx: Knex.Transaction, pseoId: number, route: string) => Promise<Facts | null | undefined>;

/**
 * A regeneration replaces a post's content, and the previous version stays as a Directus revision of that post,
 * so an editor can compare and revert it in the app. The update goes through Directus's items service, as the
 * post's owner with full access (the engine acts for them), so Directus records the activity and the revision of
 * the new version itself. A post the engine stored directly has no revision yet: its current version is recorded
 * first, as the revision of its creation.
 *
 * The rewritten post is fresh (`stale` cleared) when it was written from the facts its plan page holds now. A job
 * takes its pages' facts when it is accepted: a sync that changed them while it ran leaves the post stale, and a
 * change that was never marked (an editor's, through the items API) marks it stale now.
 */
export function createPostReviser(directus: DirectusServices, currentFacts: CurrentFacts): PostReviser {
	const { ItemsService, ActivityService, RevisionsService } = directus.services;
	return async () => {
		const schema = await directus.getSchema();
		return async (trx, post, content) => {
			const item = String(post.postId);
			const revisions = new RevisionsService({ knex: trx, schema, accountability: null });
			const kept = (await revisions.readByQuery({
				filter: { _and: [{ collection: { _eq: POSTS } }, { item: { _eq: item } }] },
				fields: ['id'],
				limit: 1,
			})) as unknown[];
			if (kept.length === 0) {
				const current = await readPostRow(trx, post.postId);
				if (current) {
					const activity = await new ActivityService({ knex: trx, schema, accountability: null }).createOne({
						action: 'create',
						user: post.userId,
						collection: POSTS,
						item,
						ip: null,
						user_agent: 'pseo-automation',
						origin: null,
					});
					await revisions.createOne({ activity, collection: POSTS, item, data: current, delta: current });
				}
			}
			const owner = { admin: true, app: false, user: post.userId, role: null, roles: [], ip: null };
			const fields = { ...rewrittenFields(content, post.generationId), ...(await freshness(trx, post.postId, content, currentFacts)) };
			await new ItemsService(POSTS, { knex: trx, schema, accountability: owner }).updateOne(post.postId, fields);
		};
	};
}

/** `stale` and `stale_since` of a post rewritten with `content`: fresh when written from its plan page's current facts. */
async function freshness(trx: Knex.Transaction, postId: number, content: PageContent, currentFacts: CurrentFacts): Promise<Record<string, unknown>> {
	const row = (await readPostRow(trx, postId)) as { pseo_id: number; route: string; stale: unknown } | null;
	const current = row ? await currentFacts(trx, Number(row.pseo_id), row.route) : undefined;
	// A post whose plan page is gone has nothing newer to be written from.
	if (current === undefined || sameFacts(current, content.facts)) return { stale: false, stale_since: null };
	// Already stale: since when it is stays as it is (the update goes through the items service, which takes dates as ISO text).
	if (row!.stale === true || Number(row!.stale) === 1) return { stale: true };
	return { stale: true, stale_since: new Date().toISOString() };
}
