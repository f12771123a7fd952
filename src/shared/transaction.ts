import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Logger } from './logger.ts';

/*
 * Transactions that move money or claim work run again when the database aborts them to break a deadlock or a
 * serialization conflict. The database rolled the whole transaction back, so running it again from the start is
 * safe: nothing of the first attempt remains. InnoDB (MySQL, MariaDB) aborts one side of a lock cycle far more
 * readily than PostgreSQL, because a foreign-key check takes a shared lock that a later update of the same row
 * must upgrade; the callers also take their locks in one order (the payer's row first, see `lockPayer`) so that
 * such cycles are rare in the first place, and this bounded retry turns the rest into a short wait instead of a
 * 500.
 */

/** How often a conflicting transaction runs in all before its error is thrown. */
const MAX_ATTEMPTS = 5;

/** PostgreSQL's serialization_failure and deadlock_detected. */
const PG_CODES = new Set(['40001', '40P01']);
/** MySQL's ER_LOCK_DEADLOCK (1213) and ER_LOCK_WAIT_TIMEOUT (1205). */
const MYSQL_ERRNOS = new Set([1213, 1205]);
const MYSQL_CODES = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

/** True when the database aborted a statement or transaction that may simply run again. */
export function isTransientConflict(error: unknown): boolean {
	if (typeof error !== 'object' || error === null) return false;
	const { code, errno } = error as { code?: unknown; errno?: unknown };
	if (typeof code === 'string' && (PG_CODES.has(code) || MYSQL_CODES.has(code))) return true;
	return typeof errno === 'number' && MYSQL_ERRNOS.has(errno);
}

export interface RetryOptions {
	logger: Logger;
	/** What runs, for the log line of each retry ("generation trigger", "job claim"). */
	what: string;
	/** Fields added to each retry's log line. */
	context?: Record<string, unknown>;
}

/**
 * Runs `work` (one statement or one whole transaction) and runs it again, up to MAX_ATTEMPTS in all, when the
 * database aborts it for a deadlock or a serialization failure; each retry is logged. Any other error, and the
 * last conflict, is thrown as it is.
 */
export async function retryConflicts<T>(work: () => Promise<T>, options: RetryOptions): Promise<T> {
	for (let attempt = 1; ; attempt++) {
		try {
			return await work();
		} catch (error) {
			if (!isTransientConflict(error) || attempt >= MAX_ATTEMPTS) throw error;
			options.logger.warn(
				{ ...options.context, attempt, code: (error as { code?: unknown }).code },
				`pseo ${options.what}: the database aborted the transaction on a lock conflict; running it again`,
			);
			// A short, growing and jittered pause, so that the two sides of a deadlock do not meet again at once.
			await sleep(Math.floor((10 + Math.random() * 40) * attempt));
		}
	}
}

/** `knex.transaction(work)`, run again from the start on a deadlock or serialization failure (see above). */
export function transact<T>(knex: Knex, work: (trx: Knex.Transaction) => Promise<T>, options: RetryOptions): Promise<T> {
	return retryConflicts(() => runTransaction(knex, work), options);
}

const afterCommitEffects = new WeakMap<Knex.Transaction, (() => void)[]>();

/**
 * Runs `effect` once `trx` has committed, never when it rolls back or runs again: for figures that count committed
 * work (metrics). A `trx` that is no transaction runs it at once. Effects run only for transactions begun with
 * `runTransaction` or `transact`.
 */
export function afterCommit(trx: Knex | Knex.Transaction, effect: () => void): void {
	if (!(trx as Knex.Transaction).isTransaction) return effect();
	const effects = afterCommitEffects.get(trx as Knex.Transaction);
	if (effects) effects.push(effect);
	else afterCommitEffects.set(trx as Knex.Transaction, [effect]);
}

/** `knex.transaction(work)`, then the effects its work registered with `afterCommit`. */
export async function runTransaction<T>(knex: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
	let current: Knex.Transaction | undefined;
	const result = await knex.transaction((trx) => {
		current = trx;
		return work(trx);
	});
	for (const effect of (current && afterCommitEffects.get(current)) ?? []) effect();
	return result;
}
