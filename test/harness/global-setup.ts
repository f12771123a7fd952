import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { baseEnv, freePort } from './directus.ts';
import { ADMIN_TOKEN, CACHE_DIR, NODE22, PG, ROOT, START_SCRIPT } from './paths.ts';
import { dropDatabase, pgAdmin, postgresReachable } from './postgres.ts';

declare module 'vitest' {
	export interface ProvidedContext {
		sqliteTemplate: string;
		pgTemplate: string;
		postgresAvailable: boolean;
	}
}

/**
 * Builds the extension once and bootstraps template databases (SQLite, and PostgreSQL when reachable) through
 * the same start script as `npm start`. Each test file then copies a template instead of bootstrapping.
 * The SQLite template is cached across runs, keyed by everything that shapes it.
 */
export default async function setup(project: TestProject) {
	build();
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

	return async () => {
		if (postgresAvailable) {
			const leftovers = await pgAdmin<{ datname: string }>(
				`SELECT datname FROM pg_database WHERE datname LIKE 'pseo_t_%' OR datname = '${pgTemplate}'`,
			);
			for (const { datname } of leftovers) await dropDatabase(datname);
		}
	};
}

function build(): void {
	const result = spawnSync(NODE22, [path.join(ROOT, 'node_modules/@directus/extensions-sdk/cli.js'), 'build', '--no-minify'], {
		cwd: ROOT,
		encoding: 'utf8',
	});
	if (result.status !== 0) throw new Error(`extension build failed:\n${result.stdout}\n${result.stderr}`);
}

function templateKey(): string {
	const hash = createHash('sha256');
	for (const file of ['snapshots/pseo-schema.json', 'src/schema/user-policy.ts', 'src/schema/install-schema.ts', 'package-lock.json']) {
		hash.update(readFileSync(path.join(ROOT, file)));
	}
	return hash.digest('hex').slice(0, 16);
}

/** Runs the start script until Directus answers (schema and policies are installed at start-up), then stops it. */
async function bootstrapTemplate(dbEnv: Record<string, string>): Promise<void> {
	const { spawn } = await import('node:child_process');
	const port = await freePort();
	const workDir = path.join(os.tmpdir(), `pseo-template-work-${process.pid}`);
	mkdirSync(workDir, { recursive: true });
	const child = spawn(process.execPath, [START_SCRIPT, '--skip-build'], {
		cwd: ROOT,
		env: { ...process.env, ...baseEnv(port, workDir), ...dbEnv },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let log = '';
	child.stdout.on('data', (chunk: Buffer) => (log += chunk));
	child.stderr.on('data', (chunk: Buffer) => (log += chunk));
	const deadline = Date.now() + 180_000;
	for (;;) {
		if (child.exitCode !== null) throw new Error(`template bootstrap failed:\n${log}`);
		if (Date.now() > deadline) throw new Error(`template bootstrap timed out:\n${log}`);
		const ok = await fetch(`http://127.0.0.1:${port}/pseo-endpoints/`).then((r) => r.ok, () => false);
		if (ok) break;
		await new Promise((resolve) => setTimeout(resolve, 200));
	}
	// The admin's static token must work on every copy.
	const me = await fetch(`http://127.0.0.1:${port}/users/me`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
	if (!me.ok) throw new Error(`template admin token does not work (${me.status}):\n${log}`);
	await new Promise<void>((resolve) => {
		child.once('exit', () => resolve());
		child.kill('SIGTERM');
	});
	rmSync(workDir, { recursive: true, force: true });
}
