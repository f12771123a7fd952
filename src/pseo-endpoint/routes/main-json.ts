import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { providerFor } from '../../provider/create-provider.ts';
import { asyncHandler } from '../../http/async-handler.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { createPlan } from '../../plan/create-plan.ts';
import { parsePlanRequest } from '../../plan/plan-request.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { siteRoutesReader } from '../../sitemap/site-routes.ts';

/** 4.8 POST /generate/main-json — generate a website's content plan. */
export function registerMainJson(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	const siteRoutes = siteRoutesReader(config.sitemap, context.logger);
	router.post(
		'/generate/main-json',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const request = parsePlanRequest(req.body);
			const data = await createPlan(
				{ database: context.database, logger: context.logger, config, provider: providerFor(config, context.logger), siteRoutes },
				accountability.user,
				request,
			);
			respond(res, 200, { message: `Content plan of ${data.total_pages} pages generated.`, data });
		}),
	);
}
