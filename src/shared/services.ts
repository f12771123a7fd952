import type { Knex } from 'knex';
import type { Logger } from './logger.ts';

/** The part of the extension context (endpoint or hook) the domain modules use. */
export interface ServiceContext {
	// The services module of the host Directus; typed loosely because @directus/types does not describe it.
	// eslint-disable-next-line @typescript-eslint/no-explicit-any
	services: any;
	database: Knex;
	logger: Logger;
	getSchema: (options?: { database?: Knex }) => Promise<import('@directus/types').SchemaOverview>;
	env: Record<string, unknown>;
}
