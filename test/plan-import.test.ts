import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
	adminItems,
	balanceOf,
	call,
	createUser,
	createWebsite,
	eventually,
	expectEnvelope,
	grantFileLibrary,
	ledgerOf,
	seedPlan,
	uploadFile,
	waitForJob,
	type TestUser,
} from './support/api.ts';
import { startDirectus, useSharedDirectus, type DirectusInstance } from './support/directus.ts';
import { startFixtureServer, type FixtureServer } from './support/sitemap-fixture-server.ts';
import { importPrices, postsByRoute } from './support/synced-data.ts';
import { ACCOUNTING_ENV, describeLegs, ENGINE_ENV, ENGINE_INTERFACE_LEGS, IMPORTED_PAGE_RATE, LEGS } from './support/legs.ts';

/*
 * POST /plan/import: plan pages from data, from inline rows and from a CSV file of the file library, with every
 * skip reason counted, the plan lock, the charge, and files that are not the caller's; and a sync, which treats its
 * data as the whole truth of its source: pages added (charged), updated (their posts stale), unchanged and retired
 * (never generated again, their posts retired), revived when their row comes back, and nothing of another source or
 * of an AI plan touched, all in one transaction that a kill -9 leaves whole or undone.
 */

const IMPORT = '/pseo-endpoints/plan/import';
/** Tokens per imported page, on the instance this suite shares with the daily cap's test. */
const RATE = IMPORTED_PAGE_RATE;
const template = { route: '/{service}/{city}', title: '{service} in {city}', primary_keyword: '{service} {city}', priority: '{rank}', cluster: '{service}' };
/** The counts of a sync, zero outside one. */
const NOT_SYNCED = { updated: 0, unchanged: 0, retired: 0 };
const NOTHING_SKIPPED = { duplicate: 0, on_site: 0, invalid: 0, missing_data: 0 };

describeLegs('plan import on %s', ENGINE_INTERFACE_LEGS, (leg) => {
	const { directus, fake } = useSharedDirectus(leg, ACCOUNTING_ENV);
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
		expect(again.body.data).toEqual({ total_pages: 3, added: 0, ...NOT_SYNCED, skipped: { duplicate: 3, on_site: 0, invalid: 0, missing_data: 0 } });
		// Replaced: the plan is the new rows only.
		const replaced = await call(directus, 'POST', IMPORT, {
			token: user.token,
			body: { pseo_id: pseoId, language_code: 'en-GB', template, rows: [{ service: 'Gas', city: 'Hull', rank: 1 }], mode: 'replace' },
		});
		expect(replaced.body.data).toEqual({ total_pages: 1, added: 1, ...NOT_SYNCED, skipped: NOTHING_SKIPPED });
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
		expect(res.body.data).toEqual({ total_pages: 1, added: 1, ...NOT_SYNCED, skipped: { duplicate: 0, on_site: 1, invalid: 0, missing_data: 0 } });
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
		expect(res.body.data).toEqual({ total_pages: 2, added: 2, ...NOT_SYNCED, skipped: { duplicate: 1, on_site: 0, invalid: 1, missing_data: 0 } });
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

	const importing = (user: TestUser, pseoId: number, body: Record<string, unknown>) => importPrices(directus, user, pseoId, body);
	const pagesBy = async (pseoId: number) => new Map((await rowsOf(pseoId)).map((row) => [row.route as string, row]));
	const postsBy = (pseoId: number) => postsByRoute(directus, pseoId);

	it('a sync counts what it added, updated, left unchanged and retired, charges the added pages only, and leaves another source\'s and an AI plan\'s pages alone', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		// An AI plan's pages (no source); the first import makes them rows before it adds its own.
		await seedPlan(directus, user, pseoId, [
			{ route: '/guide', title: 'A guide', priority: 50 },
			{ route: '/hull', title: 'Hull, by the AI', priority: 40 },
		]);
		const prices = [
			{ city: 'Leeds', rank: 9, price_eur: 95 },
			{ city: 'York', rank: 8, price_eur: 89 },
			{ city: 'Bath', rank: 7, price_eur: 70 },
			{ city: 'Hull', rank: 6, price_eur: 60 },
		];
		const first = await importing(user, pseoId, { rows: prices, source: 'prices' });
		expect(first.body.data).toEqual({ total_pages: 5, added: 3, ...NOT_SYNCED, skipped: { ...NOTHING_SKIPPED, duplicate: 1 } });
		const other = await importing(user, pseoId, { rows: [{ city: 'Ely', rank: 5, price_eur: 40 }], source: 'branches' });
		expect(other.body.data).toMatchObject({ total_pages: 6, added: 1 });
		expect(await balanceOf(directus, user.id)).toBe(100 - 4 * RATE);

		const synced = await importing(user, pseoId, {
			mode: 'sync',
			source: 'prices',
			rows: [
				{ city: 'Leeds', rank: 9, price_eur: 95 }, // unchanged
				{ city: 'York', rank: 8, price_eur: 99 }, // a new price
				{ city: 'Wells', rank: 4, price_eur: 50 }, // a new route
				{ city: 'Ely', rank: 3, price_eur: 45 }, // another source's page
				{ city: 'Guide', rank: 1, price_eur: 1 }, // the AI plan's page
				// Bath: gone from the data. Hull: the AI plan's, never this source's.
			],
		});
		expect(synced.status).toBe(200);
		expect(synced.body.data).toEqual({ total_pages: 6, added: 1, updated: 1, unchanged: 1, retired: 1, skipped: { ...NOTHING_SKIPPED, duplicate: 2 } });
		expect(synced.body.message).toBe('1 plan page(s) added, 1 updated, 1 unchanged, 1 retired, 2 row(s) skipped; the plan has 6 pages.');
		// Charged for Wells only.
		expect(await balanceOf(directus, user.id)).toBe(100 - 5 * RATE);
		const pages = await pagesBy(pseoId);
		expect(pages.get('/york')).toMatchObject({ facts: { city: 'York', price_eur: 99 }, source: 'prices', retired_at: null });
		expect(pages.get('/wells')).toMatchObject({ source: 'prices', retired_at: null });
		expect(pages.get('/bath')!.retired_at).toEqual(expect.any(String));
		expect(pages.get('/ely')).toMatchObject({ facts: { city: 'Ely', price_eur: 40 }, priority: 5, source: 'branches', retired_at: null });
		expect(pages.get('/guide')).toMatchObject({ title: 'A guide', facts: null, priority: 50, source: null, retired_at: null });
		expect(pages.get('/hull')).toMatchObject({ title: 'Hull, by the AI', source: null, retired_at: null });
		// The owner reads and filters them through the items API.
		const retired = await call(directus, 'GET', `/items/pseo_plan_pages?filter[pseo_id][_eq]=${pseoId}&filter[retired_at][_nnull]=true&fields=route,source`, { token: user.token });
		expect(retired.body.data).toEqual([{ route: '/bath', source: 'prices' }]);
	});

	it('a sync marks the post of a changed page stale and the post of a retired page retired; retired pages are never generated; a returning row revives; a regeneration is written from, and checked against, the new facts', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		const sync = (rows: Record<string, unknown>[]) => importing(user, pseoId, { mode: 'sync', source: 'prices', rows });
		const first = await sync([
			{ city: 'Leeds', rank: 9, price_eur: 4870 },
			{ city: 'York', rank: 8, price_eur: 89 },
			{ city: 'Ely', rank: 5, price_eur: 70 },
		]);
		expect(first.body.data).toEqual({ total_pages: 3, added: 3, ...NOT_SYNCED, skipped: NOTHING_SKIPPED });
		const bulk = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
		expect(await waitForJob(directus, user, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 2 });
		const written = await postsBy(pseoId);
		expect([...written.keys()].sort()).toEqual(['/leeds', '/york']);
		expect(written.get('/leeds')).toMatchObject({ stale: false, stale_since: null, retired: false });
		expect(written.get('/leeds')!.body).toContain('4870');

		// Leeds' price changes, York and Ely are gone, Hull is new.
		const before = Date.now();
		const second = await sync([
			{ city: 'Leeds', rank: 9, price_eur: 5100 },
			{ city: 'Hull', rank: 1, price_eur: 60 },
		]);
		expect(second.body.data).toEqual({ total_pages: 2, added: 1, updated: 1, unchanged: 0, retired: 2, skipped: NOTHING_SKIPPED });
		const marked = await postsBy(pseoId);
		expect(marked.get('/leeds')).toMatchObject({ stale: true, retired: false });
		expect(Date.parse(marked.get('/leeds')!.stale_since)).toBeGreaterThanOrEqual(before - 1000);
		expect(marked.get('/york')).toMatchObject({ stale: false, retired: true });
		// The owner reads and filters the flags through the items API.
		const own = (filter: string) => call(directus, 'GET', `/items/pseo_posts?filter[pseo_id][_eq]=${pseoId}&${filter}&fields=route`, { token: user.token });
		expect((await own('filter[stale][_eq]=true')).body.data).toEqual([{ route: '/leeds' }]);
		expect((await own('filter[retired][_eq]=true')).body.data).toEqual([{ route: '/york' }]);

		// Ely ranks above Hull but is retired: the next page is Hull's, and then nothing is left.
		const next = await call(directus, 'POST', '/pseo-endpoints/trigger/on-demand-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(await waitForJob(directus, user, next.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		expect([...(await postsBy(pseoId)).keys()].sort()).toEqual(['/hull', '/leeds', '/york']);
		const none = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(expectEnvelope(none, 400).error).toMatch(/has 0 ungenerated route\(s\)/);
		// A retired page's post is not regenerated either.
		const york = await call(directus, 'POST', `/pseo-endpoints/posts/${marked.get('/york')!.id}/regenerate`, { token: user.token, body: {} });
		expect(expectEnvelope(york, 400).error).toMatch(/was retired from the plan/);

		// Leeds is regenerated; the model keeps the old price in it. The prompt carries the new facts, and the figure
		// check, run against them, names the old price; the post is fresh again (written from the current facts), with
		// its earlier version kept as a revision.
		fake.configure({ lowQualityRoutes: { '/leeds': 'figure' }, lowQualityPersists: true });
		const leedsId = marked.get('/leeds')!.id;
		const regenerated = await call(directus, 'POST', `/pseo-endpoints/posts/${leedsId}/regenerate`, { token: user.token, body: {} });
		expect(regenerated.status).toBe(202);
		expect(await waitForJob(directus, user, regenerated.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		const prompts = fake.requests.filter((entry) => entry.path === '/v1/chat/completions' && entry.route === '/leeds');
		expect(prompts.at(-1)!.facts).toEqual({ city: 'Leeds', price_eur: 5100 });
		const rewritten = (await postsBy(pseoId)).get('/leeds')!;
		expect(rewritten).toMatchObject({ stale: false, stale_since: null, quality_status: 'fail' });
		expect(rewritten.quality_issues).toEqual(expect.arrayContaining([{ check: 'figures', severity: 'fail', detail: '"€4,870" is not given by the page\'s facts, title or primary keyword' }]));
		const revisions = await call(directus, 'GET', `/revisions?filter[collection][_eq]=pseo_posts&filter[item][_eq]=${leedsId}&fields=id`, { token: directus.adminToken });
		expect(revisions.body.data.length).toBeGreaterThanOrEqual(2);

		// York's row comes back: its page and its post are back, free.
		const balance = await balanceOf(directus, user.id);
		const third = await sync([
			{ city: 'Leeds', rank: 9, price_eur: 5100 },
			{ city: 'York', rank: 8, price_eur: 89 },
			{ city: 'Hull', rank: 1, price_eur: 60 },
		]);
		expect(third.body.data).toEqual({ total_pages: 3, added: 0, updated: 1, unchanged: 2, retired: 0, skipped: NOTHING_SKIPPED });
		expect((await pagesBy(pseoId)).get('/york')).toMatchObject({ retired_at: null });
		expect((await postsBy(pseoId)).get('/york')).toMatchObject({ retired: false, stale: false });
		expect((await pagesBy(pseoId)).get('/ely')!.retired_at).toEqual(expect.any(String));
		expect(await balanceOf(directus, user.id)).toBe(balance);
	});

	it('a regeneration accepted before a sync changed its facts leaves the post stale: it was written from the old ones', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		const sync = (price: number) => importing(user, pseoId, { mode: 'sync', source: 'prices', rows: [{ city: 'Leeds', rank: 1, price_eur: price }] });
		expect((await sync(95)).body.data).toMatchObject({ added: 1 });
		const first = await call(directus, 'POST', '/pseo-endpoints/trigger/on-demand-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(await waitForJob(directus, user, first.body.generation_id)).toMatchObject({ status: 'completed' });
		expect((await sync(99)).body.data).toMatchObject({ updated: 1 });
		const stale = (await postsBy(pseoId)).get('/leeds')!;
		expect(stale).toMatchObject({ stale: true });

		// The regeneration takes the facts of 99; while the provider writes, the price becomes 120.
		fake.configure({ holdChat: true });
		const regenerated = await call(directus, 'POST', `/pseo-endpoints/posts/${stale.id}/regenerate`, { token: user.token, body: {} });
		expect(regenerated.status).toBe(202);
		await eventually(async () => fake.heldChat() > 0, 30_000, 'the regeneration to reach the provider');
		expect((await sync(120)).body.data).toMatchObject({ updated: 1 });
		fake.releaseChat();
		fake.configure({ holdChat: false });
		expect(await waitForJob(directus, user, regenerated.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		const rewritten = (await postsBy(pseoId)).get('/leeds')!;
		expect(rewritten.body).toContain('99');
		expect(rewritten).toMatchObject({ stale: true, stale_since: stale.stale_since });
	});

	it('a bad mode or source is a 400 in the error envelope, and stores nothing', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		const rows = [{ city: 'Leeds', rank: 1, price_eur: 1 }];
		expect(expectEnvelope(await importing(user, pseoId, { rows, mode: 'merge' }), 400).error).toMatch(/"mode" must be "append", "replace" or "sync", received "merge"/);
		expect(expectEnvelope(await importing(user, pseoId, { rows, mode: 'sync', source: '' }), 400).error).toMatch(/"source" must be a name of 1 to 100 characters/);
		expect(expectEnvelope(await importing(user, pseoId, { rows, mode: 'sync', source: 'x'.repeat(101) }), 400).error).toMatch(/received 101/);
		expect(expectEnvelope(await importing(user, pseoId, { rows, mode: 'sync', source: ['prices'] }), 400).error).toMatch(/"source" must be a name of 1 to 100 characters, received an array/);
		expect(await rowsOf(pseoId)).toEqual([]);
		expect(await balanceOf(directus, user.id)).toBe(100);
	});
});

/*
 * A sync is one transaction: killed (kill -9) in the middle of it, after a batch of its pages was written, it leaves
 * none of it, and run again it does all of it. A private instance: the test kills it.
 */
describeLegs('a sync import killed halfway on %s', LEGS, (leg) => {
	let directus: DirectusInstance;
	let site: FixtureServer;
	const faultFile = path.join(os.tmpdir(), `pseo-fault-sync-${process.pid}-${randomBytes(3).toString('hex')}`);
	const env = () => ({ ...ENGINE_ENV, PSEO_TOKEN_PER_IMPORTED_PAGE: '1', PSEO_TEST_FAULT_FILE: faultFile });

	beforeAll(async () => {
		writeFileSync(faultFile, '');
		site = await startFixtureServer({
			'/sitemap.xml': { headers: { 'content-type': 'application/xml' }, body: '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>' },
		});
		directus = await startDirectus({ leg, env: env() });
	});
	afterAll(async () => {
		await directus?.dispose();
		await site?.close();
		rmSync(faultFile, { force: true });
	});

	it('kill -9 in the middle of a sync import leaves all of it or none of it', async () => {
		const user = await createUser(directus, { balance: 10_000 });
		const pseoId = (await createWebsite(directus, user, { website_url: site.origin })).id;
		const template = { route: '/{city}', title: 'Plumbers in {city}', facts: ['city', 'price'] };
		const importing = (body: Record<string, unknown>) =>
			call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', template, source: 'prices', ...body } });
		const cities = Array.from({ length: 2_400 }, (_, i) => ({ city: `City ${i}`, price: i }));
		expect((await importing({ rows: cities })).body.data).toMatchObject({ total_pages: 2_400, added: 2_400 });
		const pagesNow = async () => adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&fields=route,facts,retired_at&sort=id`);
		const before = await pagesNow();

		// The first 1,200 change their price, 800 stay as they are, the last 400 are gone and 300 are new: two batches of
		// the sync (2,000 routes each), killed after the first is written.
		const rows = [...cities.slice(0, 2_000).map((row, i) => (i < 1_200 ? { ...row, price: row.price + 1 } : row)), ...Array.from({ length: 300 }, (_, i) => ({ city: `New ${i}`, price: i }))];
		writeFileSync(faultFile, 'mid-plan-sync');
		const killed = await importing({ mode: 'sync', rows }).catch((error: unknown) => error);
		expect(killed).toBeInstanceOf(Error);
		await eventually(async () => !directus.running(), 60_000, 'the instance to die in the sync');
		writeFileSync(faultFile, '');
		expect(directus.output()).toContain('fault point mid-plan-sync reached');
		await directus.restart(env());

		// None of it: the pages as they were, nothing retired, nothing charged.
		expect(await pagesNow()).toEqual(before);
		expect(await balanceOf(directus, user.id)).toBe(10_000 - 2_400);

		// All of it, once the dead request's plan lock has lapsed (PSEO_PLAN_LOCK_MS).
		const again = await eventually(async () => {
			const res = await importing({ mode: 'sync', rows });
			return res.status === 409 ? null : res;
		}, 30_000, 'the plan lock to lapse');
		expect(again.body.data).toEqual({ total_pages: 2_300, added: 300, updated: 1_200, unchanged: 800, retired: 400, skipped: NOTHING_SKIPPED });
		const after = await pagesNow();
		expect(after.filter((page) => page.retired_at !== null).map((page) => page.route)).toEqual(cities.slice(2_000).map((row) => `/city-${row.city.split(' ')[1]}`));
		expect(after.find((page) => page.route === '/city-0')!.facts).toEqual({ city: 'City 0', price: 1 });
		expect(await balanceOf(directus, user.id)).toBe(10_000 - 2_400 - 300);
		expect((await ledgerOf(directus, user.id)).filter((row) => row.reason === 'charge').map((row) => Number(row.amount))).toEqual([-2_400, -300]);
	});
});
