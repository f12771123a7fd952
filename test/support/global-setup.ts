import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { bootstrapTemplate, buildExtension } from './templates.ts';
import { CACHE_DIR, PG, ROOT } from './paths.ts';
import { dropDatabase, pgAdmin, postgresReachable } from './postgres.ts';

declare module 'vitest' {
	export interface ProvidedContext {
		sqliteTemplate: string;
		pgTemplate: string;
		postgresAvailable: boolean;
		/** Name prefix of this run's PostgreSQL copies: teardown drops only these, so parallel runs do not collide. */
		pgPrefix: string;
	}
}

/**
 * Builds the extension once and bootstraps template databases (SQLite, and PostgreSQL when reachable) through
 * the same start script as `npm start`. Each test file then copies a template instead of bootstrapping.
 * The SQLite template is cached across runs, keyed by everything that shapes it.
 */
export default async function setup(project: TestProject) {
	buildExtension();
	const key = templateKey();

	const sqliteTemplate = path.join(CACHE_DIR, `sqlite-${key}.db`);
	if (!existsSync(sqliteTemplate)) {
		mkdirSync(CACHE_DIR, { recursive: true });
		const scratch = path.join(os.tmpdir(), `pseo-template-${process.pid}.db`);
		rmSync(scratch, { force: true });
		await bootstrapTemplate({ DB_CLIENT: 'sqlite3', DB_FILENAME: scratch });
		copyFileSync(scratch, sqliteTemplate);
		rmSync(scratch, { force: true });
	}

	const postgresAvailable = await postgresReachable();
	const requirePostgres = process.env['PSEO_TEST_REQUIRE_POSTGRES'] === '1';
	if (!postgresAvailable && requirePostgres) {
		throw new Error(`PostgreSQL is not reachable at ${PG.host}:${PG.port} and PSEO_TEST_REQUIRE_POSTGRES=1.`);
	}
	if (!postgresAvailable) {
		console.warn(`PostgreSQL is not reachable at ${PG.host}:${PG.port}: the PostgreSQL leg is skipped.`);
	}
	const pgTemplate = `pseo_tpl_${key.slice(0, 12)}_${process.pid}`;
	const pgPrefix = `pseo_t${process.pid}`;
	if (postgresAvailable) {
		await dropDatabase(pgTemplate);
		await pgAdmin(`CREATE DATABASE "${pgTemplate}"`);
		await bootstrapTemplate({
			DB_CLIENT: 'pg',
			DB_HOST: PG.host,
			DB_PORT: String(PG.port),
			DB_USER: PG.user,
			DB_PASSWORD: PG.password,
			DB_DATABASE: pgTemplate,
		});
	}

	project.provide('sqliteTemplate', sqliteTemplate);
	project.provide('pgTemplate', pgTemplate);
	project.provide('postgresAvailable', postgresAvailable);
	project.provide('pgPrefix', pgPrefix);

	return async () => {
		if (postgresAvailable) {
			const leftovers = await pgAdmin<{ datname: string }>(
				`SELECT datname FROM pg_database WHERE datname LIKE '${pgPrefix}\\_%' OR datname = '${pgTemplate}'`,
			);
			for (const { datname } of leftovers) await dropDatabase(datname);
		}
	};
}

function templateKey(): string {
	const hash = createHash('sha256');
	for (const file of ['snapshots/pseo-schema.json', 'src/schema/user-policy.ts', 'src/schema/install-schema.ts', 'src/schema/list-presets.ts', 'package-lock.json']) {
		hash.update(readFileSync(path.join(ROOT, file)));
	}
	return hash.digest('hex').slice(0, 16);
}
