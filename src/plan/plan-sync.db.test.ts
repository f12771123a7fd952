import type { Knex } from 'knex';
import { beforeAll, expect, it } from 'vitest';
import { describeOnVendors, insertPendingJob, insertUser, insertWebsite } from '../../test/support/db-under-test.ts';
import { dbTimestamp, insertedId } from '../shared/database.ts';
import { factsOf, type Facts } from '../shared/facts.ts';
import { insertPosts, POSTS, postedRoutes } from '../posts/post-store.ts';
import { countPlanPages, insertPlanPages, PLAN_PAGES, selectUnposted, type StoredPlanPage } from './plan-page-store.ts';
import { PLANS } from './plan-store.ts';
import { createPlanSync, type HubPriority, type SyncField } from './plan-sync.ts';

/*
 * plan-sync.ts on the real schema: what a sync counts and writes, the posts it marks stale and retired, the pages it
 * never touches, and how few statements it takes for many rows.
 */
describeOnVendors('plan sync', (database) => {
	let knex: Knex;
	beforeAll(() => {
		knex = database().knex;
	});

	const FIELDS: { page: SyncField[]; hub: SyncField[] } = { page: ['title', 'facts', 'parent_route', 'priority'], hub: ['title', 'priority'] };
	const website = async () => {
		const userId = await insertUser(knex, 0);
		return { userId, pseoId: await insertWebsite(knex, userId) };
	};
	/** A plan record: each run of a sync has its own, whose id is the run stamped on the pages it produces. */
	const planRecord = async (pseoId: number, userId: string) =>
		insertedId(await knex(PLANS).insert({ pseo_id: pseoId, user_id: userId, status: 'ready', language_code: 'en-GB', total_pages: 0, tokens_charged: 0 }, ['id']));
	const page = (route: string, facts: Facts | null = null, priority = 1): StoredPlanPage => ({ route, title: `Page ${route}`, priority, facts, variables: { route } });
	/** One run of the sync, in its own transaction, as the import runs it. */
	const run = async (site: { pseoId: number; userId: string }, source: string, mode: 'add' | 'sync', pages: StoredPlanPage[], hubs: StoredPlanPage[] = [], priorities = new Map<string, HubPriority>()) => {
		const planId = await planRecord(site.pseoId, site.userId);
		return knex.transaction(async (trx) => {
			const sync = createPlanSync(trx, { owner: { ...site, planId }, source, mode, fields: FIELDS, onSite: new Set() });
			for (const hub of hubs) await sync.hub(hub);
			for (const item of pages) await sync.page(item);
			return sync.finish(priorities);
		});
	};
	const rowsOf = async (pseoId: number) =>
		new Map(
			((await knex(PLAN_PAGES).where('pseo_id', pseoId).select('route', 'facts', 'priority', 'source', 'retired_at', 'sync_run')) as Record<string, unknown>[]).map((row) => [
				String(row['route']),
				{ facts: factsOf(row['facts']), priority: Number(row['priority']), source: row['source'], retired: row['retired_at'] !== null, syncRun: row['sync_run'] },
			]),
		);
	const postsOf = async (pseoId: number) =>
		new Map(
			((await knex(POSTS).where('pseo_id', pseoId).select('route', 'stale', 'stale_since', 'retired')) as Record<string, unknown>[]).map((row) => [
				String(row['route']),
				{ stale: Boolean(Number(row['stale'])), staleSince: row['stale_since'], retired: Boolean(Number(row['retired'])) },
			]),
		);
	const post = async (site: { pseoId: number; userId: string }, routes: string[]) => {
		const jobId = await insertPendingJob(knex, { ...site, routes });
		await knex.transaction((trx) =>
			insertPosts(
				trx,
				routes.map((route) => ({
					pseo_id: site.pseoId,
					generation_id: jobId,
					user_id: site.userId,
					route,
					language: 'en-GB',
					content: { title: route, meta_title: null, meta_description: null, h1: null, body: `About ${route}.`, faq: [], internal_links: [] },
				})),
				dbTimestamp(trx),
			),
		);
	};

	it('adds, updates, leaves unchanged and retires by route, marks posts stale and retired, and never touches another source\'s or an AI plan\'s pages', async () => {
		const site = await website();
		expect(await run(site, 'prices', 'add', [page('/a', { p: 1 }), page('/b', { p: 2 }), page('/c', { p: 3 }), page('/d', { p: 4 })])).toMatchObject({ added: 4, updated: 0, unchanged: 0, retired: 0 });
		await run(site, 'other', 'add', [page('/e', { p: 5 })]);
		// An AI plan's page: no source.
		const aiPlan = await planRecord(site.pseoId, site.userId);
		await knex.transaction((trx) => insertPlanPages(trx, { ...site, planId: aiPlan }, [page('/ai')], new Set()));
		await post(site, ['/a', '/b', '/c', '/e', '/ai']);

		const synced = await run(site, 'prices', 'sync', [page('/a', { p: 1 }), page('/b', { p: 20 }), page('/f', { p: 6 }), page('/e', { p: 50 }), page('/ai', { p: 7 })]);
		expect(synced).toEqual({ added: 1, updated: 1, unchanged: 1, retired: 2, duplicate: 2, on_site: 0, waiting: 0 });
		const rows = await rowsOf(site.pseoId);
		expect([...rows].filter(([, row]) => row.retired).map(([route]) => route).sort()).toEqual(['/c', '/d']);
		expect(rows.get('/b')!.facts).toEqual({ p: 20 });
		expect(rows.get('/f')).toMatchObject({ source: 'prices', retired: false });
		expect(rows.get('/e')).toMatchObject({ facts: { p: 5 }, source: 'other', retired: false });
		expect(rows.get('/ai')).toMatchObject({ facts: null, source: null, retired: false });
		const posts = await postsOf(site.pseoId);
		expect(posts.get('/b')).toMatchObject({ stale: true, retired: false });
		expect(posts.get('/b')!.staleSince).not.toBeNull();
		expect(posts.get('/a')).toMatchObject({ stale: false, retired: false });
		expect(posts.get('/c')).toMatchObject({ stale: false, retired: true });
		expect(posts.get('/e')).toMatchObject({ stale: false, retired: false });
		expect(posts.get('/ai')).toMatchObject({ stale: false, retired: false });
		// Retired pages are neither counted nor picked: /d has no post, and is still not generated.
		expect(await countPlanPages(knex, site.pseoId)).toBe(5);
		expect((await selectUnposted(knex, site.pseoId, 10, (routes) => postedRoutes(knex, site.pseoId, routes))).map((item) => item.route)).toEqual(['/f']);

		// /c comes back (its post too); /d stays retired and is not counted again. /b changes again: its post stays
		// stale since the first change.
		const staleSince = posts.get('/b')!.staleSince;
		const again = await run(site, 'prices', 'sync', [page('/a', { p: 1 }), page('/b', { p: 21 }), page('/f', { p: 6 }), page('/c', { p: 3 })]);
		expect(again).toEqual({ added: 0, updated: 2, unchanged: 2, retired: 0, duplicate: 0, on_site: 0, waiting: 0 });
		expect((await rowsOf(site.pseoId)).get('/c')).toMatchObject({ retired: false, facts: { p: 3 } });
		const after = await postsOf(site.pseoId);
		expect(after.get('/c')).toMatchObject({ retired: false, stale: false });
		expect(after.get('/b')).toMatchObject({ stale: true });
		expect(String(after.get('/b')!.staleSince)).toBe(String(staleSince));
	});

	it('a hub is stored with its first page and settled at the highest priority of its set; a priority change updates a page but leaves its post fresh', async () => {
		const site = await website();
		const hub = { route: '/h', title: 'Hub', priority: 5, page_type: 'hub' };
		const first = await run(site, 'prices', 'sync', [page('/h/a', null, 5), page('/h/b', null, 9)], [hub], new Map([['/h', { first: 5, highest: 9 }]]));
		expect(first).toMatchObject({ added: 3, updated: 0, unchanged: 0 });
		expect((await rowsOf(site.pseoId)).get('/h')!.priority).toBe(9);
		await post(site, ['/h', '/h/b']);

		const lowered = await run(site, 'prices', 'sync', [page('/h/a', null, 5), page('/h/b', null, 4)], [hub], new Map([['/h', { first: 5, highest: 5 }]]));
		expect(lowered).toMatchObject({ added: 0, updated: 2, unchanged: 1, retired: 0 });
		const rows = await rowsOf(site.pseoId);
		expect([rows.get('/h')!.priority, rows.get('/h/b')!.priority]).toEqual([5, 4]);
		const posts = await postsOf(site.pseoId);
		expect([posts.get('/h')!.stale, posts.get('/h/b')!.stale]).toEqual([false, false]);

		// No row produces the hub's set any more: the hub is retired with its pages.
		expect(await run(site, 'prices', 'sync', [page('/z')])).toMatchObject({ added: 1, retired: 3 });
		expect((await postsOf(site.pseoId)).get('/h')!.retired).toBe(true);
	});

	it('takes a few statements a batch of 2,000 routes, never one a row, and finds retired pages with one statement', async () => {
		const site = await website();
		const routes = Array.from({ length: 2_400 }, (_, i) => `/page-${i}`);
		await run(site, 'prices', 'add', routes.map((route, i) => page(route, { price: i })));
		// 100 changed, 100 gone, 100 new.
		const rows = [
			...routes.slice(0, 2_300).map((route, i) => page(route, { price: i < 100 ? i + 1_000 : i })),
			...Array.from({ length: 100 }, (_, i) => page(`/new-${i}`, { price: i })),
		];
		const statements: string[] = [];
		const count = (query: { sql: string }) => statements.push(query.sql);
		knex.on('query', count);
		let counts;
		try {
			counts = await run(site, 'prices', 'sync', rows);
		} finally {
			knex.off('query', count);
		}
		expect(counts).toEqual({ added: 100, updated: 100, unchanged: 2_200, retired: 100, duplicate: 0, on_site: 0, waiting: 0 });
		// 2 batches, each a lookup (one statement per 500 routes outside PostgreSQL) and what it needs of: the new
		// routes' posts and insert, the changed pages' update (two statements of CASEs outside PostgreSQL), the stale
		// posts; nothing for the unchanged pages. Then the retirement's read of the candidates, the retired pages and
		// their posts. With the plan record, BEGIN and COMMIT: 12 on PostgreSQL, 17 on MariaDB.
		expect(statements.length).toBeLessThan(25);
		expect(statements.filter((sql) => /sync_run.? is null or/i.test(sql))).toHaveLength(1);
	});
});
