import { inject } from 'vitest';
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
