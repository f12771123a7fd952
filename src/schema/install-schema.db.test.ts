import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertPendingJob, insertUser, insertWebsite, openTestDatabase, silentLogger, vendorAvailable, type TestDatabase } from '../../test/support/db-under-test.ts';
import { failedAmong, failedRoutesOf, JOB_ROUTES, settleJobRoutes } from '../engine/job-route-store.ts';
import { POSTS } from '../posts/post-store.ts';
import { PLAN_PAGES } from '../plan/plan-page-store.ts';
import { BANDS_TABLE } from '../quality/similarity-index.ts';
import { compressPostBodies, ensureIndexes } from './install-schema.ts';

/*
 * What the start-up leaves on PostgreSQL (the template these tests clone was made by a real start-up):
 * - post bodies compressed with LZ4, where the server offers it; a start-up that finds the column LZ4 already does
 *   not alter it again, and one that finds it set back to pglz sets LZ4 again;
 * - a job's failed routes found through a partial index;
 * - indexes checked in the catalog, not re-declared: a start-up whose indexes are in place waits for no table lock,
 *   a missing one is built, an invalid one (a concurrent build that died) is rebuilt, and redundant ones go.
 */
describe.skipIf(!vendorAvailable('postgres'))('start-up storage on postgres', () => {
	let db: TestDatabase;
	beforeAll(async () => {
		db = await openTestDatabase('postgres', 2);
	});
	afterAll(async () => db?.dispose());

	it('stores a long body with LZ4, and a second start-up does not alter the table again', async (context) => {
		const offered = (await db.knex.raw(`SELECT 'lz4' = ANY(enumvals) AS available FROM pg_settings WHERE name = 'default_toast_compression'`)) as { rows: { available: boolean }[] };
		if (!offered.rows[0]?.available) context.skip();
		const pseoId = await insertWebsite(db.knex, await insertUser(db.knex, 0));
		const body = Array.from({ length: 900 }, (_, i) => ['local', 'service', 'guide', 'price', 'team'][(i * 7) % 5]).join(' ');
		await db.knex(POSTS).insert({ pseo_id: pseoId, route: '/long', status: 'draft', title: 'Long', body });
		const stored = (await db.knex.raw('SELECT pg_column_compression(body) AS method FROM ?? WHERE route = ?', [POSTS, '/long'])) as { rows: { method: string }[] };
		expect(stored.rows[0]!.method).toBe('lz4');

		// An ALTER of the column writes a new version of its pg_attribute row.
		const version = async () =>
			((await db.knex.raw("SELECT xmin::text AS version FROM pg_attribute WHERE attrelid = ?::regclass AND attname = 'body'", [POSTS])) as { rows: { version: string }[] }).rows[0]!.version;
		const before = await version();
		await compressPostBodies(db.knex, silentLogger);
		expect(await version()).toBe(before);
		await db.knex.raw('ALTER TABLE ?? ALTER COLUMN ?? SET COMPRESSION pglz', [POSTS, 'body']);
		const reset = await version();
		expect(reset).not.toBe(before);
		await compressPostBodies(db.knex, silentLogger);
		expect(await version()).not.toBe(reset);
		const column = (await db.knex.raw("SELECT attcompression AS method FROM pg_attribute WHERE attrelid = ?::regclass AND attname = 'body'", [POSTS])) as { rows: { method: string }[] };
		expect(column.rows[0]!.method).toBe('l');
	});

	it('finds a job\'s failed routes through a partial index that its queued rows never write to', async () => {
		const indexes = (await db.knex.raw('SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ?', [JOB_ROUTES])) as { rows: { indexname: string; indexdef: string }[] };
		const byName = new Map(indexes.rows.map((row) => [row.indexname, row.indexdef]));
		expect(byName.has('pseo_generation_routes_state')).toBe(false);
		expect(byName.get('pseo_generation_routes_failed')).toMatch(/\(generation_id, route\) WHERE \(\(state\)::text = 'failed'::text\)$/);

		const userId = await insertUser(db.knex, 0);
		const pseoId = await insertWebsite(db.knex, userId);
		const routes = Array.from({ length: 20_000 }, (_, i) => `/r/${i}`);
		const jobId = await insertPendingJob(db.knex, { userId, pseoId, routes });
		await db.knex.transaction((trx) => settleJobRoutes(trx, jobId, routes.slice(0, 100), [{ route: '/r/7000', error: 'Expired.' }, { route: '/r/3', error: 'Refused.' }]));
		await db.knex.raw('ANALYZE ??', [JOB_ROUTES]);
		const size = (await db.knex.raw("SELECT pg_relation_size('pseo_generation_routes_failed') AS bytes")) as { rows: { bytes: string }[] };
		// One page of entries for the two failures, against 20,000 rows in the table.
		expect(Number(size.rows[0]!.bytes)).toBeLessThanOrEqual(2 * 8192);

		expect(await failedAmong(db.knex, jobId, ['/r/3', '/r/4', '/r/7000'])).toEqual(new Set(['/r/3', '/r/7000']));
		expect((await failedRoutesOf(db.knex, [jobId])).get(jobId)).toEqual([
			{ route: '/r/3', error: 'Refused.' },
			{ route: '/r/7000', error: 'Expired.' },
		]);
		const plan = (await db.knex.raw('EXPLAIN (FORMAT JSON) SELECT route FROM ?? WHERE generation_id = ? AND state = ? AND route IN (?, ?)', [JOB_ROUTES, jobId, 'failed', '/r/3', '/r/4'])) as {
			rows: { 'QUERY PLAN': unknown }[];
		};
		expect(JSON.stringify(plan.rows[0]!['QUERY PLAN'])).toContain('"Index Name":"pseo_generation_routes_failed"');
	});

	it('waits for no table lock when every index is in place, while another session holds writes open', async () => {
		const blocker = await db.knex.transaction();
		try {
			// ROW EXCLUSIVE is what every insert holds; a CREATE INDEX, even IF NOT EXISTS of an index that exists,
			// queues for a SHARE lock behind it.
			for (const table of [POSTS, JOB_ROUTES, BANDS_TABLE, PLAN_PAGES]) await blocker.raw('LOCK TABLE ?? IN ROW EXCLUSIVE MODE', [table]);
			const outcome = await Promise.race([
				ensureIndexes(db.knex).then(() => 'done'),
				new Promise((resolve) => setTimeout(() => resolve('blocked'), 5_000)),
			]);
			expect(outcome).toBe('done');
		} finally {
			await blocker.rollback();
		}
	});

	it('builds a missing index, rebuilds an invalid one and drops a redundant one', async () => {
		const indexState = async (name: string) =>
			((await db.knex.raw('SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = ?', [name])) as { rows: { valid: boolean }[] }).rows[0]?.valid ?? null;
		await db.knex.raw('DROP INDEX pseo_plan_pages_next');
		// What a concurrent build leaves when its session dies: the index is there, but not valid.
		await db.knex.raw("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'pseo_post_bands_route'::regclass");
		await db.knex.raw('CREATE INDEX pseo_posts_pseo_id_index ON ?? (pseo_id)', [POSTS]);
		expect(await indexState('pseo_plan_pages_next')).toBeNull();
		expect(await indexState('pseo_post_bands_route')).toBe(false);

		await ensureIndexes(db.knex);
		expect(await indexState('pseo_plan_pages_next')).toBe(true);
		expect(await indexState('pseo_post_bands_route')).toBe(true);
		expect(await indexState('pseo_posts_pseo_id_index')).toBeNull();
	});

	it('drops the invalid indexes an interrupted REINDEX CONCURRENTLY left beside ours, and nothing else', async () => {
		const exists = async (name: string) =>
			((await db.knex.raw('SELECT count(*)::int AS n FROM pg_class WHERE relname = ?', [name])) as { rows: { n: number }[] }).rows[0]!.n === 1;
		// What REINDEX CONCURRENTLY leaves when it dies: its new copy (and, dying while swapping, the old one) invalid.
		for (const name of ['pseo_post_bands_lookup_ccnew', 'pseo_post_bands_lookup_ccnew1', 'pseo_posts_pseo_route_unique_ccold', 'pseo_someone_elses_ccnew']) {
			await db.knex.raw(`CREATE INDEX ${name} ON ?? (pseo_id)`, [name.startsWith('pseo_posts') ? POSTS : BANDS_TABLE]);
			await db.knex.raw('UPDATE pg_index SET indisvalid = false WHERE indexrelid = ?::regclass', [name]);
		}
		// A valid index that only looks like a leftover is someone's own: it stays.
		await db.knex.raw('CREATE INDEX pseo_post_bands_route_ccnew ON ?? (route)', [BANDS_TABLE]);

		await ensureIndexes(db.knex);
		expect(await exists('pseo_post_bands_lookup_ccnew')).toBe(false);
		expect(await exists('pseo_post_bands_lookup_ccnew1')).toBe(false);
		expect(await exists('pseo_posts_pseo_route_unique_ccold')).toBe(false);
		expect(await exists('pseo_someone_elses_ccnew')).toBe(true);
		expect(await exists('pseo_post_bands_route_ccnew')).toBe(true);
		expect(await exists('pseo_post_bands_lookup')).toBe(true);
		for (const name of ['pseo_someone_elses_ccnew', 'pseo_post_bands_route_ccnew']) await db.knex.raw(`DROP INDEX ${name}`);
	});
});
