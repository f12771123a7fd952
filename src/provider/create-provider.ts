import type { Knex } from 'knex';
import type { PseoConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { DirectusServices } from '../shared/services.ts';
import { readAiSettings } from './ai-settings.ts';
import { createProviderSource, type ProviderSource } from './provider-source.ts';
import { createPacing } from './pacing/pacing.ts';

const sources = new WeakMap<PseoConfig, ProviderSource>();

/**
 * One provider source per configuration, shared by the job runtime (the hook) and the routes (the endpoint): the
 * environment's provider, or Settings → AI read through `context`'s services; its calls paced through Directus's
 * Redis, or `context`'s database.
 */
export function providerSourceFor(config: PseoConfig, logger: Logger, context: DirectusServices & { database: Knex }): ProviderSource {
	let source = sources.get(config);
	if (!source) {
		source = createProviderSource(config, logger, () => readAiSettings(context), createPacing({ config, database: context.database, logger }));
		sources.set(config, source);
	}
	return source;
}
