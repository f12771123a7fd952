/**
 * Directus as admins run it: the bundle packed with `npm pack` and unpacked into a project's `extensions/`, the
 * configuration in that project's `.env`, and the stock `directus` command of hosts/directus-12-stock (the newest
 * Directus release that installs from the registry) run from the project directory: `directus bootstrap`, then
 * `directus start`. Nothing of the project's own start script, build or environment is involved.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CACHE_DIR, NODE22, ROOT } from './paths.ts';

/** The host directory whose node_modules holds the stock Directus. */
export const STOCK_HOME = path.join(ROOT, 'hosts', 'directus-12-stock');

let packed: string | null = null;

/** Where global-setup.ts leaves the tarball it packed, so that the suites' processes do not pack it again. */
const PACKED_VARIABLE = 'PSEO_TEST_PACKED_BUNDLE';

/** The bundle as `npm pack` makes it from the built `dist/`: packed once per run (global-setup.ts). */
export function packBundle(): string {
	packed ??= process.env[PACKED_VARIABLE] ?? null;
	if (packed) return packed;
	const dir = mkdtempSync(path.join(os.tmpdir(), 'pseo-pack-'));
	execFileSync('npm', ['pack', '--pack-destination', dir, '--loglevel=error'], { cwd: ROOT, stdio: 'pipe' });
	const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'));
	if (!tarball) throw new Error(`npm pack left no tarball in ${dir}`);
	packed = path.join(dir, tarball);
	process.env[PACKED_VARIABLE] = packed;
	return packed;
}

/**
 * Makes `project` a Directus project as `npm install directus` leaves one (its package.json naming the stock
 * release; Directus reads it for extensions installed as packages), and unpacks the packed bundle into its
 * `extensions/pseo-automation`, as the installation guide says.
 */
export function installPackedBundle(project: string): void {
	const { version } = JSON.parse(readFileSync(path.join(STOCK_HOME, 'node_modules', 'directus', 'package.json'), 'utf8')) as { version: string };
	writeFileSync(path.join(project, 'package.json'), `${JSON.stringify({ name: 'directus-project', private: true, dependencies: { directus: version } }, null, 2)}\n`);
	const extensions = path.join(project, 'extensions');
	mkdirSync(extensions, { recursive: true });
	execFileSync('tar', ['-xzf', packBundle(), '-C', extensions]);
	renameSync(path.join(extensions, 'package'), path.join(extensions, 'pseo-automation'));
}

/** Writes the project's `.env`, one `KEY="value"` a line, as Directus reads it at every command. */
export function writeDotEnv(project: string, env: Record<string, string>): void {
	const quote = (value: string) => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
	writeFileSync(path.join(project, '.env'), `${Object.entries(env).map(([key, value]) => `${key}=${quote(value)}`).join('\n')}\n`);
}

/**
 * Runs the stock `directus` command (`node_modules/.bin/directus`) in `project` with a clean environment: the
 * configuration comes from the project's `.env` alone. The command's update check asks the npm registry for the
 * newest release; the proxy variables send it to a closed port on loopback, so it gives up at once.
 */
export function directusCommand(project: string, args: string[]): ChildProcess {
	return spawn(path.join(STOCK_HOME, 'node_modules', '.bin', 'directus'), args, {
		cwd: project,
		env: {
			PATH: `${path.dirname(NODE22)}${path.delimiter}${process.env['PATH'] ?? ''}`,
			HOME: project,
			HTTPS_PROXY: 'http://127.0.0.1:9',
			HTTP_PROXY: 'http://127.0.0.1:9',
			NO_PROXY: '127.0.0.1,localhost',
			// Node's own cache of compiled modules, as the other legs use (a Node setting, not Directus's).
			NODE_COMPILE_CACHE: path.join(CACHE_DIR, 'node-compile-cache'),
		},
		stdio: ['ignore', 'pipe', 'pipe'],
	});
}
