import type { Router } from 'express';
import { useConfig } from '../../config/config.ts';
import { fetchSitemapRoute } from '../../contracts/sitemap.ts';
import { mountRoute } from '../../http/mount-route.ts';
import { parseRequest } from '../../http/parse-request.ts';
import { requireUser } from '../../http/request-input.ts';
import { readSitemap } from '../../sitemap/read-sitemap.ts';
import type { ServiceContext } from '../../shared/services.ts';
import { requireOwnedPseo } from '../../websites/ownership.ts';

/**
 * 4.9 GET /fetch-sitemap?pseo_id=X — the page URLs of the website's sitemap. Whatever goes wrong on the website's
 * side, the answer is 200 with the URLs that could be read (possibly none); the reason is logged.
 */
export function registerSitemap(router: Router, context: ServiceContext): void {
	const config = useConfig(context.env);
	mountRoute(router, fetchSitemapRoute, async (req, res) => {
		const accountability = requireUser(req);
		const { pseo_id: pseoId } = parseRequest(fetchSitemapRoute, req).query;
		const pseo = await requireOwnedPseo(context.database, pseoId, accountability.user);
		const result = await readSitemap(pseo.website_url, config.sitemap, context.logger);
		res.status(200).json({ success: true, urls: result.urls, timestamp: new Date().toISOString() });
	});
}
