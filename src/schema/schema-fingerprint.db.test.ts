import type { Knex } from 'knex';
import { beforeAll, expect, it } from 'vitest';
import snapshot from '../../snapshots/pseo-schema.json' with { type: 'json' };
import { describeOnVendors, insertUser, insertWebsite } from '../../test/support/db-under-test.ts';
import { POSTS } from '../posts/post-store.ts';
import { SCHEMA_STATE, schemaFingerprint, storedFingerprint, storeFingerprint } from './schema-fingerprint.ts';

/*
 * The fingerprint that lets a start skip Directus's whole-schema snapshot, on copies of a template that a real
 * start-up made: it must be what the last install stored, change with every input of the install, and not with
 * what the install does not read (data, and other collections).
 */
describeOnVendors('the schema fingerprint', (database) => {
	let knex: Knex;
	const fingerprint = () => schemaFingerprint(knex, snapshot);

	beforeAll(() => {
		knex = database().knex;
	});

	it('is the one the template\'s start-up stored after its install, so the next start skips the snapshot', async () => {
		const stored = await storedFingerprint(knex);
		expect(stored).toMatch(/^[0-9a-f]{64}$/);
		expect(await fingerprint()).toBe(stored);
	});

	it('does not change with data, nor with another collection\'s fields', async () => {
		const before = await fingerprint();
		await insertWebsite(knex, await insertUser(knex, 0));
		await knex('directus_collections').insert({ collection: 'someone_elses' });
		await knex('directus_fields').insert({ collection: 'someone_elses', field: 'title', interface: 'input' });
		expect(await fingerprint()).toBe(before);
		await knex('directus_fields').where({ collection: 'someone_elses' }).delete();
		await knex('directus_collections').where({ collection: 'someone_elses' }).delete();
	});

	it('changes when an admin edits a field of the extension, and is the same again once it is put back', async () => {
		const before = await fingerprint();
		const row = (await knex('directus_fields').where({ collection: 'pseo', field: 'website_url' }).first('note')) as { note: string | null };
		await knex('directus_fields').where({ collection: 'pseo', field: 'website_url' }).update({ note: 'Edited by an admin' });
		expect(await fingerprint()).not.toBe(before);
		await knex('directus_fields').where({ collection: 'pseo', field: 'website_url' }).update({ note: row.note });
		expect(await fingerprint()).toBe(before);
	});

	it('changes when the token balance\'s field row is gone from directus_users, which the install would create again', async () => {
		const before = await fingerprint();
		const balance = { collection: 'directus_users', field: 'pseo_token_balance' };
		await knex('directus_fields').where(balance).update({ field: 'renamed_by_hand' });
		expect(await fingerprint()).not.toBe(before);
		await knex('directus_fields').where({ collection: 'directus_users', field: 'renamed_by_hand' }).update(balance);
		expect(await fingerprint()).toBe(before);
	});

	it('changes with a column of the extension\'s tables, and with a migration of Directus', async () => {
		const before = await fingerprint();
		await knex.schema.alterTable(POSTS, (table) => table.string('added_by_hand'));
		const withColumn = await fingerprint();
		expect(withColumn).not.toBe(before);
		await knex('directus_migrations').insert({ version: '99999999A', name: 'A later Directus' });
		expect(await fingerprint()).not.toBe(withColumn);
		await knex('directus_migrations').where({ version: '99999999A' }).delete();
		await knex.schema.alterTable(POSTS, (table) => table.dropColumn('added_by_hand'));
		expect(await fingerprint()).toBe(before);
	});

	it('is stored in one row, the last install\'s', async () => {
		await storeFingerprint(knex, 'a'.repeat(64));
		await storeFingerprint(knex, 'b'.repeat(64));
		expect(await knex(SCHEMA_STATE).select('fingerprint')).toEqual([{ fingerprint: 'b'.repeat(64) }]);
		expect(await storedFingerprint(knex)).toBe('b'.repeat(64));
	});
});
