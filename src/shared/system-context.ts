import type { Accountability, SchemaOverview } from '@directus/types';
import type { Knex } from 'knex';

/**
 * Options for Directus services that act as the system rather than as a user: the one door for work no request
 * stands behind (installing the schema, the "pSEO user" policy and the list presets at start-up). Everything a
 * request does builds its services from the request's own accountability instead.
 *
 * `accountability: null` means full access and no activity trail, which is what start-up provisioning wants.
 * Directus's SchemaService is the exception: it refuses a null accountability (it checks `admin === true`), so
 * `{ admin: true }` asks for an admin accountability with no user behind it, and nothing else.
 */
export function systemServiceOptions(knex: Knex, schema?: SchemaOverview, options: { admin?: boolean } = {}) {
	const accountability: Accountability | null = options.admin
		? ({ admin: true, role: null, user: null, roles: [], app: false, ip: null } as unknown as Accountability)
		: null;
	return { knex, accountability, ...(schema ? { schema } : {}) };
}
