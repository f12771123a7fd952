import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertUser, insertWebsite, openTestDatabase, VENDORS, vendorAvailable, type TestDatabase } from '../../test/support/db-under-test.ts';
import { arrayLiteral, existingRoutes } from './database.ts';

/*
 * `existingRoutes` against the plan pages of a website, as a 100,000-page trigger and a plan import use it: every
 * route present is found, no other, across the 10,000-route statements of PostgreSQL and the slices elsewhere.
 */
describe.each(VENDORS)('existingRoutes on %s', (vendor) => {
	let db: TestDatabase;
	let pseoId: number;
	let otherSite: number;

	beforeAll(async () => {
		if (!vendorAvailable(vendor)) return;
		db = await openTestDatabase(vendor, 2);
		const user = await insertUser(db.knex, 0);
		pseoId = await insertWebsite(db.knex, user);
		otherSite = await insertWebsite(db.knex, user);
		// Every seventh of 25,000 routes is planned on the website; the other website plans all the rest.
		const rows = Array.from({ length: 25_000 }, (_, i) => ({ pseo_id: i % 7 === 0 ? pseoId : otherSite, route: `/r/${i}`, title: `R ${i}`, priority: 0, has_post: false }));
		for (let i = 0; i < rows.length; i += 500) await db.knex('pseo_plan_pages').insert(rows.slice(i, i + 500));
	});
	afterAll(async () => db?.dispose());

	it.skipIf(!vendorAvailable(vendor))('finds exactly the website’s routes among 25,000 asked, and none of another website', async () => {
		const asked = Array.from({ length: 25_000 }, (_, i) => `/r/${i}`);
		const found = await existingRoutes(db.knex, 'pseo_plan_pages', pseoId, asked);
		expect(found.size).toBe(Math.ceil(25_000 / 7));
		expect([...found].every((route) => Number(route.slice(3)) % 7 === 0)).toBe(true);
		expect(await existingRoutes(db.knex, 'pseo_plan_pages', pseoId, ['/r/7', '/missing', '/r/8'])).toEqual(new Set(['/r/7']));
		expect(await existingRoutes(db.knex, 'pseo_plan_pages', pseoId, [])).toEqual(new Set());
	});
});

/*
 * `arrayLiteral` read back by PostgreSQL: every value arrives as it was sent, on the JSON path and on the hand-quoted
 * one (a control character or a lone surrogate in any element takes the whole array there).
 */
describe('arrayLiteral on postgres', () => {
	let db: TestDatabase;
	beforeAll(async () => {
		if (vendorAvailable('postgres')) db = await openTestDatabase('postgres', 2);
	});
	afterAll(async () => db?.dispose());

	const tricky = ['plain', 'a "quoted" word', 'back\\slash', '\\"', 'NULL', '', '{braces}', 'comma, here', ' spaced ', 'Zürich – café', '😀 pair', "it's"];

	it.skipIf(!vendorAvailable('postgres'))('round-trips text and numbers, with NULL elements', async () => {
		for (const values of [tricky, [...tricky, 'line\nbreak', 'tab\there', 'bell\u0007'], [...tricky, 'lone \ud800 high', 'lone \udc00 low']]) {
			const sent = [...values, null];
			const literal = arrayLiteral(sent);
			const { rows } = (await db.knex.raw('SELECT ?::text[] AS a', [literal])) as { rows: { a: (string | null)[] }[] };
			// PostgreSQL stores text as UTF-8, where a lone surrogate becomes U+FFFD, as node-postgres's own arrays do.
			expect(rows[0]!.a).toEqual(sent.map((value) => (value === null ? null : value.replace(/[\ud800\udc00]/g, '\ufffd'))));
		}
		const { rows } = (await db.knex.raw('SELECT ?::int[] AS a, ?::text[] AS e, ?::text[] AS h', [arrayLiteral([3, 0, -7, null, undefined]), arrayLiteral([]), arrayLiteral([1, 'x\ny', 2.5, undefined])])) as {
			rows: { a: unknown[]; e: unknown[]; h: unknown[] }[];
		};
		expect(rows[0]).toEqual({ a: [3, 0, -7, null, null], e: [], h: ['1', 'x\ny', '2.5', null] });
	});
});
