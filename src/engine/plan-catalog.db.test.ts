import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnVendors, insertUser, insertWebsite, silentLogger } from '../../test/support/db-under-test.ts';
import { insertPlanPages, PLAN_PAGES } from '../plan/plan-page-store.ts';
import { bumpPlanVersion } from '../plan/plan-version.ts';
import { sharedPlanCatalog } from './plan-catalog.ts';

/*
 * Small jobs share a website's plan catalog per instance until the website's plan version changes. Two Knex
 * instances on one database stand for two Directus instances: a change written and announced through one is read
 * by the other's next job, and a change not announced yet (or another website's) leaves the shared catalog alone.
 */
describeOnVendors('shared plan catalog', (database) => {
	let other: Knex;
	beforeAll(() => {
		other = knexFactory(database().knex.client.config as Knex.Config);
	});
	afterAll(async () => other?.destroy());

	it('is read again on another instance once the plan version is bumped, a renamed page included, and only then', async () => {
		const knex = database().knex;
		const userId = await insertUser(knex, 0);
		const pseoId = await insertWebsite(knex, userId);
		const elsewhere = await insertWebsite(knex, userId);
		const owner = { pseoId, userId, planId: null };
		const pages = [
			{ route: '/a', title: 'Page A', priority: 3 },
			{ route: '/b', title: 'Page B', priority: 2 },
		];
		await knex.transaction((trx) => insertPlanPages(trx, owner, pages, new Set()));
		await bumpPlanVersion(knex, [pseoId], silentLogger);
		const titlesFor = async (route: string) => {
			const picker = await (await sharedPlanCatalog(other, pseoId)).siblings();
			return picker!({ route, title: '', priority: 0 }).map((sibling) => sibling.title);
		};

		const first = await sharedPlanCatalog(other, pseoId);
		expect([...first.routes].sort()).toEqual(['/a', '/b']);
		expect(await titlesFor('/b')).toEqual(['Page A']);

		// A rename keeps the plan's number of pages and its last page: only the version tells.
		await knex(PLAN_PAGES).where({ pseo_id: pseoId, route: '/a' }).update({ title: 'Boiler Repair in Leeds' });
		await bumpPlanVersion(knex, [elsewhere], silentLogger);
		expect(await sharedPlanCatalog(other, pseoId)).toBe(first);
		await bumpPlanVersion(knex, [pseoId], silentLogger);
		const second = await sharedPlanCatalog(other, pseoId);
		expect(second).not.toBe(first);
		expect(await titlesFor('/b')).toEqual(['Boiler Repair in Leeds']);

		// A page added and announced for every website (a change whose websites are unknown).
		await knex.transaction((trx) => insertPlanPages(trx, owner, [{ route: '/c', title: 'Page C', priority: 1 }], new Set()));
		expect(await sharedPlanCatalog(other, pseoId)).toBe(second);
		await bumpPlanVersion(knex, 'all', silentLogger);
		expect([...(await sharedPlanCatalog(other, pseoId)).routes].sort()).toEqual(['/a', '/b', '/c']);
	});
});
