import type { SchemaOverview } from '@directus/types';
import type { Knex } from 'knex';

/**
 * Options for Directus services that act as the system rather than as a user. `accountability: null` means full
 * access and no activity trail, so it is used only here, for work no request stands behind: installing the
 * schema and the "pSEO user" policy at start-up. Everything a request does builds its services from the
 * request's own accountability instead.
 */
export function systemServiceOptions(schema: SchemaOverview, knex: Knex) {
	return { schema, knex, accountability: null };
}
