import { DEFAULT_SITEMAP_OPTIONS, INTEGER_LIMITS, type IntegerLimitKey, type SitemapOptions } from '../sitemap/limits.ts';

/** The environment variable of each integer limit of the sitemap reader. */
const ENV_NAMES: Readonly<Record<IntegerLimitKey, string>> = {
	requestTimeoutMs: 'PSEO_SITEMAP_REQUEST_TIMEOUT_MS',
	totalTimeoutMs: 'PSEO_SITEMAP_TOTAL_TIMEOUT_MS',
	maxBytes: 'PSEO_SITEMAP_MAX_BYTES',
	maxUrlsPerDocument: 'PSEO_SITEMAP_MAX_URLS_PER_DOCUMENT',
	maxUrls: 'PSEO_SITEMAP_MAX_URLS',
	maxChildren: 'PSEO_SITEMAP_MAX_CHILDREN',
	maxDepth: 'PSEO_SITEMAP_MAX_DEPTH',
	concurrency: 'PSEO_SITEMAP_CONCURRENCY',
	maxRedirects: 'PSEO_SITEMAP_MAX_REDIRECTS',
};

/**
 * Reads `PSEO_SITEMAP_*` overrides and `PSEO_ALLOW_PRIVATE_NETWORKS` from a Directus-style env, whose values
 * may be strings, numbers or booleans. A bad value throws a TypeError naming the variable and the value.
 */
export function sitemapOptionsFromEnv(env: Record<string, unknown>): SitemapOptions {
	const options: SitemapOptions = { ...DEFAULT_SITEMAP_OPTIONS };
	for (const limit of INTEGER_LIMITS) {
		const name = ENV_NAMES[limit.key];
		const value = present(env[name]);
		if (value === undefined) continue;
		const parsed = typeof value === 'number' ? value : typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : NaN;
		if (!Number.isSafeInteger(parsed) || parsed < limit.min || parsed > limit.max) {
			throw new TypeError(`${name} must be an integer from ${limit.min} to ${limit.max}, received ${JSON.stringify(value)}`);
		}
		options[limit.key] = parsed;
	}
	const allow = present(env['PSEO_ALLOW_PRIVATE_NETWORKS']);
	if (allow !== undefined) {
		if (allow === true || allow === 'true' || allow === 1 || allow === '1') options.allowPrivateNetworks = true;
		else if (allow === false || allow === 'false' || allow === 0 || allow === '0') options.allowPrivateNetworks = false;
		else throw new TypeError(`PSEO_ALLOW_PRIVATE_NETWORKS must be true, false, 1 or 0, received ${JSON.stringify(allow)}`);
	}
	const userAgent = present(env['PSEO_SITEMAP_USER_AGENT']);
	if (userAgent !== undefined) {
		if (typeof userAgent !== 'string' || userAgent.trim() === '' || /[\r\n]/.test(userAgent)) {
			throw new TypeError(`PSEO_SITEMAP_USER_AGENT must be a non-empty single-line string, received ${JSON.stringify(userAgent)}`);
		}
		options.userAgent = userAgent;
	}
	return options;
}

function present(value: unknown): unknown {
	return value === '' || value === null ? undefined : value;
}
