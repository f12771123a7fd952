import type { Knex } from 'knex';
import type { DirectusServices } from '../shared/services.ts';
import { POSTS, readPostRow, rewrittenFields, type PageContent } from './post-store.ts';

/** Rewrites a post with a regenerated page, inside the caller's transaction, keeping the previous version. */
export type PostReviser = (trx: Knex.Transaction, post: { postId: number; userId: string; generationId: number }, content: PageContent) => Promise<void>;

/**
 * A regeneration replaces a post's content, and the previous version stays as a Directus revision of that post,
 * so an editor can compare and revert it in the app. The update goes through Directus's items service, as the
 * post's owner with full access (the engine acts for them), so Directus records the activity and the revision of
 * the new version itself. A post the engine stored directly has no revision yet: its current version is recorded
 * first, as the revision of its creation.
 */
export function createPostReviser(directus: DirectusServices): PostReviser {
	return async (trx, post, content) => {
		const schema = await directus.getSchema({ database: trx });
		const { ItemsService, ActivityService, RevisionsService } = directus.services;
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
		await new ItemsService(POSTS, { knex: trx, schema, accountability: owner }).updateOne(post.postId, rewrittenFields(content, post.generationId));
	};
}
