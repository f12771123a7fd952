import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminItems, balanceOf, call, createUser, createWebsite, expectEnvelope } from './support/api.ts';
import { createCollection, grantRead } from './support/collections.ts';
import { useSharedDirectus } from './support/directus.ts';
import { startFixtureServer, type FixtureServer } from './support/sitemap-fixture-server.ts';
import { ACCOUNTING_ENV, describeLegs, IMPORTED_PAGE_RATE, LEGS, schemaEditingEnv } from './support/legs.ts';

/*
 * POST /plan/import with `collection`: the rows are the items of a Directus collection, read through Directus's own
 * ItemsService with the caller's permissions, with placeholders and facts that name fields of related items by their
 * path (`country.name`). What the caller may not read is not read: a collection, or a related collection a path goes
 * through, is a 403 and nothing is stored.
 */

const IMPORT = '/pseo-endpoints/plan/import';
const NOTHING_SKIPPED = { duplicate: 0, on_site: 0, invalid: 0, missing_data: 0 };
const template = { route: '/{name}', title: 'Plumbers in {name}, {country.name}', facts: ['population', 'country.name'] };

describeLegs('plan import from a collection on %s', LEGS, (leg) => {
	// It creates and deletes collections: an instance of its own on SQLite (legs.ts).
	const { directus } = useSharedDirectus(leg, schemaEditingEnv(leg, ACCOUNTING_ENV, 'plan-import-collection'));
	const suffix = randomBytes(3).toString('hex');
	const countries = `countries_${suffix}`;
	const cities = `cities_${suffix}`;
	const ids: Record<string, number> = {};
	let site: FixtureServer;

	beforeAll(async () => {
		// The websites' origin: a loopback site without a sitemap, so the import's on-site check stays here.
		site = await startFixtureServer({});
		await createCollection(directus, countries, [
			{ field: 'name', type: 'string' },
			{ field: 'code', type: 'string' },
		]);
		await createCollection(directus, cities, [
			{ field: 'name', type: 'string' },
			{ field: 'population', type: 'integer' },
			{ field: 'country', type: 'integer' },
		]);
		const relation = await call(directus, 'POST', '/relations', { token: directus.adminToken, body: { collection: cities, field: 'country', related_collection: countries } });
		expect(relation.status).toBe(200);
		for (const [code, name] of [['ES', 'Spain'], ['FR', 'France']] as const) {
			const res = await call(directus, 'POST', `/items/${countries}`, { token: directus.adminToken, body: { name, code } });
			ids[code] = res.body.data.id;
		}
		for (const [name, population, code] of [['Madrid', 3_300_000, 'ES'], ['Sevilla', 690_000, 'ES'], ['Lyon', 520_000, 'FR']] as const) {
			const res = await call(directus, 'POST', `/items/${cities}`, { token: directus.adminToken, body: { name, population, country: ids[code] } });
			ids[name] = res.body.data.id;
		}
	});
	afterAll(async () => {
		await site?.close();
		for (const collection of [cities, countries]) await call(directus, 'DELETE', `/collections/${collection}`, { token: directus.adminToken });
	});

	const setUp = async (balance = 100) => {
		const user = await createUser(directus, { balance });
		const pseoId = (await createWebsite(directus, user, { website_url: site.origin })).id;
		const importing = (body: Record<string, unknown>) =>
			call(directus, 'POST', IMPORT, { token: user.token, body: { pseo_id: pseoId, language_code: 'es-ES', template, mode: 'sync', source: 'cities', collection: cities, ...body } });
		const pages = () => adminItems(directus, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&sort=id&fields=route,title,facts,source,source_item,retired_at`);
		const plans = () => adminItems(directus, 'pseo_main_json', `filter[pseo_id][_eq]=${pseoId}&fields=id`);
		return { user, pseoId, importing, pages, plans };
	};

	it('imports the items the caller may read, relational placeholders and facts by their path, each page recording its item', async () => {
		const { user, importing, pages } = await setUp();
		await grantRead(directus, user, [
			{ collection: cities, fields: ['*'] },
			{ collection: countries, fields: ['*'] },
		]);
		const res = await importing({});
		expect(res.status).toBe(200);
		expect(res.body.data).toEqual({ total_pages: 3, added: 3, updated: 0, unchanged: 0, retired: 0, skipped: NOTHING_SKIPPED });
		expect(await pages()).toEqual([
			{ route: '/madrid', title: 'Plumbers in Madrid, Spain', facts: { population: 3_300_000, 'country.name': 'Spain' }, source: 'cities', source_item: String(ids['Madrid']), retired_at: null },
			{ route: '/sevilla', title: 'Plumbers in Sevilla, Spain', facts: { population: 690_000, 'country.name': 'Spain' }, source: 'cities', source_item: String(ids['Sevilla']), retired_at: null },
			{ route: '/lyon', title: 'Plumbers in Lyon, France', facts: { population: 520_000, 'country.name': 'France' }, source: 'cities', source_item: String(ids['Lyon']), retired_at: null },
		]);
		expect(await balanceOf(directus, user.id)).toBe(100 - 3 * IMPORTED_PAGE_RATE);

		// The item changes in Directus; the next sync of the collection updates its page, and a filter narrows the
		// data to the items it matches: the pages of the others are retired, as a sync of fewer rows does.
		await call(directus, 'PATCH', `/items/${cities}/${ids['Sevilla']}`, { token: directus.adminToken, body: { population: 700_000 } });
		const synced = await importing({ filter: { country: { code: { _eq: 'ES' } } } });
		expect(synced.status).toBe(200);
		expect(synced.body.data).toEqual({ total_pages: 2, added: 0, updated: 1, unchanged: 1, retired: 1, skipped: NOTHING_SKIPPED });
		const after = await pages();
		expect(after.find((page) => page.route === '/sevilla')!.facts).toEqual({ population: 700_000, 'country.name': 'Spain' });
		expect(after.find((page) => page.route === '/lyon')!.retired_at).not.toBeNull();
		await call(directus, 'PATCH', `/items/${cities}/${ids['Sevilla']}`, { token: directus.adminToken, body: { population: 690_000 } });
	});

	it("a page first imported from rows takes its item's key at the first sync from the collection", async () => {
		const { user, importing, pages } = await setUp();
		await grantRead(directus, user, [
			{ collection: cities, fields: ['*'] },
			{ collection: countries, fields: ['*'] },
		]);
		const rows = [
			{ name: 'Madrid', population: 3_300_000, 'country.name': 'Spain' },
			{ name: 'Sevilla', population: 690_000, 'country.name': 'Spain' },
			{ name: 'Lyon', population: 520_000, 'country.name': 'France' },
		];
		expect((await importing({ collection: undefined, rows })).body.data).toMatchObject({ added: 3 });
		expect((await pages()).map((page) => page.source_item)).toEqual([null, null, null]);
		// The same data, now read from the collection: nothing to rewrite, but each page learns its item.
		const synced = await importing({});
		expect(synced.body.data).toEqual({ total_pages: 3, added: 0, updated: 3, unchanged: 0, retired: 0, skipped: NOTHING_SKIPPED });
		expect((await pages()).map((page) => page.source_item)).toEqual([ids['Madrid'], ids['Sevilla'], ids['Lyon']].map(String));
		expect((await importing({})).body.data).toMatchObject({ updated: 0, unchanged: 3 });
	});

	it('reads a collection keyed by UUIDs, which Directus does not page by keyset, by its keys first', async () => {
		const shops = `shops_${suffix}`;
		await createCollection(directus, shops, [{ field: 'name', type: 'string' }], 'uuid');
		const created = await call(directus, 'POST', `/items/${shops}`, { token: directus.adminToken, body: ['Acorn', 'Birch', 'Cedar'].map((name) => ({ name })) });
		expect(created.status).toBe(200);
		const { user, importing, pages } = await setUp();
		await grantRead(directus, user, [{ collection: shops, fields: ['*'] }]);
		const res = await importing({ collection: shops, template: { route: '/{name}', title: 'Shop {name}' }, filter: { name: { _neq: 'Birch' } } });
		expect(res.status).toBe(200);
		expect(res.body.data).toMatchObject({ added: 2 });
		const ids = new Map((created.body.data as { id: string; name: string }[]).map((shop) => [shop.name, shop.id]));
		expect((await pages()).map((page) => [page.route, page.source_item]).sort()).toEqual([
			['/acorn', ids.get('Acorn')],
			['/cedar', ids.get('Cedar')],
		]);
		await call(directus, 'DELETE', `/collections/${shops}`, { token: directus.adminToken });
	});

	it('a caller who may not read the collection, or the related collection a path of the template goes through, gets a 403 and nothing is stored', async () => {
		const stranger = await setUp();
		const refused = await stranger.importing({});
		expectEnvelope(refused, 403);
		expect(refused.body.error).toContain(cities);

		// Cities readable, but not the countries whose names the title and the facts take.
		const partial = await setUp();
		await grantRead(directus, partial.user, [{ collection: cities, fields: ['*'] }]);
		const hidden = await partial.importing({});
		expectEnvelope(hidden, 403);
		expect(hidden.body.error).toContain(countries);

		for (const { user, pages, plans } of [stranger, partial]) {
			expect(await pages()).toEqual([]);
			expect(await plans()).toEqual([]);
			expect(await balanceOf(directus, user.id)).toBe(100);
		}
	});

	it('an unknown collection, a field it lacks, a list of related items, or a filter without a collection is a 400 naming it', async () => {
		const { user, importing, plans } = await setUp();
		await grantRead(directus, user, [{ collection: cities, fields: ['*'] }]);

		const unknown = await importing({ collection: `nowhere_${suffix}` });
		expectEnvelope(unknown, 400);
		expect(unknown.body.error).toContain(`nowhere_${suffix}`);

		const typo = await importing({ template: { ...template, title: 'Plumbers in {nme}' } });
		expectEnvelope(typo, 400);
		expect(typo.body.error).toMatch(/"nme" \(no such field\)\. Its fields are: .*population/);

		const deep = await importing({ template: { ...template, facts: ['country.capital'] } });
		expectEnvelope(deep, 400);
		expect(deep.body.error).toContain(`"country.capital" ("${countries}" has no field "capital")`);

		const system = await importing({ collection: 'directus_users', template: { route: '/{email}', title: '{email}' } });
		expectEnvelope(system, 400);
		// A name that is a property of every JavaScript object is no collection either.
		expectEnvelope(await importing({ collection: 'constructor' }), 400);
		expectEnvelope(await importing({ template: { ...template, title: '{toString}' } }), 400);

		// A filter the items service cannot run, and a dynamic variable it would take literally.
		const malformed = await importing({ filter: { name: { _in: 5 } } });
		expectEnvelope(malformed, 400);
		expect(malformed.body.error).toContain('"filter"');
		const dynamic = await importing({ filter: { name: { _eq: '$CURRENT_USER' } } });
		expectEnvelope(dynamic, 400);
		expect(dynamic.body.error).toContain('$CURRENT_USER');

		const both = await importing({ rows: [{ name: 'Bilbao' }] });
		expectEnvelope(both, 400);
		expect(both.body.error).toMatch(/exactly one of "rows".*"file_id".*"collection"/);

		const stray = await call(directus, 'POST', IMPORT, {
			token: user.token,
			body: { pseo_id: 1, language_code: 'es-ES', template, rows: [{ name: 'Bilbao' }], filter: { name: { _eq: 'x' } } },
		});
		expectEnvelope(stray, 400);
		expect(stray.body.error).toContain('"filter" applies to a "collection" only');
		expect(await plans()).toEqual([]);
	});
});
