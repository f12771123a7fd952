import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertUser, insertWebsite, openTestDatabase, vendorAvailable, type TestDatabase } from '../../test/support/db-under-test.ts';
import { POSTS } from '../posts/post-store.ts';
import { ensureIndexes } from './install-schema.ts';

/*
 * Post bodies on PostgreSQL: the start-up of the extension (which made the template these tests clone) set the
 * body column to LZ4, a long body is stored with it, running the start-up again leaves the column alone, and a column set back to pglz is set to LZ4 again.
 */
describe.skipIf(!vendorAvailable('postgres'))('post body compression on postgres', () => {
	let db: TestDatabase;
	beforeAll(async () => {
		db = await openTestDatabase('postgres', 2);
	});
	afterAll(async () => db?.dispose());

	it('stores a long body with LZ4, and a second start-up does not alter the table again', async () => {
		const pseoId = await insertWebsite(db.knex, await insertUser(db.knex, 0));
		const body = Array.from({ length: 900 }, (_, i) => ['local', 'service', 'guide', 'price', 'team'][(i * 7) % 5]).join(' ');
		await db.knex(POSTS).insert({ pseo_id: pseoId, route: '/long', status: 'draft', title: 'Long', body });
		const stored = (await db.knex.raw('SELECT pg_column_compression(body) AS method FROM ?? WHERE route = ?', [POSTS, '/long'])) as { rows: { method: string }[] };
		expect(stored.rows[0]!.method).toBe('lz4');

		// An ALTER of the column writes a new version of its pg_attribute row.
		const version = async () =>
			((await db.knex.raw("SELECT xmin::text AS version FROM pg_attribute WHERE attrelid = ?::regclass AND attname = 'body'", [POSTS])) as { rows: { version: string }[] }).rows[0]!.version;
		const before = await version();
		await ensureIndexes(db.knex);
		expect(await version()).toBe(before);
		await db.knex.raw('ALTER TABLE ?? ALTER COLUMN ?? SET COMPRESSION pglz', [POSTS, 'body']);
		const reset = await version();
		expect(reset).not.toBe(before);
		await ensureIndexes(db.knex);
		expect(await version()).not.toBe(reset);
		const column = (await db.knex.raw("SELECT attcompression AS method FROM pg_attribute WHERE attrelid = ?::regclass AND attname = 'body'", [POSTS])) as { rows: { method: string }[] };
		expect(column.rows[0]!.method).toBe('l');
	});
});
