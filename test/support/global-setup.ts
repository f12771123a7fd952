import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { ensureHosts } from '../../scripts/lib/hosts.mjs';
import { installBundle } from '../../scripts/lib/install-bundle.mjs';
import { copyDatabase, launchDirectus, legHome, mariadbEnv, postgresEnv } from './instance.ts';
import { resetBootLog } from './boot-log.ts';
import { watchConnections } from './connection-watch.ts';
import { startInstanceBroker } from './instance-broker.ts';
import { packBundle } from './stock-install.ts';
import { dropMariaDatabase, mariaDatabasesLike, mariadbAdmin, mariadbReachable } from './mariadb.ts';
import { bootstrapTemplate, buildExtension } from './templates.ts';
import { CACHE_DIR, MARIADB, PG, ROOT, SHARED_EXTENSIONS } from './paths.ts';
import { dropDatabase, pgAdmin, postgresReachable } from './postgres.ts';

declare module 'vitest' {
	export interface ProvidedContext {
		sqliteTemplate: string;
		/** The SQLite template of the stock leg: `directus bootstrap`, then a first `directus start` with the packed bundle. */
		stockTemplate: string;
		/** The SQLite template bootstrapped by the Directus 11 host (leg `sqlite-d11`). */
		sqliteD11Template: string;
		pgTemplate: string;
		postgresAvailable: boolean;
		/** Name prefix of this run's PostgreSQL and MariaDB copies: teardown drops only these, so parallel runs do not collide. */
		pgPrefix: string;
		mariadbTemplate: string;
		mariadbAvailable: boolean;
		/** The address of the broker of shared instances (instance-broker.ts). */
		instanceBroker: string;
	}
}

/**
 * Builds the extension once, installs the extra Directus hosts when missing (scripts/lib/hosts.mjs), and bootstraps
 * template databases (SQLite on each host, and PostgreSQL and MariaDB when reachable) through the same start script as
 * `npm start`. Each test file then copies a template instead of bootstrapping. The SQLite templates are cached
 * across runs, keyed by everything that shapes them.
 */
export default async function setup(project: TestProject) {
	resetBootLog();
	buildExtension();
	// Before any start: each start's install then finds the folder holds this build and leaves it (install-bundle.mjs).
	installBundle(SHARED_EXTENSIONS);
	ensureHosts();
	const key = templateKey();

	const postgresAvailable = await postgresReachable();
	const requirePostgres = process.env['PSEO_TEST_REQUIRE_POSTGRES'] === '1';
	if (!postgresAvailable && requirePostgres) {
		throw new Error(`PostgreSQL is not reachable at ${PG.host}:${PG.port} and PSEO_TEST_REQUIRE_POSTGRES=1.`);
	}
	if (!postgresAvailable) {
		console.warn(`PostgreSQL is not reachable at ${PG.host}:${PG.port}: the PostgreSQL leg is skipped.`);
	}
	// Sampled through the run, printed at its end (connection-watch.ts).
	const stopWatching = postgresAvailable ? watchConnections() : () => {};
	const pgTemplate = `pseo_tpl_${key.slice(0, 12)}_${process.pid}`;
	const pgPrefix = `pseo_t${process.pid}`;

	const mariadbAvailable = await mariadbReachable();
	if (!mariadbAvailable && process.env['PSEO_TEST_REQUIRE_MARIADB'] === '1') {
		throw new Error(`MariaDB is not reachable at ${MARIADB.host}:${MARIADB.port} as ${MARIADB.user} and PSEO_TEST_REQUIRE_MARIADB=1.`);
	}
	if (!mariadbAvailable) {
		console.warn(`MariaDB is not reachable at ${MARIADB.host}:${MARIADB.port}: the MariaDB leg is skipped.`);
	}
	const mariadbTemplate = `pseo_tpl_${key.slice(0, 12)}_${process.pid}`;

	// The templates are independent: bootstrapped side by side, a clean clone waits for the slowest one rather than
	// for the sum of all four.
	packBundle();
	const [sqliteTemplate, sqliteD11Template, stockTemplate] = await Promise.all([
		sqliteTemplateOf('sqlite', key),
		sqliteTemplateOf('sqlite-d11', templateKey(['hosts/directus-11/package-lock.json'])),
		stockTemplateOf(templateKey(['hosts/directus-12-stock/package-lock.json'])),
		postgresAvailable ? bootstrapPostgresTemplate(pgTemplate) : null,
		mariadbAvailable ? bootstrapMariaTemplate(mariadbTemplate) : null,
	]);

	project.provide('sqliteTemplate', sqliteTemplate);
	project.provide('sqliteD11Template', sqliteD11Template);
	project.provide('stockTemplate', stockTemplate);
	project.provide('pgTemplate', pgTemplate);
	project.provide('postgresAvailable', postgresAvailable);
	project.provide('pgPrefix', pgPrefix);
	project.provide('mariadbTemplate', mariadbTemplate);
	project.provide('mariadbAvailable', mariadbAvailable);
	const broker = await startInstanceBroker({
		templates: { sqlite: sqliteTemplate, 'sqlite-d11': sqliteD11Template, stock: stockTemplate, postgres: pgTemplate, mariadb: mariadbTemplate },
		prefix: pgPrefix,
	});
	project.provide('instanceBroker', broker.url);

	return async () => {
		stopWatching();
		// The shared instances first: their databases are among those dropped below.
		await broker.close();
		if (postgresAvailable) {
			const leftovers = await pgAdmin<{ datname: string }>(
				`SELECT datname FROM pg_database WHERE datname LIKE '${pgPrefix}\\_%' OR datname = '${pgTemplate}'`,
			);
			for (const { datname } of leftovers) await dropDatabase(datname);
		}
		if (mariadbAvailable) {
			for (const name of [...(await mariaDatabasesLike(`${pgPrefix}_`)), mariadbTemplate]) await dropMariaDatabase(name);
		}
	};
}

async function bootstrapPostgresTemplate(name: string): Promise<void> {
	await dropDatabase(name);
	await pgAdmin(`CREATE DATABASE "${name}"`);
	await bootstrapTemplate({ ...postgresEnv(name), PSEO_DIRECTUS_HOME: legHome('postgres') });
}

async function bootstrapMariaTemplate(name: string): Promise<void> {
	await dropMariaDatabase(name);
	await mariadbAdmin(`CREATE DATABASE \`${name}\``);
	await bootstrapTemplate({ ...mariadbEnv(name), PSEO_DIRECTUS_HOME: legHome('mariadb') });
}

/** The cached SQLite template of a leg's host, bootstrapped when the cache has none for `key`. */
async function sqliteTemplateOf(leg: 'sqlite' | 'sqlite-d11', key: string): Promise<string> {
	const template = path.join(CACHE_DIR, `${leg}-${key}.db`);
	if (existsSync(template)) return template;
	mkdirSync(CACHE_DIR, { recursive: true });
	const scratch = path.join(os.tmpdir(), `pseo-template-${leg}-${process.pid}.db`);
	rmSync(scratch, { force: true });
	await bootstrapTemplate({ DB_CLIENT: 'sqlite3', DB_FILENAME: scratch, PSEO_DIRECTUS_HOME: legHome(leg) });
	copyFileSync(scratch, template);
	rmSync(scratch, { force: true });
	return template;
}

/**
 * The stock leg's template, cached like the others: a new database made as admins make one (stock-install.ts):
 * `directus bootstrap`, then a first `directus start`, in which the packed bundle installs its schema. Each stock
 * suite then runs `directus start` on a copy.
 */
async function stockTemplateOf(key: string): Promise<string> {
	const template = path.join(CACHE_DIR, `stock-${key}.db`);
	if (existsSync(template)) return template;
	mkdirSync(CACHE_DIR, { recursive: true });
	const database = await copyDatabase('stock', '');
	const instance = await launchDirectus({ leg: 'stock', database });
	try {
		if ((await instance.stop()) !== 0) throw new Error(`the stock template's Directus did not stop cleanly:\n${instance.output()}`);
		copyFileSync(database.env['DB_FILENAME']!, template);
	} finally {
		await instance.dispose();
	}
	return template;
}

function templateKey(extra: string[] = []): string {
	const hash = createHash('sha256');
	const shaping = ['snapshots/pseo-schema.json', 'src/schema/user-policy.ts', 'src/schema/install-schema.ts', 'src/schema/schema-fingerprint.ts', 'src/schema/list-presets.ts', 'src/shared/host-compat.ts', 'package-lock.json'];
	for (const file of [...shaping, ...extra]) {
		hash.update(readFileSync(path.join(ROOT, file)));
	}
	return hash.digest('hex').slice(0, 16);
}
