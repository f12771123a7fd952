import type { Knex } from 'knex';
import type { PseoConfig } from '../../config/config.ts';
import type { Logger } from '../../shared/logger.ts';
import type { ProviderKind } from '../../shared/provider-kinds.ts';
import { defaultSleep } from '../backoff.ts';
import { createDatabasePacingStore } from './database-pacing-store.ts';
import { pacerKey } from './pacer-key.ts';
import { createPacer, type Pacer } from './pacer.ts';
import type { PacingStore } from './pacing-store.ts';
import { createRedisPacingStore } from './redis-pacing-store.ts';

/** The pacers of one instance, one per provider key and model, all taking their slots from one shared store. */
export interface Pacing {
	/** The pacer of a key and model; the same one for every client of them, so that what it learnt outlives a client. */
	pacerFor(kind: ProviderKind, baseURL: string | undefined, model: string, apiKey: string): Pacer;
}

/** Pacers kept; past this many distinct keys and models they are dropped and made again on need. */
const MAX_PACERS = 256;

/**
 * The instance's pacing: shared through Directus's Redis when it has one (as Directus's own rate limiter is), else
 * through the database (database-pacing-store.ts).
 */
export function createPacing(options: { config: PseoConfig; database: Knex; logger: Logger }): Pacing {
	const { config, database, logger } = options;
	let store: PacingStore | null = null;
	// Made on first use: a CLI command that loads the extension never connects to Redis.
	const sharedStore = (): PacingStore => (store ??= config.redis !== null ? createRedisPacingStore(config.redis, logger) : createDatabasePacingStore(database));
	const pacers = new Map<string, Pacer>();
	return {
		pacerFor(kind, baseURL, model, apiKey) {
			const key = pacerKey(kind, baseURL, model, apiKey);
			let pacer = pacers.get(key);
			if (!pacer) {
				if (pacers.size >= MAX_PACERS) pacers.clear();
				pacer = createPacer({
					key,
					provider: kind,
					configured: { requestsPerMinute: config.pacing.requestsPerMinute[kind] ?? null, tokensPerMinute: config.pacing.tokensPerMinute[kind] ?? null },
					store: sharedStore(),
					logger,
					sleep: defaultSleep,
				});
				pacers.set(key, pacer);
			}
			return pacer;
		},
	};
}
