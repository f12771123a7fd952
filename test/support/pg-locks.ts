/**
 * Row locks held by a test on the shared PostgreSQL database, to park a worker inside a transaction at a known
 * statement: the worker's write waits on the lock, so it is provably in flight when the test acts.
 */
import pg from 'pg';
import { PG } from './paths.ts';

export interface HeldLock {
	/** Commits the test's transaction, which lets the waiting writers go on. */
	release(): Promise<void>;
}

/** The locks taken and not yet released: a test that fails while it holds one leaves it to `releaseHeldLocks`. */
const held = new Set<HeldLock>();

/** Locks one user's row (`directus_users`, the payer's row that every money transaction locks first). */
export async function lockUserRow(database: string, userId: string): Promise<HeldLock> {
	const client = new pg.Client({ ...PG, database, connectionTimeoutMillis: 5000 });
	await client.connect();
	await client.query('BEGIN');
	await client.query('SELECT id FROM directus_users WHERE id = $1 FOR UPDATE', [userId]);
	const lock: HeldLock = {
		release: async () => {
			if (!held.delete(lock)) return;
			await client.query('COMMIT');
			await client.end();
		},
	};
	held.add(lock);
	return lock;
}

/**
 * Releases every lock still held, for a suite's `afterEach`. A test that failed while a worker's write waited on
 * its lock would otherwise leave that worker waiting, and the worker's graceful stop waiting with it, until the
 * hook's timeout.
 */
export async function releaseHeldLocks(): Promise<void> {
	await Promise.all([...held].map((lock) => lock.release()));
}

/** How many sessions of `database` are waiting on a lock right now. */
export async function lockWaiters(database: string): Promise<number> {
	const client = new pg.Client({ ...PG, database, connectionTimeoutMillis: 5000 });
	await client.connect();
	try {
		const { rows } = await client.query<{ n: number }>(
			`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`,
			[database],
		);
		return rows[0]?.n ?? 0;
	} finally {
		await client.end();
	}
}
