import { defineEndpoint } from '@directus/extensions-sdk';
import { errorHandler } from '../http/error-envelope.ts';
import { NotFoundError } from '../errors/index.ts';
import type { ServiceContext } from '../shared/services.ts';
import { registerHealth } from './routes/health.ts';
import { registerWebsites } from './routes/websites.ts';
import { registerGenerations } from './routes/generations.ts';
import { registerPosts } from './routes/posts.ts';
import { registerTriggers } from './routes/triggers.ts';
import { registerMainJson } from './routes/main-json.ts';
import { registerPlanImport } from './routes/plan-import.ts';
import { registerSitemap } from './routes/sitemap.ts';
import { registerBalance } from './routes/balance.ts';
import { registerProviders } from './routes/providers.ts';
import { registerOpenApi } from './routes/openapi.ts';
import { registerMetrics } from './routes/metrics.ts';
import { registerPublishing } from './routes/publishing.ts';
import { kickRuntime } from '../engine/runtime-registry.ts';

/** The REST interface under /pseo-endpoints. Handlers parse, call one domain function, and shape the answer. */
export default defineEndpoint({
	id: 'pseo-endpoints',
	handler: (router, context) => {
		const ctx = context as unknown as ServiceContext;
		registerHealth(router, ctx);
		registerWebsites(router, ctx);
		registerTriggers(router, ctx, kickRuntime);
		registerGenerations(router, ctx, kickRuntime);
		registerPosts(router, ctx, kickRuntime);
		registerMainJson(router, ctx);
		registerPlanImport(router, ctx);
		registerSitemap(router, ctx);
		registerBalance(router, ctx);
		registerProviders(router, ctx);
		registerPublishing(router, ctx);
		registerOpenApi(router);
		registerMetrics(router, ctx);
		router.use((req, _res, next) => next(new NotFoundError({ resource: 'Route', id: `${req.method} ${req.path}` })));
		router.use(errorHandler(ctx.logger));
	},
});
