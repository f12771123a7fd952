import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { insertUser, insertWebsite, openTestDatabase, vendorAvailable, type TestDatabase } from '../../test/support/db-under-test.ts';
import { BANDS_TABLE, bandLookup } from './similarity-index.ts';

/*
 * The near-duplicate lookup of a batch chunk on PostgreSQL: 250 pages, 5,000 band keys. Written as
 * `band_key = ANY(...)`, the planner chose a scan of every band row of the website whenever it thought the website
 * small (a bulk ingest grows it faster than statistics follow) and even with fresh statistics at 20,000 posts, so
 * each chunk's lookup grew with the website. The lookup must stay index probes with or without statistics.
 */
describe.skipIf(!vendorAvailable('postgres'))('band lookup on postgres', () => {
	let db: TestDatabase;
	let knex: Knex;
	let pseoId: number;
	const keys = Array.from({ length: 5000 }, (_, i) => `${(i % 20).toString(36)}.${(i * 7919).toString(36)}`);

	const planOf = async (): Promise<string> => {
		const { sql, bindings } = bandLookup(knex, pseoId, keys).toSQL();
		const explained = (await knex.raw(`EXPLAIN (FORMAT JSON) ${sql}`, bindings)) as { rows: { 'QUERY PLAN': unknown }[] };
		return JSON.stringify(explained.rows[0]!['QUERY PLAN']);
	};

	beforeAll(async () => {
		db = await openTestDatabase('postgres', 2);
		knex = db.knex;
		pseoId = await insertWebsite(knex, await insertUser(knex, 0));
		// 4,000 posts' band rows, and two rows that share a key with the chunk.
		await knex.raw(
			`INSERT INTO ?? (pseo_id, route, band_key) SELECT ?, '/page-' || (g / 20), (g % 20)::text || '.x' || g::text FROM generate_series(1, 80000) AS g`,
			[BANDS_TABLE, pseoId],
		);
		await knex(BANDS_TABLE).insert([
			{ pseo_id: pseoId, route: '/twin', band_key: keys[7] },
			{ pseo_id: pseoId, route: '/twin', band_key: keys[4007] },
		]);
	});
	afterAll(async () => db?.dispose());

	it('probes the (pseo_id, band_key) index once per key before the table has statistics', async () => {
		const plan = await planOf();
		expect(plan).toContain('"Node Type":"Nested Loop"');
		expect(plan).toContain('"Index Name":"pseo_post_bands_lookup"');
		expect(plan).not.toContain('Seq Scan');
		expect(plan).not.toContain('Hash Join');
	});

	it('probes the index with fresh statistics too, and finds exactly the rows that share a key', async () => {
		await knex.raw('ANALYZE ??', [BANDS_TABLE]);
		const plan = await planOf();
		expect(plan).toContain('"Index Name":"pseo_post_bands_lookup"');
		expect(plan).not.toContain('Seq Scan');
		const { rows } = (await bandLookup(knex, pseoId, keys)) as { rows: { route: string; band_key: string }[] };
		expect(rows.map((row) => `${row.route} ${row.band_key}`).sort()).toEqual([`/twin ${keys[4007]}`, `/twin ${keys[7]}`].sort());
	});
});
