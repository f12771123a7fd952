import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { importContentPlanRoute } from '../../contracts/plans.ts';
import { mountIdempotentRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { importPlan, type ImportResult } from '../../plan/import-plan.ts';
import { collectionReader } from '../../plan/collection-rows.ts';
import { followingsChanged } from '../../following/source-follower.ts';
import { libraryFileOpener } from '../../plan/library-file.ts';
import { queueTakedown } from '../../publishing/takedown.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { siteRoutesReader } from '../../sitemap/site-routes.ts';
import { requestSchema } from '../request-schema.ts';

/** POST /plan/import — plan pages from data (appended, replacing the plan, or synced with their source): a template crossed with rows, a CSV, JSON or JSON Lines file, or a Directus collection. */
export function registerPlanImport(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	const deps = {
		database: context.database,
		logger: context.logger,
		config,
		siteRoutes: siteRoutesReader(config.sitemap, context.logger),
		openFile: libraryFileOpener(context),
		// A sync's retired pages come down at the website's publishing target: queued in the sync's transaction.
		onRetired: queueTakedown,
	};
	mountIdempotentRoute(router, importContentPlanRoute, { database: context.database, lockMs: config.leaseMs }, (req, accountability) => {
		const { body } = parseRequest(importContentPlanRoute, req);
		// A collection is read with the request's own accountability: what the caller may not read is not read.
		const schema = () => requestSchema(req, context);
		const collections = { reader: collectionReader(context, accountability, context.database), schema };
		return {
			run: async () => {
				const result = await importPlan({ ...deps, collections }, accountability.user, body);
				// This instance reads the followings at once; the others at their next look.
				if (body.follow !== null) followingsChanged();
				return result;
			},
			answer: (data: ImportResult) => {
				const skipped = data.skipped.duplicate + data.skipped.on_site + data.skipped.invalid + data.skipped.missing_data;
				const synced = body.mode === 'sync' ? `, ${data.updated} updated, ${data.unchanged} unchanged, ${data.retired} retired` : '';
				return { status: 200, payload: { message: `${data.added} plan page(s) added${synced}, ${skipped} row(s) skipped; the plan has ${data.total_pages} pages.`, data } };
			},
		};
	});
}
