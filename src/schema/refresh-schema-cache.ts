import type { ServiceContext } from '../shared/services.ts';
import { systemServiceOptions } from '../shared/system-context.ts';

/**
 * Clears Directus's schema and system caches on this instance, and, through Directus's messenger (Redis on a
 * multi-instance deployment), on every other. Start-up calls it once the extension's schema is in place: replicas
 * starting side by side on a new database each read Directus's schema before another replica created the
 * extension's collections, and one that had nothing left to create itself would otherwise keep serving that
 * stale schema (a 500 on every pSEO collection) until it restarted.
 */
export async function refreshSchemaCache(ctx: ServiceContext): Promise<void> {
	const utils = new ctx.services.UtilsService(systemServiceOptions(ctx.database, await ctx.getSchema(), { admin: true }));
	await utils.clearCache({ system: true });
}
