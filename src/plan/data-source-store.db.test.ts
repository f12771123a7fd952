import type { Knex } from 'knex';
import { beforeAll, expect, it } from 'vitest';
import { describeOnVendors, insertUser, insertWebsite } from '../../test/support/db-under-test.ts';
import { WEBSITES } from '../websites/website-store.ts';
import { claimSourceSync, markSourcesDue, readFollowings, recordSourceSync, releaseSourceSync, renewSourceLease, stopFollowing, type DataSource } from './data-source-store.ts';

/*
 * data-source-store.ts on the real schema: changes noted by several writers merge, a sync clears them only when none
 * came meanwhile, a lapsed claim can neither renew nor release what another claim holds, and a stop is not undone by
 * a sync that was running.
 */
describeOnVendors('followed collections\' store', (database) => {
	let knex: Knex;
	beforeAll(() => {
		knex = database().knex;
	});
	const SOURCE: DataSource = { collection: 'cities', filter: null, template: { route: '/{name}', title: '{name}' }, source: 'cities', language_code: 'en-GB', related: { countries: ['name'] } };
	const SUMMARY = { added: 1, updated: 0, unchanged: 0, retired: 0, waiting: 0 };
	const followingWebsite = async () => {
		const pseoId = await insertWebsite(knex, await insertUser(knex, 0));
		await knex.transaction((trx) => recordSourceSync(trx, pseoId, SOURCE, { trigger: 'import', ...SUMMARY }, new Date().toISOString()));
		return pseoId;
	};
	const row = async (pseoId: number) => (await knex(WEBSITES).where('id', pseoId).first('source_sync_due', 'source_sync_lease', 'source_sync_keys', 'data_source')) as Record<string, unknown>;

	it('merges the keys noted by several writers into one due sync, and clears them after it only if no change came meanwhile', async () => {
		const pseoId = await followingWebsite();
		expect((await readFollowings(knex)).find((following) => following.pseoId === pseoId)).toMatchObject({ source: SOURCE, since: expect.any(Number) });
		await markSourcesDue(knex, [{ pseoId, full: false, items: ['1', '2'] }], 0);
		await markSourcesDue(knex, [{ pseoId, full: false, items: ['2', '3'] }], 60_000);
		const claim = (await claimSourceSync(knex, pseoId, 60_000))!;
		expect(claim).toMatchObject({ pseoId, seq: 2, source: SOURCE, changed: { full: false, items: ['1', '2', '3'] } });
		// Claimed: nobody else gets it.
		expect(await claimSourceSync(knex, pseoId, 60_000)).toBeNull();

		// A change during the sync: the release keeps it due, with its key, for the next one.
		await markSourcesDue(knex, [{ pseoId, full: false, items: ['4'] }], 0);
		await releaseSourceSync(knex, claim);
		const next = (await claimSourceSync(knex, pseoId, 60_000))!;
		expect(next).toMatchObject({ seq: 3, changed: { full: false, items: ['1', '2', '3', '4'] } });
		await releaseSourceSync(knex, next);
		expect(await row(pseoId)).toMatchObject({ source_sync_due: null, source_sync_lease: null, source_sync_keys: null });
	});

	it('asks for a whole sync for a related change or too many keys, and leaves a website that follows nothing alone', async () => {
		const related = await followingWebsite();
		await markSourcesDue(knex, [{ pseoId: related, full: false, items: ['1'] }, { pseoId: related, full: true, items: [] }], 0);
		expect((await claimSourceSync(knex, related, 60_000))!.changed).toEqual({ full: true, items: [] });

		const many = await followingWebsite();
		await markSourcesDue(knex, [{ pseoId: many, full: false, items: Array.from({ length: 5001 }, (_, i) => String(i)) }], 0);
		expect((await claimSourceSync(knex, many, 60_000))!.changed).toEqual({ full: true, items: [] });

		const none = await insertWebsite(knex, await insertUser(knex, 0));
		await markSourcesDue(knex, [{ pseoId: none, full: false, items: ['1'] }], 0);
		expect(await row(none)).toMatchObject({ source_sync_due: null, source_sync_keys: null });
	});

	it('a claim whose lease lapsed and was taken can neither renew nor release the new one', async () => {
		const pseoId = await followingWebsite();
		await markSourcesDue(knex, [{ pseoId, full: false, items: ['1'] }], 0);
		const lapsed = (await claimSourceSync(knex, pseoId, -1000))!;
		const taken = (await claimSourceSync(knex, pseoId, 60_000))!;
		expect(taken).not.toBeNull();
		expect(await renewSourceLease(knex, lapsed, 60_000)).toBe(false);
		await releaseSourceSync(knex, lapsed);
		expect(Number((await row(pseoId))['source_sync_lease'])).toBe(taken.lease);
		expect(await renewSourceLease(knex, taken, 60_000)).toBe(true);
		await releaseSourceSync(knex, taken);
		expect(await row(pseoId)).toMatchObject({ source_sync_due: null, source_sync_lease: null });
	});

	it('a sync the following started does not undo a stop that came while it ran; an import with follow does', async () => {
		const pseoId = await followingWebsite();
		await stopFollowing(knex, pseoId, null);
		await knex.transaction((trx) => recordSourceSync(trx, pseoId, SOURCE, { trigger: 'follow', ...SUMMARY }, new Date().toISOString()));
		expect((await row(pseoId))['data_source']).toBeNull();
		await knex.transaction((trx) => recordSourceSync(trx, pseoId, SOURCE, { trigger: 'import', ...SUMMARY }, new Date().toISOString()));
		expect((await readFollowings(knex)).map((following) => following.pseoId)).toContain(pseoId);
	});
});
