import { z } from 'zod';
import { doc } from './contract-registry.ts';
import { success } from './envelope.ts';
import { idParam } from './field-rules.ts';
import { defineRoute } from './route-contract.ts';

/** 4.9 GET /fetch-sitemap?pseo_id=X. */
export const fetchSitemapRoute = defineRoute({
	method: 'get',
	path: '/fetch-sitemap',
	operationId: 'fetchSitemap',
	tag: 'Sitemap',
	summary: 'Read the website\'s sitemap (4.9)',
	description: 'Tries /sitemap.xml, /sitemap_index.xml, /wp-sitemap.xml and /sitemap (and robots.txt), following index files.',
	query: z.object({ pseo_id: idParam('The website.') }),
	examples: { website: { summary: 'The sitemap of website 1', query: { pseo_id: '1' } } },
	responses: {
		200: {
			description: 'The page URLs; empty when there is no sitemap or the site is unreachable.',
			schema: success(
				'SitemapResponse',
				{ urls: doc(z.array(z.string()), { description: 'Every page URL found, once each, in document order.' }) },
				'Interface 4.9. A missing sitemap or an unreachable website is not an error: `urls` is then empty.',
			),
		},
	},
	errors: [400, 401, 403, [404, 'The website does not exist.']],
});
