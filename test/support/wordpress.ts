import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './instance.ts';
import { dropMariaDatabase, mariadbAdmin } from './mariadb.ts';
import { MARIADB } from './paths.ts';

/*
 * A real WordPress for the publishing suites: Debian's `wordpress` package served by PHP's built-in server on
 * loopback, one fresh MariaDB database per site. Debian's wp-config.php reads /etc/wordpress/config-<host>.php
 * for the request's host; that file is the same for every site and takes the database from the server's
 * environment, so several sites (and several test processes) run side by side on 127.0.0.1, each on its own port
 * and database.
 */

const WORDPRESS_DIR = '/usr/share/wordpress';
const CONFIG_FILE = '/etc/wordpress/config-127.0.0.1.php';

const CONFIG = `<?php
/*
 * pseo-automation's WordPress test sites (test/support/wordpress.ts): each PHP server names its own database
 * in its environment, so one file serves every site on 127.0.0.1.
 */
define('DB_NAME', getenv('PSEO_WP_DB_NAME') ?: 'pseo_wp_unset');
define('DB_USER', getenv('PSEO_WP_DB_USER') ?: 'root');
define('DB_PASSWORD', getenv('PSEO_WP_DB_PASSWORD') ?: '');
define('DB_HOST', getenv('PSEO_WP_DB_HOST') ?: '127.0.0.1:3306');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
$table_prefix = 'wp_';
define('WP_CONTENT_DIR', '/var/lib/wordpress/wp-content');
// Application Passwords need HTTPS unless the environment is local.
define('WP_ENVIRONMENT_TYPE', 'local');
// No cron spawned from requests (scheduled posts stay 'future'), no updates, nothing fetched past loopback.
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('WP_DEBUG', false);
`;

/** A user's credentials for Basic auth with an Application Password. */
interface WordPressCredentials {
	username: string;
	applicationPassword: string;
}

/** A post as `context=edit` gives it, with the raw (unrendered) title, content and excerpt. */
export interface WordPressPost {
	id: number;
	slug: string;
	status: string;
	title: string;
	content: string;
	excerpt: string;
	/** Site-local time (the sites run on UTC), without zone. */
	date: string;
	date_gmt: string;
	link: string;
	categories: number[];
	meta?: unknown;
}

interface WordPressResponse {
	status: number;
	/** Parsed JSON, or the text when the answer is not JSON. */
	body: any;
	headers: Headers;
}

export interface WordPressSite extends WordPressCredentials {
	/** http://127.0.0.1:PORT, also the site's home and siteurl. */
	url: string;
	/** The MariaDB database holding the site. */
	database: string;
	/** `${url}/?rest_route=${route}&...`: the REST API's address whatever the permalinks (/wp-json/ needs pretty ones). */
	restUrl(route: string, query?: Record<string, string>): string;
	/** A REST call with a JSON body, as admin unless `auth` names another user ('none': unauthenticated). */
	request(method: string, route: string, body?: unknown, query?: Record<string, string>, auth?: WordPressCredentials | 'none'): Promise<WordPressResponse>;
	/** Every post in any status but trash, all pages of them. */
	listPosts(): Promise<WordPressPost[]>;
	/** A new user with `role` and an Application Password, to see what that role may not do. */
	createUserWithAppPassword(login: string, role: 'subscriber' | 'author' | 'editor'): Promise<WordPressCredentials>;
	/** The PHP server's output, for failure reports. */
	output(): string;
	/** Stops the PHP server and drops the database. */
	stop(): Promise<void>;
}

/** Whether Debian's WordPress and a PHP with MySQL support are installed. */
function wordpressInstalled(): boolean {
	if (!existsSync(path.join(WORDPRESS_DIR, 'wp-load.php'))) return false;
	const probe = spawnSync('php', ['-r', 'exit(extension_loaded("mysqli") ? 0 : 1);'], { stdio: 'ignore' });
	return probe.status === 0;
}

let installing: Promise<void> | null = null;

/** Installs `wordpress php-cli php-mysql` from Debian's packages when WordPress or PHP is missing (needs root). */
export function ensureWordPress(): Promise<void> {
	if (wordpressInstalled()) return Promise.resolve();
	installing ??= installWordPress().finally(() => (installing = null));
	return installing;
}

async function installWordPress(): Promise<void> {
	if (process.getuid?.() !== 0) {
		throw new Error(
			`WordPress (${WORDPRESS_DIR}/wp-load.php) or PHP with mysqli is missing and this process is not root: ` +
				'run `apt-get install -y --no-install-recommends wordpress php-cli php-mysql` (as .ci/run does).',
		);
	}
	const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
	// Another test process may be installing too: wait for dpkg's lock rather than fail on it.
	const lock = ['-o', 'DPkg::Lock::Timeout=600'];
	await run('apt-get', [...lock, 'update', '-qq'], env);
	await run('apt-get', [...lock, 'install', '-y', '-qq', '--no-install-recommends', 'wordpress', 'php-cli', 'php-mysql'], env);
	if (!wordpressInstalled()) throw new Error('apt-get installed wordpress php-cli php-mysql, yet WordPress or PHP with mysqli is still missing');
}

/** Runs a command to its end; rejects with its output when it fails. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd?: string): Promise<string> {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], ...(cwd ? { cwd } : {}) });
		let stdout = '';
		let stderr = '';
		child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
		child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
		child.once('error', reject);
		child.once('close', (code) => {
			if (code === 0) resolve(stdout);
			else reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${stdout}${stderr}`));
		});
	});
}

/** Writes the shared host config when it is missing or differs; atomic, so a concurrent reader sees old or new. */
function writeConfig(): void {
	writeOnce(CONFIG_FILE, CONFIG);
	writeOnce(SEO_PLUGIN_FILE, SEO_PLUGIN);
}

/** Writes `content` to `file` atomically unless it already holds it (several test processes share the file). */
function writeOnce(file: string, content: string): void {
	if (existsSync(file) && readFileSync(file, 'utf8') === content) return;
	mkdirSync(path.dirname(file), { recursive: true });
	const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
	writeFileSync(temp, content);
	renameSync(temp, file);
}

const SEO_PLUGIN_FILE = '/var/lib/wordpress/wp-content/mu-plugins/pseo-test-seo-meta.php';

/*
 * Stands in for an SEO plugin that exposes its fields over REST (Yoast's and Rank Math's meta keys, registered
 * with show_in_rest), on the sites started with `seoMeta: true` only.
 */
const SEO_PLUGIN = `<?php
if (getenv('PSEO_WP_SEO_META') === '1') {
	add_action('init', function () {
		foreach (['_yoast_wpseo_title', '_yoast_wpseo_metadesc', 'rank_math_title', 'rank_math_description'] as $key) {
			register_post_meta('post', $key, [
				'type' => 'string',
				'single' => true,
				'show_in_rest' => true,
				'auth_callback' => function () { return current_user_can('edit_posts'); },
			]);
		}
	});
}
`;

/** PHP servers still running, stopped when the test process exits without stopping them. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
	for (const child of live) killGroup(child, 'SIGKILL');
});

/** The server runs in its own process group: its workers go with it. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
	if (!child.pid) return;
	try {
		process.kill(-child.pid, signal);
	} catch {
		// already gone
	}
}

/** How post links look: WordPress's installer picks `pretty` on its own where its loopback probe succeeds, as here. */
const PERMALINKS = { pretty: '/%year%/%monthnum%/%day%/%postname%/', plain: '' } as const;

/**
 * Starts a fresh WordPress site on its own port and database, installed, with an Application Password for admin.
 * `name` goes into the database's name; `permalinks` (default `pretty`) is set explicitly, so links do not depend
 * on the installer's probe.
 */
export async function startWordPress(options: { name?: string; permalinks?: 'pretty' | 'plain'; seoMeta?: boolean } = {}): Promise<WordPressSite> {
	await ensureWordPress();
	writeConfig();
	const label = (options.name ?? 'site').toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 30);
	const database = `pseo_wp_${label}_${randomBytes(4).toString('hex')}`;
	await mariadbAdmin(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
	const workDir = mkdtempSync(path.join(os.tmpdir(), 'pseo-wp-'));
	const logFile = path.join(workDir, 'php.log');
	const env: NodeJS.ProcessEnv = {
		...process.env,
		PSEO_WP_DB_NAME: database,
		PSEO_WP_DB_USER: MARIADB.user,
		PSEO_WP_DB_PASSWORD: MARIADB.password,
		PSEO_WP_DB_HOST: `${MARIADB.host}:${MARIADB.port}`,
		// The built-in server is single-threaded without workers: a REST call that waits on another would hang.
		PHP_CLI_SERVER_WORKERS: '4',
		PSEO_WP_SEO_META: options.seoMeta ? '1' : '0',
	};
	const output = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
	let child: ChildProcess | null = null;
	let stopped: Promise<void> | null = null;
	// Once only: a second stop must not signal a process group whose id may have been reused.
	const cleanUp = () =>
		(stopped ??= (async () => {
			if (child) await stopServer(child);
			await dropMariaDatabase(database);
			rmSync(workDir, { recursive: true, force: true });
		})());

	try {
		let url = '';
		// The free port can be taken between asking and listening (other test processes): try another.
		for (let attempt = 1; ; attempt++) {
			const port = await freePort();
			url = `http://127.0.0.1:${port}`;
			const log = openSync(logFile, 'a');
			child = spawn('php', ['-d', 'display_errors=stderr', '-d', 'log_errors=0', '-S', `127.0.0.1:${port}`, '-t', WORDPRESS_DIR], {
				cwd: WORDPRESS_DIR,
				env,
				stdio: ['ignore', log, log],
				detached: true,
			});
			closeSync(log);
			live.add(child);
			const started = child;
			child.once('exit', () => live.delete(started));
			if (await waitForServer(url, child, output)) break;
			if (attempt >= 5) throw new Error(`PHP's server could not listen on a free port after ${attempt} tries:\n${output()}`);
		}

		await install(url, output);
		const php = (code: string, extraEnv: Record<string, string>) => runPhp(code, { ...env, ...extraEnv });
		const [applicationPassword] = await Promise.all([
			appPassword(php, 'admin'),
			php(
				`global $wp_rewrite; $wp_rewrite->set_permalink_structure(getenv('PSEO_WP_PERMALINKS')); flush_rewrite_rules(false); return get_option('permalink_structure');`,
				{ PSEO_WP_PERMALINKS: PERMALINKS[options.permalinks ?? 'pretty'] },
			),
		]);
		const auth = (credentials: WordPressCredentials) =>
			`Basic ${Buffer.from(`${credentials.username}:${credentials.applicationPassword}`).toString('base64')}`;
		const admin: WordPressCredentials = { username: 'admin', applicationPassword };

		const restUrl = (route: string, query: Record<string, string> = {}) => {
			const params = new URLSearchParams(query).toString();
			return `${url}/?rest_route=${encodeURIComponent(route).replaceAll('%2F', '/')}${params ? `&${params}` : ''}`;
		};

		const request: WordPressSite['request'] = async (method, route, body, query, as = admin) => {
			const headers: Record<string, string> = { accept: 'application/json' };
			if (as !== 'none') headers['authorization'] = auth(as);
			if (body !== undefined) headers['content-type'] = 'application/json';
			const res = await fetch(restUrl(route, query), {
				method,
				headers,
				...(body !== undefined ? { body: JSON.stringify(body) } : {}),
				signal: AbortSignal.timeout(60_000),
			});
			const text = await res.text();
			let parsed: unknown = text;
			try {
				parsed = JSON.parse(text);
			} catch {
				// not JSON: a PHP error page, say; the text goes back as it is
			}
			return { status: res.status, body: parsed, headers: res.headers };
		};

		const me = await request('GET', '/wp/v2/users/me', undefined, { context: 'edit' });
		if (me.status !== 200) throw new Error(`admin's Application Password was refused: ${me.status} ${JSON.stringify(me.body)}\n${output()}`);

		const site: WordPressSite = {
			url,
			username: admin.username,
			applicationPassword,
			database,
			restUrl,
			request,
			listPosts: async () => {
				const posts: WordPressPost[] = [];
				// status=any is every status but trash; it needs context=edit and a user who may edit posts.
				for (let page = 1; ; page++) {
					const res = await request('GET', '/wp/v2/posts', undefined, {
						status: 'any',
						context: 'edit',
						per_page: '100',
						page: String(page),
						orderby: 'id',
						order: 'asc',
					});
					if (res.status !== 200) throw new Error(`listing posts (page ${page}) answered ${res.status}: ${JSON.stringify(res.body)}`);
					for (const post of res.body as Record<string, any>[]) {
						posts.push({
							id: post['id'],
							slug: post['slug'],
							status: post['status'],
							title: post['title']?.raw ?? '',
							content: post['content']?.raw ?? '',
							excerpt: post['excerpt']?.raw ?? '',
							date: post['date'],
							date_gmt: post['date_gmt'],
							link: post['link'],
							categories: post['categories'] ?? [],
							...(post['meta'] !== undefined ? { meta: post['meta'] } : {}),
						});
					}
					if (page >= Number(res.headers.get('x-wp-totalpages') ?? 1)) return posts;
				}
			},
			createUserWithAppPassword: async (login, role) => ({
				username: login,
				applicationPassword: await appPassword(php, login, role),
			}),
			output,
			stop: cleanUp,
		};
		return site;
	} catch (error) {
		await cleanUp();
		throw error;
	}
}

/** Waits until the server answers install.php; false when PHP exited because its port was taken. */
async function waitForServer(url: string, child: ChildProcess, output: () => string, timeoutMs = 30_000): Promise<boolean> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		if (child.exitCode !== null || child.signalCode !== null) {
			if (/Address already in use/i.test(output())) return false;
			throw new Error(`PHP's server exited with ${child.exitCode ?? child.signalCode} before answering:\n${output()}`);
		}
		try {
			// install.php connects to the database: a 200 means the config, the database and PHP all work.
			const res = await fetch(`${url}/wp-admin/install.php`, { signal: AbortSignal.timeout(10_000) });
			const text = await res.text();
			if (res.status === 200) return true;
			if (res.status >= 500) throw new Error(`WordPress answered ${res.status} on ${url}/wp-admin/install.php:\n${text.slice(0, 2000)}\n${output()}`);
		} catch (error) {
			if (error instanceof Error && error.message.startsWith('WordPress answered')) throw error;
			// not listening yet
		}
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
	throw new Error(`WordPress did not answer on ${url} within ${timeoutMs} ms:\n${output()}`);
}

/** The browser's install form, filled in: admin with a random password nobody needs (the API uses the app password). */
async function install(url: string, output: () => string): Promise<void> {
	const form = new URLSearchParams({
		weblog_title: 'pseo test site',
		user_name: 'admin',
		admin_password: randomBytes(18).toString('base64url'),
		pw_weak: '1',
		admin_email: 'admin@example.com',
		blog_public: '0',
		language: '',
	});
	form.set('admin_password2', form.get('admin_password')!);
	const res = await fetch(`${url}/wp-admin/install.php?step=2`, { method: 'POST', body: form, signal: AbortSignal.timeout(60_000) });
	const text = await res.text();
	if (res.status !== 200 || !text.includes('Success!')) {
		throw new Error(`WordPress's install answered ${res.status}:\n${text.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').slice(0, 2000)}\n${output()}`);
	}
}

type PhpRunner = (code: string, extraEnv: Record<string, string>) => Promise<unknown>;

/** Runs PHP with WordPress loaded for the site in `env`; the code's result comes back as JSON on a marked line. */
async function runPhp(code: string, env: NodeJS.ProcessEnv): Promise<unknown> {
	const script = `$_SERVER['HTTP_HOST'] = '127.0.0.1'; require 'wp-load.php'; $result = (function () { ${code} })(); echo "\\nPSEO_WP_RESULT ", json_encode($result), "\\n";`;
	const stdout = await run('php', ['-d', 'display_errors=stderr', '-r', script], env, WORDPRESS_DIR);
	const line = stdout.split('\n').find((text) => text.startsWith('PSEO_WP_RESULT '));
	if (!line) throw new Error(`PHP gave no result:\n${stdout}`);
	return JSON.parse(line.slice('PSEO_WP_RESULT '.length));
}

/** An Application Password for `login`, creating the user with `role` first when a role is given. */
async function appPassword(php: PhpRunner, login: string, role?: string): Promise<string> {
	const result = (await php(
		`
		$login = getenv('PSEO_WP_LOGIN');
		$role = getenv('PSEO_WP_ROLE');
		if ($role) {
			$id = wp_create_user($login, wp_generate_password(24), $login . '@example.com');
			if (is_wp_error($id)) return ['error' => $id->get_error_code() . ': ' . $id->get_error_message()];
			(new WP_User($id))->set_role($role);
		}
		$user = get_user_by('login', $login);
		if (!$user) return ['error' => "no user $login"];
		$created = WP_Application_Passwords::create_new_application_password($user->ID, ['name' => 'pseo']);
		if (is_wp_error($created)) return ['error' => $created->get_error_code() . ': ' . $created->get_error_message()];
		return ['password' => $created[0]];
		`,
		{ PSEO_WP_LOGIN: login, PSEO_WP_ROLE: role ?? '' },
	)) as { password?: string; error?: string };
	if (!result.password) throw new Error(`no Application Password for ${login}: ${result.error ?? 'unknown error'}`);
	return result.password;
}

/** SIGTERM to the server's process group, SIGKILL when it lingers. */
async function stopServer(child: ChildProcess): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null) {
		// The main process is gone; its workers may not be.
		killGroup(child, 'SIGKILL');
		return;
	}
	const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
	killGroup(child, 'SIGTERM');
	const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
	await exited;
	clearTimeout(timer);
}
