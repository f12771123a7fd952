import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertUser, insertWebsite, openTestDatabase, VENDORS, vendorAvailable, type TestDatabase } from '../../test/support/db-under-test.ts';
import { existingRoutes } from './database.ts';

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
