/**
 * The extension's data modules (job store, token ledger) driven directly through Knex, on a fresh copy of the
 * template database that the integration setup bootstrapped with Directus and the extension's schema: the real
 * tables, indexes and foreign keys, without an HTTP layer in between.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import { afterAll, beforeAll, describe, inject } from 'vitest';
import { insertJob } from '../../src/engine/job-store.ts';
import type { JobMode } from '../../src/engine/job-types.ts';
import type { Logger } from '../../src/shared/logger.ts';
import { cloneMariaDatabase, dropMariaDatabase } from './mariadb.ts';
import { MARIADB, PG } from './paths.ts';
import { cloneDatabase, dropDatabase } from './postgres.ts';

export type Vendor = 'postgres' | 'mariadb';

/** The vendors these suites run on; SQLite's native driver is built for the Node that runs Directus, not vitest. */
export const VENDORS: Vendor[] = ['postgres', 'mariadb'];

export function vendorAvailable(vendor: Vendor): boolean {
	return vendor === 'postgres' ? inject('postgresAvailable') : inject('mariadbAvailable');
}

export interface TestDatabase {
	knex: Knex;
	dispose(): Promise<void>;
}

/** A Knex on a fresh copy of the vendor's template; `pool` connections, so that tests can race real sessions. */
export async function openTestDatabase(vendor: Vendor, pool = 12): Promise<TestDatabase> {
	const name = `${inject('pgPrefix')}_unit_${randomBytes(4).toString('hex')}`;
	if (vendor === 'postgres') {
		await cloneDatabase(inject('pgTemplate'), name);
		const knex = knexFactory({ client: 'pg', connection: { ...PG, database: name }, pool: { min: 0, max: pool } });
		return { knex, dispose: async () => (await knex.destroy(), await dropDatabase(name)) };
	}
	await cloneMariaDatabase(inject('mariadbTemplate'), name);
	const knex = knexFactory({ client: 'mysql2', connection: { ...MARIADB, database: name }, pool: { min: 0, max: pool }, log: { warn: mysqlWarning } });
	return { knex, dispose: async () => (await knex.destroy(), await dropMariaDatabase(name)) };
}

/**
 * Knex's warnings on MySQL, but the one Directus's own Knex drops too (api/src/database): `.returning()` is ignored
 * there, which the data modules know. Printed, it was a line per insert, thousands in a run.
 */
function mysqlWarning(message: string): void {
	if (message.startsWith('.returning()')) return;
	console.warn(message);
}

export const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** A Directus user with a token balance (set directly: the balance's own ledger row is not the point here). */
export async function insertUser(knex: Knex, balance: number): Promise<string> {
	const id = randomUUID();
	await knex('directus_users').insert({ id, email: `unit-${id}@example.com`, status: 'active', pseo_token_balance: balance });
	return id;
}

export async function insertWebsite(knex: Knex, userId: string): Promise<number> {
	const [row] = await knex('pseo').insert(
		{ website_url: 'https://example.com', master_prompt: 'Write helpful pages.', backend_user_id: userId, post_counts_total: 0 },
		['id'],
	);
	return Number(typeof row === 'object' ? (row as { id: number }).id : row);
}

/** A pending job of `routes.length` pages at `rate` tokens a page, inserted as the trigger does. */
export async function insertPendingJob(knex: Knex, job: { userId: string; pseoId: number; routes: string[]; rate?: number; mode?: JobMode }): Promise<number> {
	return knex.transaction((trx) =>
		insertJob(trx, {
			pseoId: job.pseoId,
			userId: job.userId,
			mode: job.mode ?? 'bulk',
			kind: job.mode ?? 'bulk',
			routes: job.routes.map((route, index) => ({ route, title: `Page ${route}`, priority: job.routes.length - index })),
			rate: job.rate ?? 5,
			planId: null,
		}),
	);
}

/**
 * Waits until some other session of the test database (other suites' databases do not count) waits for a lock: a
 * transaction the test holds open has provably stopped the code under test at a known statement.
 */
export async function waitForLockWaiter(knex: Knex, timeoutMs = 10_000): Promise<void> {
	const client = String((knex.client as { config?: { client?: unknown } }).config?.client);
	const sql =
		client === 'pg'
			? `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`
			: `SELECT count(*) AS n FROM information_schema.innodb_trx t JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
				WHERE t.trx_state = 'LOCK WAIT' AND p.db = DATABASE()`;
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		// Every 100 ms: polling MariaDB's INNODB_TRX every 20 ms kept the session under test from reaching its lock wait.
		await new Promise((resolve) => setTimeout(resolve, 100));
		const result = (await knex.raw(sql)) as { rows?: { n: number }[] } | [{ n: number }[]];
		const rows = 'rows' in result && result.rows ? result.rows : (result as [{ n: number }[]])[0];
		if (Number(rows[0]?.n ?? 0) > 0) return;
		if (Date.now() > deadline) throw new Error(`no session waited for a lock within ${timeoutMs} ms`);
	}
}

/**
 * A suite on each vendor this machine has: `body` registers its tests with a getter of the suite's database, a
 * fresh copy of the template opened before them (with `pool` connections) and dropped after them.
 */
export function describeOnVendors(title: string, body: (database: () => TestDatabase, vendor: Vendor) => void, pool?: number): void {
	describe.each(VENDORS)(`${title} on %s`, (vendor) => {
		describe.skipIf(!vendorAvailable(vendor))(vendor, () => {
			let db: TestDatabase | undefined;
			beforeAll(async () => {
				db = await openTestDatabase(vendor, pool);
			});
			afterAll(async () => db?.dispose());
			body(() => {
				if (!db) throw new Error(`the ${vendor} database of "${title}" is not open`);
				return db;
			}, vendor);
		});
	});
}
