// The Directus versions the bundle runs on ("hosts"). The first, Directus 12, is the project's own dev dependency
// in the root node_modules. Each further host is a small npm project under hosts/<name>/ that pins one Directus
// release with a committed lock; it is installed on demand (ensureHost), not by the root `npm install`, so that
// installing the project stays fast for users who run only the first host.
//
// Which host runs is chosen by PSEO_DIRECTUS_HOME: the directory whose node_modules holds the Directus to run
// (default: the project root). scripts/directus-cli.mjs, and so `npm start`, honour it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, cpSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { nodeBinary, nodeEnv, root } from './node-runtime.mjs';

/** The environment variable naming the directory whose node_modules holds the host Directus. */
export const HOME_VARIABLE = 'PSEO_DIRECTUS_HOME';

/** Hosts installed under hosts/<name>/, beside the project's own Directus 12. */
export const EXTRA_HOSTS = ['directus-11', 'directus-12-stock'];

/** Native addons Directus loads; each must load under the Node that runs Directus. */
const ADDONS = ['sqlite3', 'argon2', 'isolated-vm'];

const STAMP = '.pseo-host-stamp';

/** Absolute directory of a host under hosts/. */
export function hostDir(name) {
	if (!EXTRA_HOSTS.includes(name)) throw new TypeError(`Unknown Directus host "${name}"; known: ${EXTRA_HOSTS.join(', ')}`);
	return path.join(root, 'hosts', name);
}

/** The directory whose node_modules holds the Directus to run: PSEO_DIRECTUS_HOME (relative to the root), or the root. */
export function directusHome(env = process.env) {
	const value = env[HOME_VARIABLE];
	return value ? path.resolve(root, value) : root;
}

/** Absolute path of the Directus CLI entry (@directus/api's cli/run.js) installed under `home`. */
export function directusCliEntry(home = directusHome()) {
	const require = createRequire(path.join(home, 'package.json'));
	try {
		return require.resolve('@directus/api/cli/run.js');
	} catch {
		const hint = home === root ? 'Run "npm install".' : `Run "node scripts/install-hosts.mjs" (or check ${HOME_VARIABLE}).`;
		throw new Error(`No Directus is installed under ${home}/node_modules. ${hint}`);
	}
}

/** The version of the Directus installed under `home`, for logs; "(version unknown)" without its `directus` package. */
export function directusVersion(home = directusHome()) {
	const require = createRequire(path.join(home, 'package.json'));
	try {
		return JSON.parse(readFileSync(require.resolve('directus/package.json'), 'utf8')).version;
	} catch {
		return '(version unknown)';
	}
}

/**
 * What an installed host must match: its manifest, its lock, and the Node it was built for. A change of any of
 * them (a new pin, a Node upgrade) reinstalls the host.
 */
function fingerprint(dir) {
	const hash = createHash('sha256');
	for (const file of ['package.json', 'package-lock.json']) {
		const full = path.join(dir, file);
		hash.update(existsSync(full) ? readFileSync(full) : '');
	}
	hash.update(spawnSync(nodeBinary(), ['-v'], { encoding: 'utf8' }).stdout.trim());
	return hash.digest('hex');
}

/**
 * Installs hosts/<name> with npm ci when it is missing or its lock (or the Node 22 binary) changed since the
 * last install, and checks that its native addons load under Node 22. Returns whether it installed.
 */
export function ensureHost(name, { log = (message) => console.log(`[pseo-automation] ${message}`) } = {}) {
	const dir = hostDir(name);
	const stampFile = path.join(dir, 'node_modules', STAMP);
	const expected = fingerprint(dir);
	if (existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === expected) return false;

	const started = Date.now();
	log(`installing the ${name} host into ${path.relative(root, dir)}/node_modules (once per lock change)`);
	// The headers of the Node that runs Directus, so sqlite3, argon2 and isolated-vm are built for it.
	const env = nodeEnv();
	// Install scripts are skipped here and only the addons that do not load are built below: an addon of the same
	// version as the project's own is copied from the root, already built for the same Node (isolated-vm alone
	// takes minutes to compile).
	const npm = spawnSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: dir, env, stdio: 'inherit' });
	if (npm.status !== 0) throw new Error(`npm ci in ${dir} failed (exit ${npm.status})`);
	for (const addon of ADDONS) {
		if (reuseRootBuild(addon, dir)) log(`${addon} of the ${name} host: the project's own build is reused (same version)`);
	}

	const broken = ADDONS.filter(
		(addon) => spawnSync(nodeBinary(), ['-e', `require(${JSON.stringify(addon)})`], { cwd: dir, stdio: 'pipe' }).status !== 0,
	);
	if (broken.length > 0) {
		// A native build prints thousands of compiler warnings: they go to a log file, named here, not to the console.
		const buildLog = path.join(dir, 'node_modules', '.pseo-host-build.log');
		log(`rebuilding ${broken.join(', ')} of the ${name} host for ${nodeBinary()} (compiler output in ${path.relative(root, buildLog)})`);
		const out = openSync(buildLog, 'w');
		const rebuild = spawnSync('npm', ['rebuild', ...broken, '--foreground-scripts'], { cwd: dir, env, stdio: ['ignore', out, out] });
		closeSync(out);
		if (rebuild.status !== 0) {
			rmSync(stampFile, { force: true });
			const tail = readFileSync(buildLog, 'utf8').split('\n').slice(-40).join('\n');
			throw new Error(`rebuilding ${broken.join(', ')} in ${dir} failed (exit ${rebuild.status}); the end of ${buildLog}:\n${tail}`);
		}
	}
	writeFileSync(stampFile, `${expected}\n`);
	log(`${name} host ready: Directus ${directusVersion(dir)} in ${Math.round((Date.now() - started) / 1000)} s`);
	return true;
}

/** Where each addon keeps its compiled binary, relative to its package directory. */
const BUILD_DIRS = { sqlite3: 'build', 'isolated-vm': 'out', argon2: 'build' };

/**
 * Copies the root's compiled `addon` into the host when both have the same version and the root's loads: the
 * same source built for the same Node gives the same binary. False when there is nothing to reuse.
 */
function reuseRootBuild(addon, dir) {
	const version = (base) => {
		try {
			return JSON.parse(readFileSync(path.join(base, 'node_modules', addon, 'package.json'), 'utf8')).version;
		} catch {
			return null;
		}
	};
	const from = path.join(root, 'node_modules', addon, BUILD_DIRS[addon]);
	if (!existsSync(from) || version(root) === null || version(root) !== version(dir)) return false;
	cpSync(from, path.join(dir, 'node_modules', addon, BUILD_DIRS[addon]), { recursive: true });
	return true;
}

/** Installs every extra host that needs it. */
export function ensureHosts(options) {
	for (const name of EXTRA_HOSTS) ensureHost(name, options);
}
