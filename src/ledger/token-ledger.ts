import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { tokensMoved } from '../metrics/metrics.ts';
import { afterCommit } from '../shared/transaction.ts';
import { InsufficientTokensError } from '../errors/index.ts';
import { dbTimestamp, insertedId, isUniqueViolation, vendorOf } from '../shared/database.ts';

const USERS_TABLE = 'directus_users';
export const BALANCE_FIELD = 'pseo_token_balance';
export const LEDGER_TABLE = 'pseo_token_ledger';

type LedgerReason = 'grant' | 'charge' | 'refund';

/** Characters the ledger's `idempotency_key` column holds. */
const KEY_LENGTH = 255;

/**
 * An idempotency key as the ledger stores it: itself while it fits the column, else the SHA-256 of it. A page's
 * refund key names its route, and routes may have 500 characters: such a key failed the refund's insert, and with
 * it the transaction of every outcome of its chunk, at every retry. JavaScript counts UTF-16 units, never fewer
 * than the column's characters; a route begins with `/`, so no short key looks like a digest.
 */
function storedKey(key: string | null | undefined): string | null {
	if (!key) return null;
	return key.length <= KEY_LENGTH ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/** What a ledger row points at; all optional. */
export interface LedgerReference {
	/** The website the tokens were spent on, for its daily cap. */
	pseoId?: number | null;
	generationId?: number | null;
	mainJsonId?: number | null;
	route?: string | null;
	note?: string | null;
	/** When set, the same key is never booked twice: a retried refund is a no-op. */
	idempotencyKey?: string | null;
}

export interface LedgerEntry {
	id: number;
	amount: number;
	balanceAfter: number;
}

/*
 * These functions take the caller's transaction: the balance change and its ledger row commit together with the
 * state they pay for (a job row, a plan row), or not at all. They write with Knex because the balance update
 * must be one conditional statement, which the items services cannot express, and because a user may not edit
 * their own balance or ledger through Directus's permissions.
 */

/**
 * Locks the payer's row for the rest of the transaction. Every transaction that moves money calls it before it
 * touches any other row, so they all take their locks in one order (payer, then job or plan, then posts and
 * website) and cannot deadlock one another. InnoDB needs it most: inserting a row that references the user takes
 * a shared lock on the user's row, and two transactions that each hold one and then both update the balance
 * deadlock. PostgreSQL's foreign-key locks do not conflict with a balance update, so there it takes the weaker
 * row lock that an UPDATE of a non-key column takes anyway. SQLite serialises writers by itself.
 */
export async function lockPayer(trx: Knex.Transaction, userId: string): Promise<void> {
	const vendor = vendorOf(trx);
	if (vendor === 'sqlite') return;
	const query = trx(USERS_TABLE).where('id', userId).first('id');
	await (vendor === 'postgres' ? query.forNoKeyUpdate() : query.forUpdate());
}

/**
 * Takes `amount` tokens from `userId`. One conditional UPDATE (`balance >= amount`) makes an overdraft impossible
 * whatever the concurrency: PostgreSQL re-checks the condition after a concurrent writer commits, and SQLite
 * serialises writers. Throws InsufficientTokensError (402) when the balance is short.
 */
export async function chargeTokens(
	trx: Knex.Transaction,
	userId: string,
	amount: number,
	reference: LedgerReference = {},
): Promise<LedgerEntry> {
	assertAmount(amount);
	const updated = await trx(USERS_TABLE)
		.where('id', userId)
		.andWhere(BALANCE_FIELD, '>=', amount)
		.update({ [BALANCE_FIELD]: trx.raw('?? - ?', [BALANCE_FIELD, amount]) });
	if (updated === 0) {
		throw new InsufficientTokensError({ required: amount, balance: await readBalance(trx, userId) });
	}
	afterCommit(trx, () => tokensMoved.inc({ kind: 'charged' }, amount));
	return appendEntry(trx, userId, -amount, 'charge', reference);
}

/**
 * Gives `amount` tokens back. With an idempotency key the ledger row is written first, so a second refund of the
 * same thing fails on the unique key and changes nothing; returns null in that case.
 */
export async function refundTokens(
	trx: Knex.Transaction,
	userId: string,
	amount: number,
	reference: LedgerReference = {},
): Promise<LedgerEntry | null> {
	assertAmount(amount);
	if (amount === 0) return null;
	let id: number;
	try {
		// A savepoint, so that losing the race for the idempotency key leaves the caller's transaction usable.
		id = await trx.transaction(async (savepoint) => insertEntry(savepoint, userId, amount, 'refund', reference, null));
	} catch (error) {
		if (reference.idempotencyKey && isUniqueViolation(error)) return null;
		throw error;
	}
	await trx(USERS_TABLE)
		.where('id', userId)
		.update({ [BALANCE_FIELD]: trx.raw('?? + ?', [BALANCE_FIELD, amount]) });
	const balanceAfter = await readBalance(trx, userId);
	await trx(LEDGER_TABLE).where('id', id).update({ balance_after: balanceAfter });
	afterCommit(trx, () => tokensMoved.inc({ kind: 'refunded' }, amount));
	return { id, amount, balanceAfter };
}

/**
 * Sets a balance to `newBalance` (an admin's edit) and records the difference as a grant (negative when an admin
 * lowers it). Reads under a row lock (PostgreSQL, MySQL) so a concurrent charge cannot slip between read and write.
 */
export async function setBalanceAsGrant(
	trx: Knex.Transaction,
	userId: string,
	newBalance: number,
	note: string | null = null,
): Promise<LedgerEntry | null> {
	if (!Number.isSafeInteger(newBalance) || newBalance < 0) {
		throw new TypeError(`A token balance must be a non-negative integer, received ${JSON.stringify(newBalance)}`);
	}
	const current = await readBalance(trx, userId, true);
	const delta = newBalance - current;
	if (delta === 0) return null;
	await trx(USERS_TABLE).where('id', userId).update({ [BALANCE_FIELD]: newBalance });
	return appendEntry(trx, userId, delta, 'grant', { note });
}

/**
 * Records as a grant a balance that was set outside these functions (a user created with a starting balance):
 * the balance already holds the amount, so only the ledger row is written.
 */
export async function recordGrant(knex: Knex, userId: string, amount: number, note: string | null): Promise<LedgerEntry> {
	return knex.transaction((trx) => appendEntry(trx, userId, amount, 'grant', { note }));
}

/**
 * Tokens spent since `since`: charges less refunds, of one user, or of one website when `pseoId` is given. Read
 * inside the payer-locked transaction of a new charge, so concurrent charges of the same payer cannot both pass a
 * cap: each sees the other's charge or waits for it.
 *
 * `latest` is for a transaction that read before it locked the payer (a plan import, which locks the payer only
 * to charge, after storing its pages). On MySQL and MariaDB, REPEATABLE READ answers a plain SELECT from the
 * snapshot of the transaction's first read, seconds old there: charges committed meanwhile were not counted, and
 * the import passed a cap they had used up. A locking read sees the latest rows; its share locks (the user's or
 * the website's ledger rows, through their index) last only until the charge commits, which follows at once.
 * Every other caller locks the payer first, so its first read is already fresh. (PostgreSQL's READ COMMITTED
 * gives each statement a new snapshot; SQLite runs one writer at a time.)
 */
export async function spentSince(trx: Knex, since: Date, scope: { userId: string } | { pseoId: number }, latest = false): Promise<number> {
	const query = trx(LEDGER_TABLE)
		.whereIn('reason', ['charge', 'refund'])
		.andWhere('date_created', '>=', dbTimestamp(trx, since));
	if ('userId' in scope) query.andWhere('user_id', scope.userId);
	else query.andWhere('pseo_id', scope.pseoId);
	if (latest && vendorOf(trx) === 'mysql') query.forShare();
	const row = (await query.sum({ total: 'amount' }).first()) as { total: unknown } | undefined;
	return -Number(row?.total ?? 0);
}

/** The current balance of a user (0 for an unknown user). */
export async function readBalance(knex: Knex, userId: string, forUpdate = false): Promise<number> {
	let query = knex(USERS_TABLE).where('id', userId).first(BALANCE_FIELD);
	if (forUpdate && vendorOf(knex) !== 'sqlite') query = query.forUpdate();
	const row = (await query) as Record<string, unknown> | undefined;
	return Number(row?.[BALANCE_FIELD] ?? 0);
}

async function appendEntry(
	trx: Knex.Transaction,
	userId: string,
	amount: number,
	reason: LedgerReason,
	reference: LedgerReference,
): Promise<LedgerEntry> {
	const balanceAfter = await readBalance(trx, userId);
	const id = await insertEntry(trx, userId, amount, reason, reference, balanceAfter);
	return { id, amount, balanceAfter };
}

async function insertEntry(
	trx: Knex.Transaction,
	userId: string,
	amount: number,
	reason: LedgerReason,
	reference: LedgerReference,
	balanceAfter: number | null,
): Promise<number> {
	const rows = await trx(LEDGER_TABLE).insert(
		{
			user_id: userId,
			amount,
			reason,
			balance_after: balanceAfter,
			pseo_id: reference.pseoId ?? null,
			generation_id: reference.generationId ?? null,
			main_json_id: reference.mainJsonId ?? null,
			route: reference.route ?? null,
			note: reference.note ?? null,
			idempotency_key: storedKey(reference.idempotencyKey),
			date_created: dbTimestamp(trx),
		},
		['id'],
	);
	return insertedId(rows);
}

function assertAmount(amount: number): void {
	if (!Number.isSafeInteger(amount) || amount < 0) {
		throw new TypeError(`A token amount must be a non-negative integer, received ${JSON.stringify(amount)}`);
	}
}
