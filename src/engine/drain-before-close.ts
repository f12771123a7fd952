import type { Knex } from 'knex';
import type { Logger } from '../shared/logger.ts';

/**
 * Runs `drain` before Directus destroys its database pool on SIGTERM. Directus's shutdown closes the HTTP server
 * and then destroys the pool before it emits `server.stop`, which is too late to hand jobs back. The pool's
 * `destroy` (on the Knex client; the Knex function's own property is read-only) is the one point that runs
 * after requests stopped and before the connections are gone.
 */
export function drainBeforeClose(database: Knex, drain: () => Promise<void>, logger: Logger): void {
	const client = database.client as { destroy: (callback?: unknown) => Promise<void> };
	const destroy = client.destroy.bind(client);
	let draining: Promise<void> | null = null;
	client.destroy = async (callback?: unknown) => {
		// Shutdown goes on whatever happens: jobs not handed back are resumed when their leases lapse.
		draining ??= drain().catch((error: unknown) => logger.error({ err: error }, 'pseo-automation: drain at shutdown failed'));
		await draining;
		return destroy(callback);
	};
}
