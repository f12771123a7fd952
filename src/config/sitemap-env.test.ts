import { describe, expect, it } from 'vitest';
import { DEFAULT_SITEMAP_OPTIONS } from '../sitemap/limits.ts';
import { sitemapOptionsFromEnv } from './sitemap-env.ts';

describe('sitemapOptionsFromEnv', () => {
	it('returns the defaults for an empty env', () => {
		expect(sitemapOptionsFromEnv({})).toEqual({ ...DEFAULT_SITEMAP_OPTIONS });
	});

	it('reads every override from strings or numbers, as Directus casts them', () => {
		const options = sitemapOptionsFromEnv({
			PSEO_SITEMAP_REQUEST_TIMEOUT_MS: '2500',
			PSEO_SITEMAP_TOTAL_TIMEOUT_MS: 9000,
			PSEO_SITEMAP_MAX_BYTES: '1048576',
			PSEO_SITEMAP_MAX_URLS: 10,
			PSEO_SITEMAP_MAX_URLS_PER_DOCUMENT: '7',
			PSEO_SITEMAP_MAX_CHILDREN: '0',
			PSEO_SITEMAP_MAX_DEPTH: 3,
			PSEO_SITEMAP_CONCURRENCY: '2',
			PSEO_SITEMAP_MAX_REDIRECTS: '1',
			PSEO_SITEMAP_USER_AGENT: 'pseo-automation test',
		});
		expect(options).toMatchObject({
			requestTimeoutMs: 2500,
			totalTimeoutMs: 9000,
			maxBytes: 1_048_576,
			maxUrls: 10,
			maxUrlsPerDocument: 7,
			maxChildren: 0,
			maxDepth: 3,
			concurrency: 2,
			maxRedirects: 1,
			userAgent: 'pseo-automation test',
		});
	});

	it.each([
		[true, true],
		['true', true],
		[1, true],
		['1', true],
		[false, false],
		['false', false],
		[0, false],
		['0', false],
	])('reads PSEO_ALLOW_PRIVATE_NETWORKS=%j as %j', (value, expected) => {
		expect(sitemapOptionsFromEnv({ PSEO_ALLOW_PRIVATE_NETWORKS: value }).allowPrivateNetworks).toBe(expected);
	});

	it.each([
		['PSEO_SITEMAP_MAX_URLS', 'lots'],
		['PSEO_SITEMAP_MAX_URLS', '1.5'],
		['PSEO_SITEMAP_CONCURRENCY', 0],
		['PSEO_SITEMAP_REQUEST_TIMEOUT_MS', -1],
		['PSEO_SITEMAP_MAX_DEPTH', 11],
		['PSEO_SITEMAP_MAX_REDIRECTS', 6],
		['PSEO_SITEMAP_MAX_BYTES', true],
		['PSEO_ALLOW_PRIVATE_NETWORKS', 'yes'],
		['PSEO_ALLOW_PRIVATE_NETWORKS', 2],
	])('throws a TypeError naming %s and the value %j', (name, value) => {
		expect(() => sitemapOptionsFromEnv({ [name]: value })).toThrow(TypeError);
		expect(() => sitemapOptionsFromEnv({ [name]: value })).toThrow(new RegExp(`${name}.*${JSON.stringify(value).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
	});
});
