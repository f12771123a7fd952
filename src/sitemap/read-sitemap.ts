import { CrawlContext, crawlDocument, flattenTree } from './crawl.ts';
import type { UrlTree } from './crawl.ts';
import { createGuardedFetcher } from './guarded-fetch.ts';
import type { FetchFailureKind } from './guarded-fetch.ts';
import { createLimiter } from './limiter.ts';
import { assertSitemapOptions } from './limits.ts';
import type { Logger, SitemapOptions } from './limits.ts';
import { isSitemapKind } from './read-document.ts';
import { readRobotsSitemaps } from './robots.ts';
import { visitKey } from './urls.ts';

export interface SitemapResult {
	/** Distinct page URLs, in document order (index children in index order), at most `maxUrls`. */
	urls: string[];
	/** The candidate URL (or the robots.txt URL) whose sitemap gave the URLs; null when none did. */
	source: string | null;
	/** What went wrong along the way, for diagnostics; everything here was also logged. */
	reasons: string[];
}

/** Paths tried in order, relative to the website's origin (interface 4.9). */
const CANDIDATE_PATHS: readonly string[] = ['/sitemap.xml', '/sitemap_index.xml', '/wp-sitemap.xml', '/sitemap'];

/**
 * Reads the page URLs of a website's sitemap. Tries `CANDIDATE_PATHS` in order, then the `Sitemap:` lines of
 * `/robots.txt`; the first that yields a sitemap with at least one page URL wins. Sitemap indexes are followed
 * to `maxDepth`. Never throws for network or content problems: whatever goes wrong, the URLs that could be read
 * (possibly none) come back and the reason is logged. Throws a TypeError only for bad options or logger.
 */
export async function readSitemap(websiteUrl: string, options: SitemapOptions, logger: Logger): Promise<SitemapResult> {
	assertSitemapOptions(options);
	assertLogger(logger);
	let origin: URL;
	try {
		origin = new URL(websiteUrl);
		if (origin.protocol !== 'http:' && origin.protocol !== 'https:') throw new Error('not http(s)');
	} catch {
		const reason = `website URL ${JSON.stringify(websiteUrl)} is not an http(s) URL`;
		logger.warn({ websiteUrl }, `sitemap: ${reason}`);
		return { urls: [], source: null, reasons: [reason] };
	}

	const budget = AbortSignal.timeout(options.totalTimeoutMs);
	const signals = options.signal ? [budget, options.signal] : [budget];
	const fetcher = createGuardedFetcher(options);
	const ctx = new CrawlContext(options, logger, fetcher, createLimiter(options.concurrency), signals);
	try {
		const found = await discover(ctx, origin);
		if (budget.aborted) ctx.note('warn', null, `total budget of ${options.totalTimeoutMs} ms spent; returning what was read`);
		else if (options.signal?.aborted) ctx.note('debug', null, 'aborted by the caller; returning what was read');
		if (found.urls.length === 0) ctx.note('debug', origin.origin, 'no sitemap URLs found');
		else logger.debug({ websiteUrl, source: found.source, count: found.urls.length }, 'sitemap: read');
		return { urls: found.urls, source: found.source, reasons: ctx.allReasons() };
	} finally {
		fetcher.close();
	}
}

/** Failures that say the host itself cannot be read, whatever the path. */
const HOST_FAILURES: ReadonlySet<FetchFailureKind> = new Set(['blocked', 'network', 'timeout']);

async function discover(ctx: CrawlContext, origin: URL): Promise<{ urls: string[]; source: string | null }> {
	let firstSitemap: string | null = null;
	for (const path of CANDIDATE_PATHS) {
		if (ctx.stopped) break;
		const url = new URL(path, origin).href;
		const key = visitKey(url);
		// Already read as a redirect target of an earlier candidate.
		if (ctx.seen.has(key)) continue;
		ctx.seen.add(key);
		const outcome = await crawlDocument(ctx, url, 0);
		if (outcome.failure && HOST_FAILURES.has(outcome.failure.kind) && new URL(outcome.failure.url).host === origin.host) {
			// The other paths live on the same host and would fail the same way, each costing a deadline.
			ctx.note('debug', origin.origin, 'website unreachable or refused; other paths not tried');
			return { urls: [], source: firstSitemap };
		}
		if (!isSitemapKind(outcome.kind)) continue;
		firstSitemap ??= url;
		const urls = flattenTree(outcome.tree);
		if (urls.length > 0) return { urls, source: url };
		ctx.note('debug', url, 'sitemap lists no page URLs; trying the next path');
	}
	if (ctx.stopped) return { urls: [], source: firstSitemap };

	const robotsUrl = new URL('/robots.txt', origin).href;
	const announced = await readRobotsSitemaps(ctx, robotsUrl);
	const roots: Promise<{ sitemap: boolean; tree: UrlTree }>[] = [];
	for (const url of announced) {
		const key = visitKey(url);
		if (ctx.seen.has(key)) continue;
		ctx.seen.add(key);
		roots.push(crawlDocument(ctx, url, 0).then((outcome) => ({ sitemap: isSitemapKind(outcome.kind), tree: outcome.tree })));
	}
	const outcomes = await Promise.all(roots);
	const urls = flattenTree({ children: outcomes.map((outcome) => outcome.tree) });
	if (urls.length > 0) return { urls, source: robotsUrl };
	return { urls: [], source: firstSitemap ?? (outcomes.some((outcome) => outcome.sitemap) ? robotsUrl : null) };
}

function assertLogger(logger: Logger): void {
	for (const level of ['debug', 'info', 'warn', 'error'] as const) {
		if (typeof logger?.[level] !== 'function') {
			throw new TypeError(`logger must have a ${level} function, received ${String(logger)}`);
		}
	}
}
