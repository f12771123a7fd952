import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { asyncHandler } from '../../http/async-handler.ts';
import { parseIdParam, requireUser } from '../../http/request-input.ts';
import { readSitemap } from '../../sitemap/read-sitemap.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { requireOwnedPseo } from '../../websites/ownership.ts';

/**
 * 4.9 GET /fetch-sitemap?pseo_id=X — the page URLs of the website's sitemap. Whatever goes wrong on the website's
 * side, the answer is 200 with the URLs that could be read (possibly none); the reason is logged.
 */
export function registerSitemap(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	router.get(
		'/fetch-sitemap',
		asyncHandler(async (req, res) => {
			const accountability = requireUser(req);
			const pseoId = parseIdParam(req.query['pseo_id'], 'pseo_id');
			const pseo = await requireOwnedPseo(context.database, pseoId, accountability.user);
			const result = await readSitemap(pseo.website_url, config.sitemap, context.logger);
			res.status(200).json({ success: true, urls: result.urls, timestamp: new Date().toISOString() });
		}),
	);
}
