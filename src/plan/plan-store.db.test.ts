import { expect, it } from 'vitest';
import { describeOnVendors, insertUser, insertWebsite, silentLogger } from '../../test/support/db-under-test.ts';
import { LEDGER_TABLE, readBalance } from '../ledger/token-ledger.ts';
import { extendLock, PLANS, releaseAbandonedPlans, startPlan } from './plan-store.ts';

/*
 * A content plan whose request died with its instance keeps its user's plan lock and its charge until the lock
 * lapses; the sweep then fails it and refunds it once, whoever asks for a plan next, and leaves plans whose lock is
 * still held alone.
 */
describeOnVendors('abandoned content plans', (database) => {
	it('are failed and refunded once by the sweep, and a plan still being generated is left alone', async () => {
		const knex = database().knex;
		const start = async (userId: string, lockMs: number) =>
			startPlan(knex, { userId, pseoId: await insertWebsite(knex, userId), languageCode: 'en-US', description: null, rate: 10, lockMs, userCap: null }, silentLogger);
		const died = await insertUser(knex, 100);
		const alive = await insertUser(knex, 100);
		// A lock that lapsed a minute ago (its request's instance died), and one still held.
		const abandoned = await start(died, -60_000);
		const running = await start(alive, 60_000);
		expect([await readBalance(knex, died), await readBalance(knex, alive)]).toEqual([90, 90]);

		expect(await releaseAbandonedPlans(knex, silentLogger)).toBe(1);
		expect(await releaseAbandonedPlans(knex, silentLogger)).toBe(0);

		const plan = (await knex(PLANS).where('id', abandoned).first('status', 'active_user_id')) as { status: string; active_user_id: string | null };
		expect(plan).toEqual({ status: 'failed', active_user_id: null });
		expect(await readBalance(knex, died)).toBe(100);
		const refunds = await knex(LEDGER_TABLE).where({ user_id: died, reason: 'refund' }).count({ n: '*' }).first();
		expect(Number(refunds!['n'])).toBe(1);
		// The live plan keeps its lock and its charge.
		expect(await extendLock(knex, running, alive, 60_000)).toBe(true);
		expect(await readBalance(knex, alive)).toBe(90);
	});
});
