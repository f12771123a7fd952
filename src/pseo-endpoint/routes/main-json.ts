import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { generateContentPlanRoute } from '../../contracts/plans.ts';
import { providerFor } from '../../provider/create-provider.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { createPlan } from '../../plan/create-plan.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { siteRoutesReader } from '../../sitemap/site-routes.ts';

/** 4.8 POST /generate/main-json — generate a website's content plan. */
export function registerMainJson(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	const siteRoutes = siteRoutesReader(config.sitemap, context.logger);
	mountRoute(router, generateContentPlanRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { body } = parseRequest(generateContentPlanRoute, req);
		const data = await createPlan(
			{ database: context.database, logger: context.logger, config, provider: providerFor(config, context.logger), siteRoutes },
			accountability.user,
			body,
		);
		respond(res, 200, { message: `Content plan of ${data.total_pages} pages generated.`, data });
	});
}
