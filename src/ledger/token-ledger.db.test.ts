import { beforeAll, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { describeOnVendors, insertUser, silentLogger } from '../../test/support/db-under-test.ts';
import { InsufficientTokensError } from '../errors/index.ts';
import { transact } from '../shared/transaction.ts';
import { chargeTokens, lockPayer, LEDGER_TABLE, readBalance, refundTokens, setBalanceAsGrant } from './token-ledger.ts';

/*
 * The ledger's money rules on the real schema of PostgreSQL and MariaDB: a charge never overdraws whatever the
 * concurrency, a keyed refund books once, and the balance always equals its ledger.
 */

describeOnVendors('token ledger', (database) => {
	let knex: Knex;

	beforeAll(() => {
		knex = database().knex;
	});

	const ledger = async (userId: string) =>
		(await knex(LEDGER_TABLE).where('user_id', userId).orderBy('id').select('amount', 'reason', 'balance_after', 'idempotency_key')) as {
			amount: number;
			reason: string;
			balance_after: number | null;
			idempotency_key: string | null;
		}[];

	it('a charge the balance cannot pay throws 402 and changes nothing', async () => {
		const userId = await insertUser(knex, 9);
		const error = await knex.transaction((trx) => chargeTokens(trx, userId, 10)).catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(InsufficientTokensError);
		expect((error as { status: number }).status).toBe(402);
		expect(await readBalance(knex, userId)).toBe(9);
		expect(await ledger(userId)).toEqual([]);
	});

	it('ten simultaneous charges against a balance for three: three succeed, the balance never goes below zero', async () => {
		const userId = await insertUser(knex, 35);
		const results = await Promise.allSettled(
			Array.from({ length: 10 }, () =>
				transact(
					knex,
					async (trx) => {
						await lockPayer(trx, userId);
						return chargeTokens(trx, userId, 10, { note: 'race' });
					},
					{ logger: silentLogger, what: 'test charge' },
				),
			),
		);
		expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(3);
		for (const result of results) if (result.status === 'rejected') expect(result.reason).toBeInstanceOf(InsufficientTokensError);
		expect(await readBalance(knex, userId)).toBe(5);
		const rows = await ledger(userId);
		expect(rows.map((row) => Number(row.amount))).toEqual([-10, -10, -10]);
		expect(rows.map((row) => Number(row.balance_after)).sort((a, b) => b - a)).toEqual([25, 15, 5]);
	});

	it('the same refund key books once, also when two refunds race, and leaves the transaction usable', async () => {
		const userId = await insertUser(knex, 0);
		const key = `refund:test:${userId}`;
		expect(await knex.transaction((trx) => refundTokens(trx, userId, 5, { idempotencyKey: key }))).toMatchObject({ amount: 5, balanceAfter: 5 });
		const second = await knex.transaction(async (trx) => {
			const again = await refundTokens(trx, userId, 5, { idempotencyKey: key });
			// The lost race for the key did not poison the transaction: it can still book something else.
			await refundTokens(trx, userId, 1, { note: 'after the duplicate' });
			return again;
		});
		expect(second).toBeNull();
		const raced = await Promise.all(
			[1, 2, 3].map(() => knex.transaction((trx) => refundTokens(trx, userId, 7, { idempotencyKey: `${key}:raced` })).catch((error: unknown) => error)),
		);
		expect(raced.filter((result) => result !== null && !(result instanceof Error))).toHaveLength(1);
		expect(await readBalance(knex, userId)).toBe(5 + 1 + 7);
		expect((await ledger(userId)).map((row) => [row.reason, Number(row.amount)])).toEqual([
			['refund', 5],
			['refund', 1],
			['refund', 7],
		]);
	});

	it('a key longer than the column (a page refund naming a 500-character route) books once, under its digest', async () => {
		const userId = await insertUser(knex, 0);
		const route = `/${'long-route-'.repeat(45)}`.slice(0, 500);
		const key = `refund:generation:123:${route}`;
		for (let i = 0; i < 2; i++) await knex.transaction((trx) => refundTokens(trx, userId, 3, { route, idempotencyKey: key }));
		expect(await readBalance(knex, userId)).toBe(3);
		const rows = (await knex(LEDGER_TABLE).where('user_id', userId).select('route', 'idempotency_key')) as { route: string; idempotency_key: string }[];
		expect(rows).toHaveLength(1);
		expect(rows[0]!.route).toBe(route);
		expect(rows[0]!.idempotency_key).toMatch(/^sha256:[0-9a-f]{64}$/);
		// A key that fits is stored as it is.
		await knex.transaction((trx) => refundTokens(trx, userId, 1, { idempotencyKey: 'refund:generation:123:/short' }));
		expect(await knex(LEDGER_TABLE).where({ user_id: userId, idempotency_key: 'refund:generation:123:/short' }).first('id')).toBeTruthy();
	});

	it('a refund without a key books every time', async () => {
		const userId = await insertUser(knex, 0);
		for (let i = 0; i < 3; i++) await knex.transaction((trx) => refundTokens(trx, userId, 2));
		expect(await readBalance(knex, userId)).toBe(6);
		expect(await ledger(userId)).toHaveLength(3);
	});

	it('an admin\'s new balance is booked as a grant of the difference, and the balance equals its ledger', async () => {
		const userId = await insertUser(knex, 0);
		await knex.transaction((trx) => setBalanceAsGrant(trx, userId, 100, 'top-up'));
		await knex.transaction((trx) => chargeTokens(trx, userId, 30));
		await knex.transaction((trx) => setBalanceAsGrant(trx, userId, 50, 'lowered'));
		expect(await knex.transaction((trx) => setBalanceAsGrant(trx, userId, 50))).toBeNull();
		const rows = await ledger(userId);
		expect(rows.map((row) => [row.reason, Number(row.amount), Number(row.balance_after)])).toEqual([
			['grant', 100, 100],
			['charge', -30, 70],
			['grant', -20, 50],
		]);
		expect(await readBalance(knex, userId)).toBe(rows.reduce((sum, row) => sum + Number(row.amount), 0));
	});
});
