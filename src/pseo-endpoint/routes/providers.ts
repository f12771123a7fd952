import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { providersRoute } from '../../contracts/providers.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { providerSourceFor } from '../../provider/create-provider.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { batchQueues } from '../../engine/batch-capacity.ts';
import type { ProviderKind } from '../../shared/provider-kinds.ts';

/**
 * GET /providers — what a website may name as its provider and model, for the app's pickers and API clients, and
 * each provider's batch queue: its limit and what is in use.
 */
export function registerProviders(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	mountRoute(router, providersRoute, async (req, res) => {
		requireUser(req);
		const catalog = await providerSourceFor(config, context.logger, context).catalog();
		// What each provider's batch queue holds is the cluster's, read from the database: no key or job is in it.
		const queues = await batchQueues(context.database, config.batchMaxEnqueuedTokens, catalog.providers.map((entry) => entry.provider));
		const rateLimit = (kind: ProviderKind) => ({ requests_per_minute: config.pacing.requestsPerMinute[kind] ?? null, tokens_per_minute: config.pacing.tokensPerMinute[kind] ?? null });
		const providers = catalog.providers.map((entry) => ({ ...entry, batch_queue: queues.get(entry.provider)!, rate_limit: rateLimit(entry.provider) }));
		respond(res, 200, { data: { ...catalog, providers } });
	});
}
