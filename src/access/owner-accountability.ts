import type { Accountability, SchemaOverview } from '@directus/types';
import type { Knex } from 'knex';
import type { ServiceContext } from '../shared/services.ts';

/*
 * The accountability of a user for work no request of theirs stands behind: a followed collection's sync reads the
 * collection as the website's owner, whoever changed the item. Built as Directus builds it for a static token
 * (`getAccountabilityForToken`): the user's role and its parents (the roles tree), and the admin and app access of
 * the policies attached to those roles or to the user. Directus does not hand this helper to extensions, so the same
 * three reads are made here. A policy limited to some IP addresses is left out of the admin and app access: there is
 * no request, hence no address it could allow.
 */

/** Why a user cannot be acted for: they are gone or not active. */
export class OwnerUnavailableError extends Error {
	override name = 'OwnerUnavailableError';
}

/** The accountability of active user `userId`; OwnerUnavailableError when they do not exist or are not active. */
export async function ownerAccountability(context: Pick<ServiceContext, 'services' | 'database'>, schema: SchemaOverview, userId: string): Promise<Accountability> {
	const knex = context.database;
	const users = new context.services.UsersService({ knex, schema, accountability: null });
	const [user] = (await users.readByQuery({ filter: { id: { _eq: userId } }, fields: ['id', 'role', 'status'], limit: 1 })) as { id: string; role: string | null; status: string }[];
	if (!user) throw new OwnerUnavailableError(`The website's owner (user ${userId}) no longer exists.`);
	if (user.status !== 'active') throw new OwnerUnavailableError(`The website's owner (user ${userId}) is ${user.status}, not active.`);
	const roles = await rolesTree(knex, user.role);
	const access = (await knex('directus_access')
		.leftJoin('directus_policies', 'directus_policies.id', 'directus_access.policy')
		.where((query) => {
			query.where('directus_access.user', userId);
			if (roles.length > 0) query.orWhereIn('directus_access.role', roles);
		})
		.select('directus_policies.admin_access', 'directus_policies.app_access', 'directus_policies.ip_access')) as { admin_access: unknown; app_access: unknown; ip_access: unknown }[];
	// A policy limited to some addresses gives nothing here: no request, so no address it could allow.
	const open = access.filter((row) => row.ip_access === null || row.ip_access === undefined || row.ip_access === '' || (Array.isArray(row.ip_access) && row.ip_access.length === 0));
	const admin = open.some((row) => truthy(row.admin_access));
	const app = admin || open.some((row) => truthy(row.app_access));
	return { user: userId, role: user.role, roles, admin, app, ip: null } as Accountability;
}

/** The role and its parents, the root first, as Directus orders them. */
async function rolesTree(knex: Knex, start: string | null): Promise<string[]> {
	const roles: string[] = [];
	for (let current = start; current; ) {
		if (roles.includes(current)) break;
		const role = (await knex('directus_roles').where('id', current).first('id', 'parent')) as { id: string; parent: string | null } | undefined;
		if (!role) break;
		roles.push(role.id);
		current = role.parent;
	}
	return roles.reverse();
}

/** A boolean column as SQLite and MySQL give it back (1/0) or PostgreSQL (true/false). */
function truthy(value: unknown): boolean {
	return value === true || value === 1 || value === '1' || value === 'true';
}
