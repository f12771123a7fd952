import { describe, inject } from 'vitest';
import type { Leg } from './directus.ts';

/**
 * The legs of the suites that test the engine (durability, multi-instance): both database vendors on the
 * project's own Directus 12. PostgreSQL is skipped (and says so) when unreachable.
 */
export const LEGS: Leg[] = ['sqlite', 'postgres'];

/**
 * The legs of the suites that cover the interface and its concurrency races (websites, authentication,
 * generation, content plan, sitemap): the two above, SQLite on Directus 11.16, the other host the bundle supports
 * (`directus:extension.host`), and MariaDB, the third database vendor.
 */
const INTERFACE_LEGS: Leg[] = [...LEGS, 'sqlite-d11', 'mariadb'];
/**
 * The legs of the suites that build on the interface and store much (plans, plan pages and imports, jobs and their
 * controls): both database vendors of the engine and MariaDB, whose SQL differs, on Directus 12. (The quality gate
 * and the sitemap run on LEGS; their MariaDB SQL is the database tests'.)
 * Directus 11 differs from 12 in what the foundation suites cover (the install, the schema, roles, tokens, the
 * routes' answers), which its leg there proves; running every suite on it again cost about a minute and a half of a
 * run near its time limit.
 */
export const ENGINE_INTERFACE_LEGS: Leg[] = [...LEGS, 'mariadb'];

/**
 * The legs of the interface's foundation suites (websites, tokens, roles and authentication): those above, and
 * `stock`, the packed bundle installed into the newest Directus release and started as admins start it
 * (instance.ts, stock-install.ts). The job and plan suites skip it: each leg costs a minute of a run that is near
 * its time limit, and the foundation suites already prove the install, the schema, the roles and a restart.
 */
export const CORE_INTERFACE_LEGS: Leg[] = [...INTERFACE_LEGS, 'stock'];

export function legAvailable(leg: Leg): boolean {
	if (leg === 'postgres') return inject('postgresAvailable');
	if (leg === 'mariadb') return inject('mariadbAvailable');
	return true;
}

/**
 * The environment of the Directus that the engine's suites share (directus.ts, `shareDirectusWithFake`): what they
 * all agree on, so that one instance per leg serves them all. A suite that needs other values asks for its own
 * environment, and shares that instance with the suites that ask for the same.
 */
export const ENGINE_ENV: Record<string, string> = {
	// Retries of a refused provider call are the point of some tests, not their waiting time.
	PSEO_PROVIDER_BACKOFF_MS: '20',
	// The sitemap and data fixtures are served on loopback.
	PSEO_ALLOW_PRIVATE_NETWORKS: 'true',
	// A lease that outlives a loaded machine's stalls: no job of a shared instance is taken over halfway by its own
	// sweeper. The suites that test takeovers run their own instances with short leases.
	PSEO_LEASE_MS: '15000',
	// Plans of 12 pages are quick to generate and to check; a plan lock lapses in 3 seconds after a killed request.
	PSEO_PLAN_PAGES: '12',
	PSEO_PLAN_LOCK_MS: '3000',
	// A followed collection's changes are gathered for a second, not five (plan-follow-collection.test.ts).
	PSEO_SOURCE_SYNC_DELAY_MS: '1000',
};

/**
 * `env` for a suite that changes Directus's schema (creates or deletes collections, fields or relations) on `leg`:
 * on SQLite, an instance the suite does not share with the others. Directus 12.3 reads its schema inside the
 * transaction of a user mutation (its licence's seat count, `captureSeatCount` in validate-user-count-integrity.js,
 * through `getSchema({ database: trx })`). When a schema change has just emptied the schema cache, and another request
 * is rebuilding it, that rebuild waits for SQLite's one connection, which the transaction holds, and the transaction
 * waits for the rebuild, three times CACHE_SCHEMA_SYNC_TIMEOUT (30 s), before its request fails with "Failed to get
 * Schema information: hit infinite loop"; every request of the instance waits with them. On a shared instance one
 * suite's new collection met another suite's new user (plan-import.test.ts failed so in 2 of 6 full runs). Within
 * one suite the requests come one after another, and a schema change's own request rebuilds the cache before it
 * answers. PostgreSQL and MariaDB have a pool of connections, so their legs share as before.
 */
export function schemaEditingEnv(leg: Leg, env: Record<string, string>, suite: string): Record<string, string> {
	return leg === 'sqlite' ? { ...env, TEST_OWN_INSTANCE: suite } : env;
}

/** Tokens per imported plan page on the accounting instance below. */
export const IMPORTED_PAGE_RATE = 2;
/** Each user's daily cap on the accounting instance below: every user of it spends less than this a day but one. */
export const USER_DAILY_CAP = 45;

/**
 * The engine's environment with charges for imported pages, a per-user daily cap and AI plans of 500 pages: the plan
 * import's suites, the cap's test and the 500-page plan's test share it. Each user of this instance spends less
 * than the cap a day, but the cap's own; its plans are imported or seeded, but the 500-page plan's (one boot of an
 * instance per leg is several seconds of a core, a test's 500-page plan one of a second).
 */
export const ACCOUNTING_ENV: Record<string, string> = {
	...ENGINE_ENV,
	PSEO_TOKEN_PER_IMPORTED_PAGE: String(IMPORTED_PAGE_RATE),
	PSEO_USER_DAILY_TOKEN_CAP: String(USER_DAILY_CAP),
	PSEO_PLAN_PAGES: '500',
};

/** The delay within which a followed collection's changes reach the plan on the engine's instances. */
export const SOURCE_SYNC_DELAY_MS = 1000;

/**
 * One `describe` per leg, titled with it (`title` with `%s`), each skipped, and reported so, where this machine does
 * not have the leg's database.
 */
export function describeLegs(title: string, legs: Leg[], body: (leg: Leg) => void): void {
	describe.each(legs)(title, (leg) => {
		describe.skipIf(!legAvailable(leg))(`${leg}`, () => body(leg));
	});
}
