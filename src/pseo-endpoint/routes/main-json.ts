import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { generateContentPlanRoute } from '../../contracts/plans.ts';
import { providerSourceFor } from '../../provider/create-provider.ts';
import { mountIdempotentRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { createPlan, type CreatedPlan } from '../../plan/create-plan.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { siteRoutesReader } from '../../sitemap/site-routes.ts';

/** 4.8 POST /generate/main-json — generate a website's content plan. */
export function registerMainJson(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	const siteRoutes = siteRoutesReader(config.sitemap, context.logger);
	// A plan takes minutes: its key is held for as long as a plan may lock its user (PSEO_PLAN_LOCK_MS).
	mountIdempotentRoute(router, generateContentPlanRoute, { database: context.database, lockMs: config.planLockMs }, (req, { user: userId }) => {
		const { body } = parseRequest(generateContentPlanRoute, req);
		return {
			run: async () =>
				createPlan({ database: context.database, logger: context.logger, config, providers: providerSourceFor(config, context.logger, context), siteRoutes }, userId, body),
			answer: (data: CreatedPlan) => ({ status: 200, payload: { message: `Content plan of ${data.total_pages} pages generated.`, data } }),
		};
	});
}
