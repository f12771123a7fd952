import { randomBytes } from 'node:crypto';
import { call, type TestUser } from './api.ts';
import type { DirectusInstance } from './directus.ts';

/*
 * A data collection of the customer's own, as an admin makes one through Directus's API, and a user allowed to read it:
 * the source of imports from a collection.
 */

/** Creates a collection through Directus's API as the admin: an `id` (auto-increment, or a UUID Directus generates) and the given fields. */
export async function createCollection(
	directus: DirectusInstance,
	collection: string,
	fields: Record<string, string>[],
	key: 'integer' | 'uuid' = 'integer',
	/** Directus's activity and revisions of the collection's writes: `null` keeps none (a bulk of items is written faster). */
	accountability: 'all' | null = 'all',
): Promise<void> {
	const id =
		key === 'uuid'
			? { field: 'id', type: 'uuid', meta: { hidden: true, readonly: true, special: ['uuid'] }, schema: { is_primary_key: true } }
			: { field: 'id', type: 'integer', meta: { hidden: true, readonly: true }, schema: { is_primary_key: true, has_auto_increment: true } };
	const res = await call(directus, 'POST', '/collections', {
		token: directus.adminToken,
		body: {
			collection,
			meta: { icon: 'box', accountability },
			schema: {},
			fields: [
				id,
				...fields.map(({ field, type }) => ({ field, type, meta: {}, schema: {} })),
			],
		},
	});
	if (res.status !== 200) throw new Error(`collection ${collection}: ${res.status} ${JSON.stringify(res.body)}`);
}

/**
 * A policy that reads whole collections, given to `user`. (Item filters and field lists in a permission are custom
 * rules, which Directus's Core licence refuses: what narrows a reader's items is Directus's to enforce.)
 */
export function grantRead(directus: DirectusInstance, user: TestUser, reads: { collection: string; fields: string[] }[]): Promise<string> {
	return grant(directus, user, reads.map((read) => ({ ...read, action: 'read' as const })));
}

/** A policy with these permissions on whole collections, given to `user`; the id of the access row that gives it. */
export async function grant(
	directus: DirectusInstance,
	user: TestUser,
	permissions: { collection: string; action: 'create' | 'read' | 'update' | 'delete'; fields?: string[] }[],
): Promise<string> {
	const policy = await call(directus, 'POST', '/policies', {
		token: directus.adminToken,
		body: {
			name: `grant ${randomBytes(3).toString('hex')}`,
			icon: 'visibility',
			app_access: false,
			admin_access: false,
			permissions: permissions.map((permission) => ({ fields: ['*'], ...permission, permissions: {}, validation: {} })),
		},
	});
	if (policy.status !== 200) throw new Error(`policy: ${policy.status} ${JSON.stringify(policy.body)}`);
	const linked = await call(directus, 'POST', '/access', { token: directus.adminToken, body: { user: user.id, policy: policy.body.data.id } });
	if (linked.status !== 200) throw new Error(`access: ${linked.status} ${JSON.stringify(linked.body)}`);
	return linked.body.data.id as string;
}
