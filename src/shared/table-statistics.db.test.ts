import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { insertUser, insertWebsite, openTestDatabase, silentLogger, vendorAvailable, type TestDatabase } from '../../test/support/db-under-test.ts';
import { BANDS_TABLE } from '../quality/similarity-index.ts';
import { arrayLiteral } from './database.ts';
import { refreshStatistics } from './table-statistics.ts';

/*
 * The band rows of a bulk ingest on PostgreSQL, with the statistics a fast-growing table really has. Without fresh
 * statistics the planner read a chunk's statements through an index on `pseo_id`, or none, and filtered every row
 * of the website, so each chunk's cost grew with the website.
 */
describe.skipIf(!vendorAvailable('postgres'))('table statistics on postgres', () => {
	let db: TestDatabase;
	let knex: Knex;

	beforeAll(async () => {
		db = await openTestDatabase('postgres', 2);
		knex = db.knex;
	});
	afterAll(async () => db?.dispose());

	it('has no single-column pseo_id index on the band rows for the planner to misuse', async () => {
		const { rows } = (await knex.raw('SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ?', [BANDS_TABLE])) as { rows: { indexname: string; indexdef: string }[] };
		const names = rows.map((row) => row.indexname);
		expect(names).toEqual(expect.arrayContaining(['pseo_post_bands_lookup', 'pseo_post_bands_route']));
		expect(names).not.toContain('pseo_post_bands_pseo_id_index');
		expect(rows.filter((row) => /\(pseo_id\)$/.test(row.indexdef))).toEqual([]);
	});

	it('after a refresh, the planner knows the website grew by 40,000 band rows, and re-indexes a chunk through (pseo_id, route)', async () => {
		const pseoId = await insertWebsite(knex, await insertUser(knex, 0));
		await knex.raw(
			`INSERT INTO ?? (pseo_id, route, band_key) SELECT ?, '/page-' || (g / 20), (g % 20)::text || '.' || g::text FROM generate_series(1, 40000) AS g`,
			[BANDS_TABLE, pseoId],
		);
		await refreshStatistics(knex, [{ table: BANDS_TABLE, columns: ['pseo_id', 'route', 'band_key'] }], silentLogger);
		const stats = (await knex.raw('SELECT reltuples FROM pg_class WHERE relname = ?', [BANDS_TABLE])) as { rows: { reltuples: number }[] };
		expect(Number(stats.rows[0]!.reltuples)).toBeGreaterThanOrEqual(40000);

		// The lookup probes its index whatever the statistics (shared/database.ts probeRows); the re-indexing DELETE
		// of a chunk's 250 routes is the statement that needs them: without, it read every band row of the website.
		const routes = Array.from({ length: 250 }, (_, i) => `/page-${i * 7}`);
		const explained = (await knex.raw('EXPLAIN (FORMAT JSON) DELETE FROM ?? WHERE pseo_id = ? AND route = ANY(?::text[])', [BANDS_TABLE, pseoId, arrayLiteral(routes)])) as {
			rows: { 'QUERY PLAN': unknown }[];
		};
		const plan = JSON.stringify(explained.rows[0]!['QUERY PLAN']);
		expect(plan).toContain('"Index Name":"pseo_post_bands_route"');
		expect(plan).not.toContain('Seq Scan');
	});
});
