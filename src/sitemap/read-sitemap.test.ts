import type { LookupFunction } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, gzipBomb, startFixtureServer } from '../../test/support/sitemap-fixture-server.ts';
import type { FixtureHandler, FixtureRoute, FixtureServer } from '../../test/support/sitemap-fixture-server.ts';
import { DEFAULT_SITEMAP_OPTIONS } from './limits.ts';
import type { Logger, SitemapOptions } from './limits.ts';
import { readSitemap } from './read-sitemap.ts';

const servers: FixtureServer[] = [];
afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(routes: Record<string, FixtureRoute | FixtureHandler>): Promise<FixtureServer> {
	const server = await startFixtureServer(routes);
	servers.push(server);
	return server;
}

interface LogLine {
	level: string;
	msg: string | undefined;
	obj: object;
}

function recordingLogger(): Logger & { lines: LogLine[] } {
	const lines: LogLine[] = [];
	const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, msg, obj });
	return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function options(overrides: Partial<SitemapOptions> = {}): SitemapOptions {
	return { ...DEFAULT_SITEMAP_OPTIONS, allowPrivateNetworks: true, ...overrides };
}

async function read(site: FixtureServer | string, overrides: Partial<SitemapOptions> = {}) {
	const logger = recordingLogger();
	const result = await readSitemap(typeof site === 'string' ? site : site.origin, options(overrides), logger);
	return { ...result, logger };
}

function file(name: string, extra: Partial<FixtureRoute> = {}): FixtureRoute {
	return { body: fixture(name), ...extra };
}

function urlset(origin: string, paths: string[]): string {
	return `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths.map((path) => `<url><loc>${origin}${path}</loc></url>`).join('')}</urlset>`;
}

function index(paths: string[]): string {
	return `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths.map((path) => `<sitemap><loc>{{origin}}${path}</loc></sitemap>`).join('')}</sitemapindex>`;
}

function pages(...paths: string[]): FixtureRoute {
	return { body: urlset('{{origin}}', paths) };
}

const wordpressSite: Record<string, FixtureRoute> = {
	'/sitemap.xml': { status: 301, headers: { location: '/sitemap_index.xml' } },
	'/sitemap_index.xml': file('yoast-index.xml'),
	'/post-sitemap.xml': file('yoast-post-sitemap.xml'),
	'/page-sitemap.xml.gz': file('yoast-page-sitemap.xml', { gzip: true }),
};

describe('readSitemap on a WordPress-style site (issue 5, what it must show)', () => {
	it('returns every page URL once, in order, through a redirect, an index and a gzip child', async () => {
		const site = await serve(wordpressSite);
		const result = await read(site);
		expect(result.urls).toEqual([site.url('/hello-world/'), site.url('/second-post/'), site.url('/'), site.url('/about/')]);
		expect(result.source).toBe(site.url('/sitemap.xml'));
		expect(site.hits).toEqual(['/sitemap.xml', '/sitemap_index.xml', '/post-sitemap.xml', '/page-sitemap.xml.gz']);
	});

	it('returns [] with private networks disallowed, and the site sees no connection', async () => {
		const site = await serve(wordpressSite);
		const result = await read(site, { allowPrivateNetworks: false });
		expect(result.urls).toEqual([]);
		expect(result.source).toBeNull();
		expect(site.connections).toBe(0);
		expect(result.logger.lines.some((line) => line.level === 'warn' && /loopback/.test(JSON.stringify(line)))).toBe(true);
	});
});

describe('readSitemap discovery (interface 4.9)', () => {
	it('tries /sitemap.xml, /sitemap_index.xml, /wp-sitemap.xml in order and stops at the first sitemap', async () => {
		const site = await serve({
			'/sitemap.xml': { status: 404 },
			'/sitemap_index.xml': { body: fixture('soft-404.html'), headers: { 'content-type': 'text/html' } },
			'/wp-sitemap.xml': file('wp-sitemap.xml'),
			'/wp-sitemap-posts-post-1.xml': file('wp-sitemap-posts-post-1.xml'),
			'/wp-sitemap-taxonomies-category-1.xml': file('wp-sitemap-taxonomies-category-1.xml'),
			'/wp-sitemap-users-1.xml': file('wp-sitemap-users-1.xml'),
			'/sitemap': pages('/never'),
		});
		const result = await read(site);
		expect(result.source).toBe(site.url('/wp-sitemap.xml'));
		expect(result.urls).toEqual([site.url('/2024/01/first/'), site.url('/2024/02/second/'), site.url('/category/news/'), site.url('/author/admin/')]);
		expect(site.hits.slice(0, 3)).toEqual(['/sitemap.xml', '/sitemap_index.xml', '/wp-sitemap.xml']);
		expect(site.hits).not.toContain('/sitemap');
		expect(site.hits).not.toContain('/robots.txt');
	});

	it('reaches /sitemap last, after 403 and 429 answers count as not found', async () => {
		const site = await serve({
			'/sitemap.xml': { status: 403 },
			'/sitemap_index.xml': { status: 429 },
			'/wp-sitemap.xml': { body: fixture('html-page.html'), headers: { 'content-type': 'text/html' } },
			'/sitemap': { body: fixture('plain.txt'), headers: { 'content-type': 'text/plain' } },
		});
		const result = await read(site);
		expect(result.source).toBe(site.url('/sitemap'));
		expect(result.urls).toEqual([site.url('/t1'), site.url('/t2'), site.url('/t3'), site.url('/t4')]);
		expect(site.hits).toEqual(['/sitemap.xml', '/sitemap_index.xml', '/wp-sitemap.xml', '/sitemap']);
		expect(result.logger.lines.filter((line) => line.level === 'warn')).toEqual([]);
	});

	it('moves on from a sitemap that lists no pages', async () => {
		const site = await serve({
			'/sitemap.xml': file('empty-index.xml'),
			'/sitemap_index.xml': pages('/found'),
		});
		const result = await read(site);
		expect(result).toMatchObject({ urls: [site.url('/found')], source: site.url('/sitemap_index.xml') });
	});

	it('falls back to the Sitemap: lines of robots.txt, relative or not, in file order', async () => {
		const site = await serve({
			'/robots.txt': {
				headers: { 'content-type': 'text/plain' },
				body: 'User-agent: *\nDisallow: /admin\n\nSitemap: /custom/map.xml\nsitemap:{{origin}}/news-map.xml\r\nSITEMAP: ftp://example.com/x.xml\nSitemap: /custom/map.xml\n',
			},
			'/custom/map.xml': pages('/c1', '/c2'),
			'/news-map.xml': pages('/n1', '/c1'),
		});
		const result = await read(site);
		expect(result.source).toBe(site.url('/robots.txt'));
		expect(result.urls).toEqual([site.url('/c1'), site.url('/c2'), site.url('/n1')]);
		expect(site.hits.slice(0, 5)).toEqual(['/sitemap.xml', '/sitemap_index.xml', '/wp-sitemap.xml', '/sitemap', '/robots.txt']);
		expect(site.hits.filter((hit) => hit === '/custom/map.xml')).toHaveLength(1);
	});

	it('reads at most maxChildren Sitemap: lines of robots.txt', async () => {
		const site = await serve({
			'/robots.txt': { body: 'Sitemap: /a.xml\nSitemap: /b.xml\nSitemap: /c.xml\n' },
			'/a.xml': pages('/a'),
			'/b.xml': pages('/b'),
			'/c.xml': pages('/c'),
		});
		const result = await read(site, { maxChildren: 2 });
		expect(result.urls).toEqual([site.url('/a'), site.url('/b')]);
		expect(site.hits).not.toContain('/c.xml');
	});

	it('ignores a robots.txt that is an HTML page', async () => {
		const site = await serve({ '/robots.txt': { body: '<html><body>Sitemap: /x.xml</body></html>' }, '/x.xml': pages('/x') });
		const result = await read(site);
		expect(result.urls).toEqual([]);
		expect(site.hits).not.toContain('/x.xml');
	});

	it('returns [] without throwing when nothing is found, logging the reasons', async () => {
		const site = await serve({ '/sitemap': { body: fixture('garbage.bin') } });
		const result = await read(site);
		expect(result).toMatchObject({ urls: [], source: null });
		expect(result.reasons.length).toBeGreaterThan(0);
		expect(result.logger.lines.length).toBeGreaterThan(0);
	});

	it('returns [] quickly for an unreachable host, without trying every path', async () => {
		const site = await serve({});
		const origin = site.origin;
		await site.close();
		servers.length = 0;
		const started = performance.now();
		const result = await read(origin);
		expect(result.urls).toEqual([]);
		expect(result.reasons.some((reason) => /ECONNREFUSED/.test(reason))).toBe(true);
		expect(result.reasons.filter((reason) => /not read/.test(reason))).toHaveLength(1);
		expect(performance.now() - started).toBeLessThan(2000);
	});

	it('returns [] for a website URL that is not http(s)', async () => {
		expect((await read('ftp://example.com/')).urls).toEqual([]);
		expect((await read('not a url')).reasons[0]).toMatch(/not an http\(s\) URL/);
	});

	it('throws a TypeError for bad options or a bad logger', async () => {
		await expect(readSitemap('http://127.0.0.1/', { ...DEFAULT_SITEMAP_OPTIONS, concurrency: 0 }, recordingLogger())).rejects.toThrow(TypeError);
		await expect(readSitemap('http://127.0.0.1/', { ...DEFAULT_SITEMAP_OPTIONS }, {} as Logger)).rejects.toThrow(/logger/);
	});
});

describe('readSitemap shapes served over HTTP', () => {
	it('reads a Shopify index whose child URL has a query string', async () => {
		const site = await serve({
			'/sitemap.xml': file('shopify-index.xml'),
			'/sitemap_products_1.xml?from=1&to=999': file('shopify-products.xml'),
			'/sitemap_pages_1.xml': file('shopify-pages.xml'),
		});
		const result = await read(site);
		expect(result.urls).toEqual([site.url('/products/blue-shirt'), site.url('/pages/contact')]);
		expect(site.hits).toContain('/sitemap_products_1.xml?from=1&to=999');
	});

	it('reads a Wix index and its feature children', async () => {
		const site = await serve({
			'/sitemap.xml': file('wix-index.xml'),
			'/pages-sitemap.xml': file('wix-pages.xml'),
			'/store-products-sitemap.xml': file('wix-store-products.xml'),
		});
		expect((await read(site)).urls).toEqual([site.url('/'), site.url('/services'), site.url('/product-page/mug')]);
	});

	it('reads gzip by magic bytes: a .xml that is gzip, a .xml.gz that is plain, and gzip inside Content-Encoding gzip', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/a.xml', '/b.xml.gz', '/c.xml.gz']) },
			'/a.xml': { ...pages('/a'), gzip: true },
			'/b.xml.gz': { ...pages('/b'), headers: { 'content-type': 'application/gzip' } },
			'/c.xml.gz': (_req, res, origin) => {
				res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/x-gzip' });
				res.end(gzipSync(gzipSync(urlset(origin, ['/c']))));
			},
		});
		expect((await read(site)).urls).toEqual([site.url('/a'), site.url('/b'), site.url('/c')]);
	});

	it('removes duplicates across documents, keeping first-seen order', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/one.xml', '/two.xml']) },
			'/one.xml': file('duplicates.xml'),
			'/two.xml': pages('/e', '/f', '/d'),
		});
		expect((await read(site)).urls).toEqual([site.url('/d'), site.url('/e'), site.url('/f')]);
	});
});

describe('readSitemap indexes and broken input', () => {
	it('follows nested indexes and keeps healthy siblings of a failing grandchild', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/b.xml', '/c.xml']) },
			'/b.xml': { body: index(['/d.xml', '/e.xml']) },
			'/c.xml': pages('/c'),
			'/d.xml': pages('/d'),
			'/e.xml': { status: 404 },
		});
		expect((await read(site)).urls).toEqual([site.url('/d'), site.url('/c')]);
	});

	it('reads each document of a cycle once, through self-reference and redirects', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/sitemap.xml', '/a.xml', '/loop.xml', '/a.xml#again']) },
			'/a.xml': pages('/a'),
			'/loop.xml': { status: 302, headers: { location: '/sitemap.xml' } },
		});
		const result = await read(site);
		expect(result.urls).toEqual([site.url('/a')]);
		expect(site.hits.filter((hit) => hit === '/sitemap.xml')).toHaveLength(1);
		expect(site.hits.filter((hit) => hit === '/a.xml')).toHaveLength(1);
		expect(site.hits.length).toBe(3);
	});

	it('skips a <sitemap> without <loc> instead of re-reading the root', async () => {
		const site = await serve({ '/sitemap.xml': file('index-missing-loc.xml'), '/good.xml': pages('/good') });
		const result = await read(site);
		expect(result.urls).toEqual([site.url('/good')]);
		expect(site.hits).toEqual(['/sitemap.xml', '/good.xml']);
	});

	it('keeps complete entries of a truncated child and every healthy sibling', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/trunc.xml', '/html.xml', '/garbage.xml', '/fine.xml', '/boom.xml']) },
			'/trunc.xml': file('truncated.xml'),
			'/html.xml': file('soft-404.html'),
			'/garbage.xml': file('garbage.bin'),
			'/fine.xml': pages('/fine'),
			'/boom.xml': (req) => req.socket.destroy(),
		});
		const result = await read(site);
		expect(result.urls).toEqual([site.url('/t1'), site.url('/t2'), site.url('/fine')]);
		expect(result.reasons.some((reason) => reason.includes('/boom.xml'))).toBe(true);
	});

	it('refuses a billion-laughs sitemap at once and moves to the next path', async () => {
		const site = await serve({ '/sitemap.xml': file('billion-laughs.xml'), '/sitemap_index.xml': pages('/safe') });
		const started = performance.now();
		const result = await read(site);
		expect(result.urls).toEqual([site.url('/safe')]);
		expect(result.reasons.some((reason) => /DOCTYPE/.test(reason))).toBe(true);
		expect(performance.now() - started).toBeLessThan(2000);
	});

	it('drops the entries of a child refused for an <!ENTITY after its entries', async () => {
		const site = await serve({ '/sitemap.xml': { body: index(['/x.xml', '/ok.xml']) }, '/x.xml': file('external-entity.xml'), '/ok.xml': pages('/ok') });
		expect((await read(site)).urls).toEqual([site.url('/ok')]);
	});

	it('drops the entries of a child that turns into an HTML page after them', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/x.xml', '/ok.xml']) },
			'/x.xml': { body: `${urlset('{{origin}}', ['/early'])}<!DOCTYPE html><html></html>` },
			'/ok.xml': pages('/ok'),
		});
		expect((await read(site)).urls).toEqual([site.url('/ok')]);
	});

	it('stops a 200 MiB gzip bomb at maxBytes with bounded time and memory', async () => {
		const bomb = await gzipBomb(200, '/bombed');
		const site = await serve({
			'/sitemap.xml': { body: index(['/bomb.xml.gz', '/after.xml']) },
			'/bomb.xml.gz': (_req, res) => {
				res.writeHead(200, { 'content-type': 'application/octet-stream' });
				res.end(bomb);
			},
			'/after.xml': pages('/after'),
		});
		const baseline = process.memoryUsage().rss;
		let peak = baseline;
		const sampler = setInterval(() => {
			peak = Math.max(peak, process.memoryUsage().rss);
		}, 5);
		const started = performance.now();
		const result = await read(site, { maxBytes: 16 * 1024 * 1024 });
		clearInterval(sampler);
		expect(result.urls).toEqual([site.url('/bombed'), site.url('/after')]);
		expect(result.reasons.some((reason) => /exceeds 16777216 bytes/.test(reason))).toBe(true);
		expect(performance.now() - started).toBeLessThan(5000);
		expect(peak - baseline).toBeLessThan(96 * 1024 * 1024);
	});
});

describe('readSitemap limits (issue 5, section 3)', () => {
	it('keeps at most maxUrlsPerDocument entries of one document', async () => {
		const site = await serve({ '/sitemap.xml': pages('/1', '/2', '/3', '/4', '/5') });
		const result = await read(site, { maxUrlsPerDocument: 3 });
		expect(result.urls).toEqual([site.url('/1'), site.url('/2'), site.url('/3')]);
		expect(result.reasons.some((reason) => /more than 3 entries/.test(reason))).toBe(true);
	});

	it('stops at maxUrls distinct URLs over all documents', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/a.xml', '/b.xml', '/c.xml']) },
			'/a.xml': pages('/1', '/2', '/3'),
			'/b.xml': pages('/3', '/4', '/5'),
			'/c.xml': pages('/6'),
		});
		const result = await read(site, { maxUrls: 4, concurrency: 1 });
		expect(result.urls).toEqual([site.url('/1'), site.url('/2'), site.url('/3'), site.url('/4')]);
		expect(site.hits).not.toContain('/c.xml');
	});

	it('fetches at most maxChildren child sitemaps over all levels', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/i.xml', '/b.xml', '/c.xml']) },
			'/i.xml': { body: index(['/a.xml', '/z.xml']) },
			'/a.xml': pages('/a'),
			'/b.xml': pages('/b'),
			'/c.xml': pages('/c'),
			'/z.xml': pages('/z'),
		});
		const result = await read(site, { maxChildren: 3, concurrency: 1 });
		expect(site.hits.filter((hit) => hit !== '/sitemap.xml')).toHaveLength(3);
		expect(result.urls).toEqual([site.url('/b'), site.url('/c')]);
	});

	it('follows indexes to maxDepth and no deeper', async () => {
		const routes: Record<string, FixtureRoute> = {
			'/sitemap.xml': { body: index(['/deep1.xml']) },
			'/deep1.xml': { body: index(['/deep2.xml']) },
			'/deep2.xml': { body: index(['/deep3.xml']) },
			'/deep3.xml': { body: index(['/leaf.xml']) },
			'/leaf.xml': pages('/leaf'),
		};
		const deep = await serve(routes);
		expect((await read(deep, { maxDepth: 4 })).urls).toEqual([deep.url('/leaf')]);
		const shallow = await serve(routes);
		const result = await read(shallow, { maxDepth: 2 });
		expect(result.urls).toEqual([]);
		expect(shallow.hits).not.toContain('/deep3.xml');
		expect(result.reasons.some((reason) => /deeper than 2 levels/.test(reason))).toBe(true);
	});

	it('keeps at most `concurrency` fetches in flight across every index level', async () => {
		let inFlight = 0;
		let peak = 0;
		const slow =
			(body: (origin: string) => string): FixtureHandler =>
			(_req, res, origin) => {
				inFlight++;
				peak = Math.max(peak, inFlight);
				setTimeout(() => {
					inFlight--;
					res.writeHead(200, { 'content-type': 'application/xml' }).end(body(origin));
				}, 20);
			};
		const routes: Record<string, FixtureHandler> = {
			'/sitemap.xml': slow(() => index(['/i1.xml', '/i2.xml', '/i3.xml']).replaceAll('{{origin}}', '')),
		};
		for (const i of [1, 2, 3]) {
			routes[`/i${i}.xml`] = slow(() => index([1, 2, 3, 4].map((j) => `/l${i}-${j}.xml`)).replaceAll('{{origin}}', ''));
			for (const j of [1, 2, 3, 4]) routes[`/l${i}-${j}.xml`] = slow((origin) => urlset(origin, [`/p${i}-${j}`]));
		}
		const site = await serve(routes);
		const result = await read(site, { concurrency: 2 });
		expect(result.urls).toHaveLength(12);
		expect(result.urls[0]).toBe(site.url('/p1-1'));
		expect(result.urls[11]).toBe(site.url('/p3-4'));
		expect(peak).toBe(2);
	});

	it('keeps partial results when a child misses the per-request deadline', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/slow.xml', '/fast.xml']) },
			'/slow.xml': () => {},
			'/fast.xml': pages('/fast'),
		});
		const started = performance.now();
		const result = await read(site, { requestTimeoutMs: 200 });
		expect(result.urls).toEqual([site.url('/fast')]);
		expect(result.reasons.some((reason) => reason.includes('/slow.xml') && /deadline/.test(reason))).toBe(true);
		expect(performance.now() - started).toBeLessThan(2000);
	});

	it('returns what was read when the total budget runs out', async () => {
		const site = await serve({
			'/sitemap.xml': { body: index(['/fast.xml', '/slow.xml']) },
			'/fast.xml': pages('/fast'),
			'/slow.xml': () => {},
		});
		const started = performance.now();
		const result = await read(site, { totalTimeoutMs: 300, requestTimeoutMs: 10_000 });
		expect(result.urls).toEqual([site.url('/fast')]);
		expect(result.reasons.some((reason) => /total budget of 300 ms/.test(reason))).toBe(true);
		expect(performance.now() - started).toBeLessThan(2000);
	});

	it('honours a caller AbortSignal as a shorter budget', async () => {
		const site = await serve({ '/sitemap.xml': () => {} });
		const started = performance.now();
		const result = await read(site, { signal: AbortSignal.timeout(100) });
		expect(result.urls).toEqual([]);
		expect(performance.now() - started).toBeLessThan(2000);
		expect(site.hits).toEqual(['/sitemap.xml']);
	});

	it('gives up on a chain of more than maxRedirects redirects', async () => {
		const routes: Record<string, FixtureRoute> = { '/sitemap_index.xml': pages('/ok') };
		for (let hop = 0; hop < 3; hop++) routes[hop === 0 ? '/sitemap.xml' : `/r${hop}`] = { status: 301, headers: { location: `/r${hop + 1}` } };
		routes['/r3'] = pages('/too-far');
		const site = await serve(routes);
		const result = await read(site, { maxRedirects: 2 });
		expect(result.urls).toEqual([site.url('/ok')]);
		expect(site.hits).not.toContain('/r3');
	});
});

describe('readSitemap SSRF matrix, private networks disallowed (issue 5, section 4)', () => {
	const lookupTo =
		(address: string): LookupFunction =>
		(_hostname, lookupOptions, callback) => {
			if (lookupOptions.all) callback(null, [{ address, family: 4 }]);
			else callback(null, address, 4);
		};

	it('refuses a website whose host name resolves to 127.0.0.1', async () => {
		const target = await serve(wordpressSite);
		const result = await read(`http://rebound.test:${new URL(target.origin).port}/`, { allowPrivateNetworks: false, lookup: lookupTo('127.0.0.1') });
		expect(result.urls).toEqual([]);
		expect(target.connections).toBe(0);
	});

	it('refuses loopback children, redirects and robots.txt lines reached from an allowed site', async () => {
		const target = await serve(wordpressSite);
		const port = new URL(target.origin).port;
		const front = await serve({
			'/sitemap.xml': { body: `${index(['/ok.xml']).replace('</sitemapindex>', '')}<sitemap><loc>http://127.0.0.1:${port}/sitemap_index.xml</loc></sitemap><sitemap><loc>http://inside.test:${port}/post-sitemap.xml</loc></sitemap></sitemapindex>` },
			'/ok.xml': { status: 302, headers: { location: `http://127.0.0.1:${port}/post-sitemap.xml` } },
			'/sitemap_index.xml': { status: 302, headers: { location: `http://inside.test:${port}/sitemap_index.xml` } },
			'/robots.txt': { body: `Sitemap: http://127.0.0.1:${port}/sitemap_index.xml\nSitemap: http://[::ffff:127.0.0.1]:${port}/post-sitemap.xml\n` },
		});
		// The front site's name is exempt, standing in for a public site; every other hop must be checked.
		const result = await read(`http://public-site.test:${new URL(front.origin).port}/`, {
			allowPrivateNetworks: false,
			allowedHosts: ['public-site.test'],
			lookup: lookupTo('127.0.0.1'),
		});
		expect(result.urls).toEqual([]);
		expect(front.hits).toContain('/sitemap.xml');
		expect(front.hits).toContain('/robots.txt');
		expect(target.connections).toBe(0);
		expect(result.reasons.filter((reason) => /refused/.test(reason)).length).toBeGreaterThanOrEqual(5);
	});
});

