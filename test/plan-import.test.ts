import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminItems, balanceOf, call, createUser, createWebsite, expectEnvelope, grantFileLibrary, uploadFile, type TestUser } from './support/api.ts';
import { useSharedDirectus } from './support/directus.ts';
import { startFixtureServer, type FixtureServer } from './support/sitemap-fixture-server.ts';
import { ACCOUNTING_ENV, describeLegs, ENGINE_INTERFACE_LEGS, IMPORTED_PAGE_RATE } from './support/legs.ts';

/*
 * POST /plan/import: plan pages from data, from inline rows and from a CSV file of the file library, with every
 * skip reason counted, the plan lock, the charge, and files that are not the caller's.
 */

const IMPORT = '/pseo-endpoints/plan/import';
/** Tokens per imported page, on the instance this suite shares with the daily cap's test. */
const RATE = IMPORTED_PAGE_RATE;
const template = { route: '/{service}/{city}', title: '{service} in {city}', primary_keyword: '{service} {city}', priority: '{rank}', cluster: '{service}' };

describeLegs('plan import on %s', ENGINE_INTERFACE_LEGS, (leg) => {
	const { directus } = useSharedDirectus(leg, ACCOUNTING_ENV);
	let site: FixtureServer;

	beforeAll(async () => {
		// Every website of this file is this loopback site, whose sitemap lists one page: /roofing/york-on-site.
		site = await startFixtureServer({
			'/sitemap.xml': {
				headers: { 'content-type': 'application/xml' },
				body: '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{{origin}}/roofing/york-on-site/</loc></url></urlset>',
			},
		});
	});
	afterAll(async () => {
		await site?.close();
	});

	const rowsOf = (pseoId: number) => adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&sort=id`);

	const website = (user: TestUser) => createWebsite(directus, user, { website_url: site.origin }).then((created) => created.id);

	it('imports rows: pages written from the template, every skip reason counted, charged per added page', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		const rows = [
			{ service: 'Plumbing', city: 'Leeds', rank: 9 },
			{ service: 'Plumbing', city: 'Málaga', rank: 8 },
			{ service: 'Roofing', city: 'Leeds', rank: '7' },
			{ service: 'Plumbing', city: 'Leeds', rank: 1 }, // repeated in the data
			{ service: 'Roofing', rank: 5 }, // no city
			{ service: 'Roofing', city: 'York', rank: 'soon' }, // no number
		];
		const res = await call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', template, rows } });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ success: true, data: { total_pages: 3, added: 3, skipped: { duplicate: 1, on_site: 0, invalid: 2, missing_data: 0 } } });
		expect(res.body.message).toMatch(/3 plan page\(s\) added, 3 row\(s\) skipped/);
		const stored = await rowsOf(pseoId);
		expect(stored.map((row) => [row.route, row.title, row.priority, row.primary_keyword, row.cluster, row.has_post])).toEqual([
			['/plumbing/leeds', 'Plumbing in Leeds', 9, 'Plumbing Leeds', 'plumbing', false],
			['/plumbing/malaga', 'Plumbing in Málaga', 8, 'Plumbing Málaga', 'plumbing', false],
			['/roofing/leeds', 'Roofing in Leeds', 7, 'Roofing Leeds', 'roofing', false],
		]);
		expect(stored[1]!.variables).toEqual({ service: 'Plumbing', city: 'Málaga', rank: 8 });
		expect(await balanceOf(directus, user.id)).toBe(100 - 3 * RATE);

		// Again, appended: everything is already in the plan.
		const again = await call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', template, rows: rows.slice(0, 3) } });
		expect(again.body.data).toEqual({ total_pages: 3, added: 0, skipped: { duplicate: 3, on_site: 0, invalid: 0, missing_data: 0 } });
		// Replaced: the plan is the new rows only.
		const replaced = await call(directus, 'POST', IMPORT, {
			token: user.token,
			body: { pseo_id: pseoId, language_code: 'en-GB', template, rows: [{ service: 'Gas', city: 'Hull', rank: 1 }], mode: 'replace' },
		});
		expect(replaced.body.data).toEqual({ total_pages: 1, added: 1, skipped: { duplicate: 0, on_site: 0, invalid: 0, missing_data: 0 } });
		expect((await rowsOf(pseoId)).map((row) => row.route)).toEqual(['/gas/hull']);
		expect(await balanceOf(directus, user.id)).toBe(100 - 4 * RATE);
	});

	it('skips routes already on the website\'s sitemap, and generation then takes the imported pages', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		const rows = [
			{ service: 'Roofing', city: 'York on site', rank: 2 },
			{ service: 'Plumbing', city: 'Hull', rank: 1 },
		];
		const res = await call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', template, rows } });
		expect(res.body.data).toEqual({ total_pages: 1, added: 1, skipped: { duplicate: 0, on_site: 1, invalid: 0, missing_data: 0 } });
		const started = await call(directus, 'POST', '/pseo-endpoints/trigger/on-demand-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(started.status).toBe(202);
	});

	it('imports a CSV file the caller uploaded, and refuses a file that is not theirs', async () => {
		const user = await createUser(directus, { balance: 100 });
		await grantFileLibrary(directus, user);
		const pseoId = await website(user);
		const csv = 'service,city,rank\r\nPlumbing,Leeds,3\r\nPlumbing,"São Paulo",2\r\nRoofing,,1\r\nPlumbing,Leeds,1\r\n';
		const fileId = await uploadFile(directus, user, 'cities.csv', 'text/csv', csv);
		const res = await call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'pt-BR', template, file_id: fileId } });
		expect(res.status).toBe(200);
		expect(res.body.data).toEqual({ total_pages: 2, added: 2, skipped: { duplicate: 1, on_site: 0, invalid: 1, missing_data: 0 } });
		expect((await rowsOf(pseoId)).map((row) => row.route)).toEqual(['/plumbing/leeds', '/plumbing/sao-paulo']);

		const jsonl = '{"service":"Gas","city":"Hull","rank":1}\n{"service":"Gas","city":"York","rank":2}\n';
		const linesId = await uploadFile(directus, user, 'more.jsonl', 'application/x-ndjson', jsonl);
		const lines = await call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'pt-BR', template, file_id: linesId } });
		expect(lines.body.data).toMatchObject({ total_pages: 4, added: 2 });

		const stranger = await createUser(directus, { balance: 100 });
		const theirs = await website(stranger);
		expectEnvelope(await call(directus, 'POST', IMPORT, { token: stranger.token, body: { pseo_id: theirs, language_code: 'en-GB', template, file_id: fileId } }), 403);
		expectEnvelope(
			await call(directus, 'POST', IMPORT, { token: stranger.token, body: { pseo_id: theirs, language_code: 'en-GB', template, file_id: '00000000-0000-4000-8000-000000000000' } }),
			404,
		);
		expectEnvelope(await call(directus, 'POST', IMPORT, { token: stranger.token, body: { pseo_id: pseoId, language_code: 'en-GB', template, rows: [{ service: 'a', city: 'b' }] } }), 403);
	});

	it('a bad row is a 400 naming it, a short balance a 402, and neither stores anything', async () => {
		const simple = { route: '/{service}/{city}', title: '{service} in {city}' };
		const user = await createUser(directus, { balance: RATE });
		const pseoId = await website(user);
		const nested = await call(directus, 'POST', IMPORT, {
			token: user.token,
			body: { pseo_id: pseoId, language_code: 'en-GB', template: simple, rows: [{ service: 'a', city: 'b' }, { service: { name: 'x' }, city: 'c' }] },
		});
		expect(expectEnvelope(nested, 400).error).toMatch(/row 2: column "service" holds a nested value/);
		const short = await call(directus, 'POST', IMPORT, {
			token: user.token,
			body: { pseo_id: pseoId, language_code: 'en-GB', template: simple, rows: [{ service: 'a', city: 'b' }, { service: 'a', city: 'c' }] },
		});
		expectEnvelope(short, 402);
		expect(await rowsOf(pseoId)).toEqual([]);
		expect(await balanceOf(directus, user.id)).toBe(RATE);
		// The lock was released: one page fits.
		const one = await call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', template: simple, rows: [{ service: 'a', city: 'b' }] } });
		expect(one.status).toBe(200);
		expect(await balanceOf(directus, user.id)).toBe(0);
	});
});
