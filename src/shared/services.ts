import type { Knex } from 'knex';
import type { Logger } from './logger.ts';

/** Directus's services module and schema reader, as the extension context hands them over. */
export interface DirectusServices {
	// The services module of the host Directus; typed loosely because @directus/types does not describe it.
	// eslint-disable-next-line @typescript-eslint/no-explicit-any
	services: any;
	getSchema: (options?: { database?: Knex }) => Promise<import('@directus/types').SchemaOverview>;
}

/** The part of the extension context (endpoint or hook) the domain modules use. */
export interface ServiceContext extends DirectusServices {
	database: Knex;
	logger: Logger;
	env: Record<string, unknown>;
}
