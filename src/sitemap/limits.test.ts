import { describe, expect, it } from 'vitest';
import { DEFAULT_SITEMAP_OPTIONS, assertSitemapOptions } from './limits.ts';

describe('DEFAULT_SITEMAP_OPTIONS', () => {
	it('holds the issue 5 defaults', () => {
		expect(DEFAULT_SITEMAP_OPTIONS).toMatchObject({
			maxUrlsPerDocument: 50_000,
			maxRedirects: 5,
			allowPrivateNetworks: false,
		});
		expect(DEFAULT_SITEMAP_OPTIONS.maxDepth).toBeGreaterThanOrEqual(3);
		expect(DEFAULT_SITEMAP_OPTIONS.maxDepth).toBeLessThanOrEqual(5);
		expect(DEFAULT_SITEMAP_OPTIONS.userAgent).toContain('pseo-automation');
		expect(() => assertSitemapOptions({ ...DEFAULT_SITEMAP_OPTIONS })).not.toThrow();
	});
});

describe('assertSitemapOptions', () => {
	it.each([
		['concurrency', 0],
		['maxRedirects', 6],
		['maxBytes', Number.NaN],
		['allowPrivateNetworks', 'false'],
		['userAgent', ''],
		['signal', 'soon'],
	])('rejects %s = %j with a TypeError naming the field', (field, value) => {
		expect(() => assertSitemapOptions({ ...DEFAULT_SITEMAP_OPTIONS, [field]: value })).toThrow(new RegExp(`options\\.${field}`));
	});
});
