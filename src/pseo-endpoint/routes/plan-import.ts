import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { importContentPlanRoute } from '../../contracts/plans.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { requireUser } from '../../http/request-input.ts';
import { respond } from '../../http/respond.ts';
import { importPlan } from '../../plan/import-plan.ts';
import { libraryFileOpener } from '../../plan/library-file.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { siteRoutesReader } from '../../sitemap/site-routes.ts';

/** POST /plan/import — plan pages from data: a template crossed with rows or a CSV, JSON or JSON Lines file. */
export function registerPlanImport(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	const deps = {
		database: context.database,
		logger: context.logger,
		config,
		siteRoutes: siteRoutesReader(config.sitemap, context.logger),
		openFile: libraryFileOpener(context),
	};
	mountRoute(router, importContentPlanRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { body } = parseRequest(importContentPlanRoute, req);
		const data = await importPlan(deps, accountability.user, body);
		const skipped = data.skipped.duplicate + data.skipped.on_site + data.skipped.invalid;
		respond(res, 200, { message: `${data.added} plan page(s) added, ${skipped} row(s) skipped; the plan has ${data.total_pages} pages.`, data });
	});
}
