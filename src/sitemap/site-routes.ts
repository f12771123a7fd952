import type { PseoConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import { readSitemap } from './read-sitemap.ts';

/**
 * The content plan's view of a website: the page URLs its sitemap lists, read within a short budget so a slow
 * or huge site never holds up a plan for long. Best effort: whatever could not be read is simply not avoided.
 */
export function siteRoutesReader(config: PseoConfig, logger: Logger) {
	return async (websiteUrl: string, budgetMs: number): Promise<string[]> => {
		if (budgetMs <= 0) return [];
		const result = await readSitemap(
			websiteUrl,
			{ ...config.sitemap, totalTimeoutMs: Math.min(config.sitemap.totalTimeoutMs, budgetMs), signal: AbortSignal.timeout(budgetMs) },
			logger,
		);
		return result.urls;
	};
}
