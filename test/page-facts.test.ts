import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminItems, balanceOf, call, eventually, createUser, createWebsite, expectEnvelope, grantFileLibrary, uploadFile, waitForJob, type TestUser } from './support/api.ts';
import { useSharedDirectus } from './support/directus.ts';
import { startFixtureServer, type FixtureServer } from './support/sitemap-fixture-server.ts';
import { describeLegs, ENGINE_ENV, LEGS } from './support/legs.ts';
import { structuredDataProblems } from './support/structured-data.ts';

/*
 * Facts per page: an import gives each plan page the data of its row (`facts`), the page prompt carries them to the
 * model (read back from the fake provider's request log), and the post stores the facts it was written from.
 * `template.required` skips rows without data, and a template naming a column the data lacks is a 400 that lists
 * the data's columns.
 */

const IMPORT = '/pseo-endpoints/plan/import';
const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';

describeLegs('facts per page on %s', LEGS, (leg) => {
	const { directus, fake } = useSharedDirectus(leg, ENGINE_ENV);
	let site: FixtureServer;

	beforeAll(async () => {
		site = await startFixtureServer({
			'/sitemap.xml': {
				headers: { 'content-type': 'application/xml' },
				body: '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>',
			},
		});
	});
	afterAll(async () => {
		await site?.close();
	});

	const website = (user: TestUser) => createWebsite(directus, user, { website_url: site.origin }).then((created) => created.id);
	const planOf = (pseoId: number) => adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&sort=id`);
	const importRows = (user: TestUser, pseoId: number, template: Record<string, unknown>, rows: unknown[]) =>
		call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', template, rows } });
	const chatFor = (route: string) => fake.requests.filter((entry) => entry.path === '/v1/chat/completions' && entry.route === route);

	it('an import gives each page its row as facts; the page prompt carries them, and the post stores them', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		const rows = [
			{ service: 'Plumbing', city: 'Leeds', population: 812000, average_price_gbp: '95.50', emergency: true, note: null },
			{ service: 'Plumbing', city: 'York', population: 211000, average_price_gbp: '89', emergency: false, note: '  ' },
		];
		const res = await importRows(user, pseoId, { route: '/{service}/{city}', title: '{service} in {city}' }, rows);
		expect(res.status).toBe(200);
		const plan = await planOf(pseoId);
		// Every column by default, each value of the type it came with; nulls and blanks say nothing and are left out.
		expect(plan.map((page) => [page.route, page.facts])).toEqual([
			['/plumbing/leeds', { service: 'Plumbing', city: 'Leeds', population: 812000, average_price_gbp: '95.50', emergency: true }],
			['/plumbing/york', { service: 'Plumbing', city: 'York', population: 211000, average_price_gbp: '89', emergency: false }],
		]);

		const started = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(started.status).toBe(202);
		expect(await waitForJob(directus, user, started.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		const [request] = chatFor('/plumbing/leeds');
		expect(request!.facts).toEqual(plan[0]!.facts);
		const [post] = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&fields=route,facts,body`);
		expect(post).toMatchObject({ route: '/plumbing/leeds', facts: plan[0]!.facts });
		expect(post.body).toContain('812000');

		// Through the Batch API too: the facts travel with the job's route into the batch line and onto the post.
		const bulk = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(bulk.status).toBe(202);
		expect(await waitForJob(directus, user, bulk.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		const [york] = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&filter[route][_eq]=/plumbing/york&fields=facts,body`);
		expect(york.facts).toEqual(plan[1]!.facts);
		expect(york.body).toContain('211000');

		// Every post carries its JSON-LD, returned with the post to its owner, and it validates.
		const own = await call(directus, 'GET', `/items/pseo_posts?filter[pseo_id][_eq]=${pseoId}&fields=route,title,structured_data,faq`, { token: user.token });
		expect(own.body.data).toHaveLength(2);
		for (const stored of own.body.data as Record<string, any>[]) {
			expect(await structuredDataProblems(stored.structured_data, { faq: stored.faq.length > 0 }), stored.route).toEqual([]);
			const [article, , breadcrumb] = stored.structured_data;
			expect(article).toMatchObject({ '@type': 'Article', headline: stored.title, inLanguage: 'en-GB', url: `${site.origin}${stored.route}` });
			expect(breadcrumb.itemListElement.map((item: { name: string; item: string }) => item.item)).toEqual([`${site.origin}/`, `${site.origin}/plumbing`, `${site.origin}${stored.route}`]);
		}
	});

	it('takes only the columns template.facts lists, and CSV values as text', async () => {
		const user = await createUser(directus, { balance: 100 });
		await grantFileLibrary(directus, user);
		const pseoId = await website(user);
		const csv = 'service,city,population,internal_code\r\nRoofing,Hull,267000,X-1\r\nRoofing,Leeds,812000,X-2\r\n';
		const fileId = await uploadFile(directus, user, 'roofing.csv', 'text/csv', csv);
		const template = { route: '/{service}/{city}', title: '{service} in {city}', facts: ['city', 'population'] };
		const res = await call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', template, file_id: fileId } });
		expect(res.status).toBe(200);
		expect((await planOf(pseoId)).map((page) => page.facts)).toEqual([
			{ city: 'Hull', population: '267000' },
			{ city: 'Leeds', population: '812000' },
		]);

		// An empty list: pages without facts, whose prompt has none.
		const none = await importRows(user, pseoId, { route: '/{service}/{city}', title: '{service} in {city}', facts: [] }, [{ service: 'Gas', city: 'York' }]);
		expect(none.body.data).toMatchObject({ added: 1 });
		const gas = (await planOf(pseoId)).find((page) => page.route === '/gas/york');
		expect(gas!.facts).toBeNull();
	});

	it('skips rows without a value for a required column, counted under missing_data', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		const rows = [
			{ city: 'Leeds', price: 95 },
			{ city: 'York', price: '' },
			{ city: 'Hull' },
			{ city: 'Bath', price: null },
			{ city: 'Ely', price: 0 },
			{ price: 80 }, // no city: a placeholder without a value
		];
		const res = await importRows(user, pseoId, { route: '/{city}', title: 'Plumbers in {city}', required: ['price'] }, rows);
		expect(res.status).toBe(200);
		expect(res.body.data).toEqual({ total_pages: 2, added: 2, updated: 0, unchanged: 0, retired: 0, skipped: { duplicate: 0, on_site: 0, invalid: 1, missing_data: 3 } });
		expect(res.body.message).toMatch(/2 plan page\(s\) added, 4 row\(s\) skipped/);
		expect((await planOf(pseoId)).map((page) => page.route)).toEqual(['/leeds', '/ely']);
	});

	it('a template naming a column the data lacks is a 400 that names it and lists the data\'s columns; nothing is stored', async () => {
		const user = await createUser(directus, { balance: 100 });
		await grantFileLibrary(directus, user);
		const pseoId = await website(user);
		const rows = [
			{ service: 'Plumbing', city: 'Leeds', rank: 1 },
			{ service: 'Roofing', city: 'York', price: 90 },
		];
		const typo = await importRows(user, pseoId, { route: '/{service}/{citty}', title: '{service} in {citty}' }, rows);
		expect(expectEnvelope(typo, 400).error).toBe(
			'The template names a column the data does not have: "citty" (in route, title). The data\'s columns are: service, city, rank, price.',
		);
		const lists = await importRows(user, pseoId, { route: '/{city}', title: '{city}', facts: ['city', 'area'], required: ['area', 'postcode'] }, rows);
		expect(expectEnvelope(lists, 400).error).toMatch(/columns the data does not have: "area" \(in facts, required\), "postcode" \(in required\)\. The data's columns are: service, city, rank, price\.$/);
		// A column some row has is a column of the data: that row's page is written, the others are skipped.
		const some = await importRows(user, pseoId, { route: '/{city}', title: '{city}', required: ['price'] }, rows);
		expect(some.body.data).toMatchObject({ added: 1, skipped: { missing_data: 1 } });

		const csv = 'service,city\r\nPlumbing,Leeds\r\n';
		const fileId = await uploadFile(directus, user, 'typo.csv', 'text/csv', csv);
		const file = await call(directus, 'POST', IMPORT, {
			token: user.token,
			body: { pseo_id: pseoId, language_code: 'en-GB', template: { route: '/{service}/{town}', title: '{service}' }, file_id: fileId },
		});
		expect(expectEnvelope(file, 400).error).toBe('The template names a column the data does not have: "town" (in route). The data\'s columns are: service, city.');
		expect((await planOf(pseoId)).map((page) => page.route)).toEqual(['/york']);
	});

	it('a page stating a figure its facts do not give fails `figures`, is written once more for free with the figure named, and is stored as failed when it keeps it', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		const rows = [
			{ city: 'Hull', population: 267000, price_gbp: '85' },
			{ city: 'Ely', population: 20000, price_gbp: '70' },
		];
		await importRows(user, pseoId, { route: '/{city}', title: 'Plumbers in {city}' }, rows);
		const postOf = async (route: string) => (await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&filter[route][_eq]=${route}&fields=quality_status,quality_issues,body`))[0];
		const run = async () => {
			const started = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect(await waitForJob(directus, user, started.body.generation_id)).toMatchObject({ status: 'completed', created_count: 1 });
		};
		const named = /^figures: "€4,870" is not given by the page's facts, title or primary keyword$/;

		// Hull: the second version drops the figure and passes.
		fake.configure({ lowQualityRoutes: { '/hull': 'figure' } });
		await run();
		const hull = chatFor('/hull');
		expect(hull).toHaveLength(2);
		expect(hull[0]!.qualityIssues).toBeUndefined();
		expect(hull[1]!.qualityIssues).toEqual(expect.arrayContaining([expect.stringMatching(named)]));
		expect(hull[1]!.facts).toEqual(rows[0]);
		const kept = await postOf('/hull');
		expect(kept.quality_status).not.toBe('fail');
		expect(kept.body).not.toContain('4,870');
		expect(kept.quality_issues.map((found: { check: string }) => found.check)).not.toContain('figures');

		// Ely: the second version keeps it; stored as failed, the figure named.
		fake.configure({ lowQualityRoutes: { '/ely': 'figure' }, lowQualityPersists: true });
		await run();
		expect(chatFor('/ely')).toHaveLength(2);
		const failed = await postOf('/ely');
		expect(failed.quality_status).toBe('fail');
		expect(failed.quality_issues).toEqual(
			expect.arrayContaining([{ check: 'figures', severity: 'fail', detail: '"€4,870" is not given by the page\'s facts, title or primary keyword' }]),
		);
		// Charged once a page: the rewrites were free.
		expect(await balanceOf(directus, user.id)).toBe(100 - 2 * 10);
	});

	it('hubs: one per distinct value, generated before or with their pages, named in each page\'s breadcrumb, and linking to every page of their set', async () => {
		const user = await createUser(directus, { balance: 500 });
		const pseoId = await website(user);
		const rows = [
			{ service: 'Plumbing', city: 'Leeds', rank: 5 },
			{ service: 'Plumbing', city: 'York', rank: 9 },
			{ service: 'Roofing', city: 'Leeds', rank: 3 },
		];
		const template = { route: '/{service}/{city}', title: '{service} in {city}', priority: '{rank}', hub: { route: '/{service}', title: '{service} services' } };
		const res = await importRows(user, pseoId, template, rows);
		expect(res.body.data).toMatchObject({ total_pages: 5, added: 5 });
		const plan = await planOf(pseoId);
		expect(plan.map((page) => [page.route, page.title, page.page_type, page.parent_route, page.priority])).toEqual([
			['/plumbing', 'Plumbing services', 'hub', null, 9],
			['/plumbing/leeds', 'Plumbing in Leeds', null, '/plumbing', 5],
			['/plumbing/york', 'Plumbing in York', null, '/plumbing', 9],
			['/roofing', 'Roofing services', 'hub', null, 3],
			['/roofing/leeds', 'Roofing in Leeds', null, '/roofing', 3],
		]);

		// A bulk job of two pages takes the hub with the first page of its set.
		const first = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
		expect(await waitForJob(directus, user, first.body.generation_id)).toMatchObject({ status: 'completed', created_count: 2 });
		const postsNow = async () => (await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&fields=id,route,structured_data&sort=route`)) as Record<string, any>[];
		expect((await postsNow()).map((post) => post.route)).toEqual(['/plumbing', '/plumbing/york']);
		const rest = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
		expect(await waitForJob(directus, user, rest.body.generation_id)).toMatchObject({ status: 'completed', created_count: 3 });
		const posts = await postsNow();
		for (const post of posts.filter((candidate) => candidate.route.split('/').length === 3)) {
			const breadcrumb = post.structured_data.find((node: { '@type': string }) => node['@type'] === 'BreadcrumbList');
			const hub = post.route.startsWith('/plumbing') ? ['Plumbing services', `${site.origin}/plumbing`] : ['Roofing services', `${site.origin}/roofing`];
			expect(breadcrumb.itemListElement[1], post.route).toMatchObject({ position: 2, name: hub[0], item: hub[1] });
		}

		// Published through a webhook, the hub's page ends with a link to every page of its set.
		const received: Record<string, any>[] = [];
		const receiver = http.createServer((req, res) => {
			const chunks: Buffer[] = [];
			req.on('data', (chunk: Buffer) => chunks.push(chunk));
			req.on('end', () => {
				received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
				res.writeHead(204).end();
			});
		});
		await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
		try {
			const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
			expect((await call(directus, 'PUT', `/pseo-endpoints/pseo/${pseoId}/publishing`, { token: user.token, body: { target: 'webhook', url, secret: 'a-secret-of-the-receiver' } })).status).toBe(200);
			const published = await call(directus, 'POST', '/pseo-endpoints/publish', { token: user.token, body: { pseo_id: pseoId } });
			expect(published.status).toBe(202);
			await eventually(async () => {
				const read = await call(directus, 'GET', `/pseo-endpoints/publications/${published.body.publication_id}`, { token: user.token });
				return read.body.data?.status === 'completed';
			}, 60_000, 'the publication');
			const hubPage = received.find((payload) => payload.post.route === '/plumbing')!;
			const links = [...String(hubPage.post.html).matchAll(/<ul class="pseo-hub-links">([\s\S]*?)<\/ul>/g)].flatMap((list) => [...list[1]!.matchAll(/<a href="([^"]+)">([^<]+)<\/a>/g)].map((link) => [link[1], link[2]]));
			expect(links).toEqual([
				[`${site.origin}/plumbing/york`, 'Plumbing in York'],
				[`${site.origin}/plumbing/leeds`, 'Plumbing in Leeds'],
			]);
			expect(received.find((payload) => payload.post.route === '/plumbing/york')!.post.html).not.toContain('pseo-hub-links');
		} finally {
			await new Promise<void>((resolve) => receiver.close(() => resolve()));
		}
	});

	it('the owner edits a plan page\'s facts through the items API; anything but a flat object of values is a 400', async () => {
		const user = await createUser(directus, { balance: 100 });
		const pseoId = await website(user);
		await importRows(user, pseoId, { route: '/{city}', title: 'Plumbers in {city}' }, [{ city: 'Leeds', price: 95 }]);
		const [page] = await planOf(pseoId);
		const edited = await call(directus, 'PATCH', `/items/pseo_plan_pages/${page!.id}`, { token: user.token, body: { facts: { city: 'Leeds', price: 99, open_sundays: true } } });
		expect(edited.status).toBe(200);
		expect((await planOf(pseoId))[0]!.facts).toEqual({ city: 'Leeds', price: 99, open_sundays: true });
		const nested = await call(directus, 'PATCH', `/items/pseo_plan_pages/${page!.id}`, { token: user.token, body: { facts: { prices: { low: 1 } } } });
		expect(nested.status).toBe(400);
		expect(JSON.stringify(nested.body)).toMatch(/facts\.prices\\" must be a string, a number or a boolean, received an object/);
		const list = await call(directus, 'PATCH', `/items/pseo_plan_pages/${page!.id}`, { token: user.token, body: { facts: [1, 2] } });
		expect(list.status).toBe(400);
		const cleared = await call(directus, 'PATCH', `/items/pseo_plan_pages/${page!.id}`, { token: user.token, body: { facts: null } });
		expect(cleared.status).toBe(200);
		expect((await planOf(pseoId))[0]!.facts).toBeNull();
	});
});
