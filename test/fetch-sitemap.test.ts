import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from './support/sitemap-fixture-server.ts';
import { call, createUser, createWebsite, expectEnvelope, type TestUser } from './support/api.ts';
import { shareDirectus, type DirectusInstance } from './support/directus.ts';
import { ENGINE_ENV, LEGS, legAvailable } from './support/legs.ts';

/** A WordPress-style site: a Yoast index with an XSL stylesheet, a posts child, and a gzip pages child. */
async function wordpressSite(): Promise<FixtureServer> {
	const urlset = (paths: string[]) =>
		`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths
			.map((p) => `<url><loc>{{origin}}${p}</loc></url>`)
			.join('')}</urlset>`;
	return startFixtureServer({
		'/sitemap.xml': { status: 404, body: 'not here' },
		'/sitemap_index.xml': {
			headers: { 'content-type': 'application/xml' },
			body: `<?xml version="1.0" encoding="UTF-8"?><?xml-stylesheet type="text/xsl" href="//example.com/main-sitemap.xsl"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>{{origin}}/post-sitemap.xml</loc></sitemap>
  <sitemap><loc>{{origin}}/page-sitemap.xml.gz</loc></sitemap>
</sitemapindex>`,
		},
		'/post-sitemap.xml': { headers: { 'content-type': 'application/xml' }, body: urlset(['/blog/first', '/blog/second', '/blog/first']) },
		'/page-sitemap.xml.gz': { headers: { 'content-type': 'application/xml' }, body: urlset(['/about', '/contact']), gzip: true },
	});
}

describe.each(LEGS)('4.9 fetch-sitemap on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let site: FixtureServer;
		let open: DirectusInstance;
		let user: TestUser;

		beforeAll(async () => {
			site = await wordpressSite();
			// The engine suites' instance: it allows private networks, as this suite's fixture site on loopback needs.
			open = await shareDirectus(leg, ENGINE_ENV);
			user = await createUser(open);
		});
		afterAll(async () => {
			await open?.dispose();
			await site?.close();
		});

		it('4.9 returns every page URL of a WordPress-style index (one child gzip) once, in order', async () => {
			const { id } = await createWebsite(open, user, { website_url: site.origin });
			const res = await call(open, 'GET', `/pseo-endpoints/fetch-sitemap?pseo_id=${id}`, { token: user.token });
			expect(res.status).toBe(200);
			expect(res.body.success).toBe(true);
			expect(res.body.urls).toEqual([
				`${site.origin}/blog/first`,
				`${site.origin}/blog/second`,
				`${site.origin}/about`,
				`${site.origin}/contact`,
			]);
			expect(site.hits.slice(0, 2)).toEqual(['/sitemap.xml', '/sitemap_index.xml']);
			expect(site.userAgents.every((agent) => /pseo-automation/.test(agent))).toBe(true);
		});

		it('4.9 an unreachable website is 200 with no URLs', async () => {
			const { id } = await createWebsite(open, user, { website_url: 'http://127.0.0.1:9' });
			const res = await call(open, 'GET', `/pseo-endpoints/fetch-sitemap?pseo_id=${id}`, { token: user.token });
			expect(res.status).toBe(200);
			expect(res.body.urls).toEqual([]);
		});

		it('4.9 checks auth, ownership and the pseo_id parameter', async () => {
			const { id } = await createWebsite(open, user, { website_url: site.origin });
			const stranger = await createUser(open);
			expectEnvelope(await call(open, 'GET', `/pseo-endpoints/fetch-sitemap?pseo_id=${id}`), 401);
			expectEnvelope(await call(open, 'GET', `/pseo-endpoints/fetch-sitemap?pseo_id=${id}`, { token: stranger.token }), 403);
			expectEnvelope(await call(open, 'GET', '/pseo-endpoints/fetch-sitemap?pseo_id=99999999', { token: user.token }), 404);
			for (const query of ['', '?pseo_id=', '?pseo_id=abc', '?pseo_id=1.5', '?pseo_id=0']) {
				expectEnvelope(await call(open, 'GET', `/pseo-endpoints/fetch-sitemap${query}`, { token: user.token }), 400);
			}
		});

		it('4 with private networks disallowed (the default) the same request returns [] and the site sees no request', async () => {
			const guarded = await shareDirectus(leg);
			try {
				const owner = await createUser(guarded);
				const { id } = await createWebsite(guarded, owner, { website_url: site.origin });
				const before = site.connections;
				const res = await call(guarded, 'GET', `/pseo-endpoints/fetch-sitemap?pseo_id=${id}`, { token: owner.token });
				expect(res.status).toBe(200);
				expect(res.body.urls).toEqual([]);
				expect(site.connections).toBe(before);
			} finally {
				await guarded.dispose();
			}
		});
	});
});
