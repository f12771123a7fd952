import type { Logger } from '../shared/logger.ts';
import type { SitemapOptions } from './limits.ts';
import { readSitemap } from './read-sitemap.ts';

/**
 * The content plan's view of a website: the page URLs its sitemap lists, read within a short budget so a slow
 * or huge site never holds up a plan for long. Best effort: whatever could not be read is simply not avoided.
 */
export function siteRoutesReader(sitemap: SitemapOptions, logger: Logger) {
	return async (websiteUrl: string, budgetMs: number): Promise<string[]> => {
		if (budgetMs <= 0) return [];
		const result = await readSitemap(
			websiteUrl,
			{ ...sitemap, totalTimeoutMs: Math.min(sitemap.totalTimeoutMs, budgetMs), signal: AbortSignal.timeout(budgetMs) },
			logger,
		);
		return result.urls;
	};
}
