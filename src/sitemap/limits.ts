import type { LookupFunction } from 'node:net';
export type { Logger } from '../shared/logger.ts';

/** Limits and switches of the sitemap reader. Every field documents its default. */
export interface SitemapOptions {
	/** Deadline of one document fetch, redirects and body included. Default 15000 ms. */
	requestTimeoutMs: number;
	/** Wall-clock budget of one `readSitemap` call. Default 60000 ms. */
	totalTimeoutMs: number;
	/** Bytes per document, counted after decompression. Default 50 MiB (the protocol's limit). */
	maxBytes: number;
	/** Entries kept from one document. Default 50000 (the protocol's limit). */
	maxUrlsPerDocument: number;
	/** Distinct page URLs kept in total. Default 200000. */
	maxUrls: number;
	/** Child sitemaps fetched in total, over every index level. Default 1000. */
	maxChildren: number;
	/** Index levels followed below the root document (root = 0). Default 4. */
	maxDepth: number;
	/** Documents fetched at once, one pool for the whole call. Default 8. */
	concurrency: number;
	/** Redirects followed per document. Default 5, and never more than 5. */
	maxRedirects: number;
	/** When false, no request reaches a loopback, private, link-local or similar address. Default false. */
	allowPrivateNetworks: boolean;
	/** The User-Agent header. Default names pseo-automation. */
	userAgent: string;
	/** Lets a caller impose a shorter budget; aborting returns what was read so far. */
	signal?: AbortSignal;
	/** Resolver used at connect time, `dns.lookup` when absent; its answers are checked like any other. */
	lookup?: LookupFunction;
	/** Host names exempt from the private-network rule (never from the cloud-metadata rule). Default none. */
	allowedHosts?: readonly string[];
}

/** Hard ceiling of `maxRedirects`: the reader never follows more than this. */
const MAX_REDIRECTS_CEILING = 5;

export const DEFAULT_SITEMAP_OPTIONS: Readonly<SitemapOptions> = Object.freeze({
	requestTimeoutMs: 15_000,
	totalTimeoutMs: 60_000,
	maxBytes: 50 * 1024 * 1024,
	maxUrlsPerDocument: 50_000,
	maxUrls: 200_000,
	maxChildren: 1_000,
	maxDepth: 4,
	concurrency: 8,
	maxRedirects: MAX_REDIRECTS_CEILING,
	allowPrivateNetworks: false,
	userAgent: 'pseo-automation/0.1 (sitemap reader)',
});

/** The integer limits of {@link SitemapOptions} and their allowed ranges, for the reader's own checks and config. */
export const INTEGER_LIMITS = [
	{ key: 'requestTimeoutMs', min: 1, max: 3_600_000 },
	{ key: 'totalTimeoutMs', min: 1, max: 3_600_000 },
	{ key: 'maxBytes', min: 1, max: 1024 * 1024 * 1024 },
	{ key: 'maxUrlsPerDocument', min: 1, max: 10_000_000 },
	{ key: 'maxUrls', min: 1, max: 100_000_000 },
	{ key: 'maxChildren', min: 0, max: 1_000_000 },
	{ key: 'maxDepth', min: 0, max: 10 },
	{ key: 'concurrency', min: 1, max: 256 },
	{ key: 'maxRedirects', min: 0, max: MAX_REDIRECTS_CEILING },
] as const satisfies readonly { key: keyof SitemapOptions; min: number; max: number }[];

export type IntegerLimitKey = (typeof INTEGER_LIMITS)[number]['key'];

/** Throws a TypeError naming the first field of `options` that is missing or out of range. */
export function assertSitemapOptions(options: SitemapOptions): void {
	if (typeof options !== 'object' || options === null) {
		throw new TypeError(`sitemap options must be an object, received ${JSON.stringify(options)}`);
	}
	for (const limit of INTEGER_LIMITS) {
		const value = options[limit.key];
		if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < limit.min || value > limit.max) {
			throw new TypeError(`options.${limit.key} must be an integer from ${limit.min} to ${limit.max}, received ${JSON.stringify(value)}`);
		}
	}
	if (typeof options.allowPrivateNetworks !== 'boolean') {
		throw new TypeError(`options.allowPrivateNetworks must be a boolean, received ${JSON.stringify(options.allowPrivateNetworks)}`);
	}
	if (typeof options.userAgent !== 'string' || options.userAgent.trim() === '' || /[\r\n]/.test(options.userAgent)) {
		throw new TypeError(`options.userAgent must be a non-empty single-line string, received ${JSON.stringify(options.userAgent)}`);
	}
	if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
		throw new TypeError(`options.signal must be an AbortSignal, received ${String(options.signal)}`);
	}
	if (options.lookup !== undefined && typeof options.lookup !== 'function') {
		throw new TypeError(`options.lookup must be a function, received ${String(options.lookup)}`);
	}
	if (options.allowedHosts !== undefined && (!Array.isArray(options.allowedHosts) || options.allowedHosts.some((host) => typeof host !== 'string'))) {
		throw new TypeError(`options.allowedHosts must be an array of host names, received ${JSON.stringify(options.allowedHosts)}`);
	}
}
