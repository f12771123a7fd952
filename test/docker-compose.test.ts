import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readConfig } from '../src/config/config.ts';

/*
 * docker-compose.yml is never run here (no Docker engine), so this keeps it honest against what the project
 * really reads: the variables the extension's configuration asks for, the bundle layout of package.json, the
 * pinned Directus version, and Directus's multi-instance settings.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

interface Service {
	image?: string;
	command?: string[];
	environment?: Record<string, string | number | boolean>;
	volumes?: string[];
	ports?: string[];
	healthcheck?: { test?: string[] | string };
	depends_on?: Record<string, { condition: string }>;
	deploy?: { replicas?: number };
	restart?: string;
	init?: boolean;
	stop_grace_period?: string;
	configs?: { source: string; target: string }[];
}

const compose = parse(read('docker-compose.yml'), { merge: true }) as {
	services: Record<string, Service>;
	configs?: Record<string, { content?: string }>;
	volumes?: Record<string, unknown>;
};
const example = parseEnv(read('.env.example')) as Record<string, string>;
const manifest = JSON.parse(read('package.json')) as {
	name: string;
	files: string[];
	devDependencies: Record<string, string>;
	'directus:extension': { path: Record<string, string> };
};
const services = compose.services;
const directus = services['directus']!;

/** Every variable `readConfig` reads, observed by running it over an env that records each lookup. */
function variablesRead(): string[] {
	const seen = new Set<string>();
	const recorder = new Proxy({} as Record<string, unknown>, {
		get(_target, key) {
			if (typeof key === 'string') seen.add(key);
			return undefined;
		},
	});
	readConfig(recorder);
	// The extension's own settings; Directus's own ones the configuration also reads (WEBSOCKETS_*) are Directus's to
	// document and default.
	return [...seen].filter((name) => /^(?:PSEO|OPENAI|ANTHROPIC|GEMINI|GOOGLE)_/.test(name)).sort();
}

/** Variable names written in the configuration modules' source. */
function variablesInSource(): string[] {
	const names = new Set<string>();
	for (const file of ['src/config/config.ts', 'src/config/sitemap-env.ts']) {
		for (const match of read(file).matchAll(/\b(?:PSEO|OPENAI|ANTHROPIC|GEMINI|GOOGLE)_[A-Z0-9_]*[A-Z0-9]\b/g)) names.add(match[0]);
	}
	return [...names].sort();
}

/** Compose's interpolation of `${NAME}`, `${NAME:-default}` and `${NAME:?error}` against an env file. */
function interpolate(value: string | number | boolean, env: Record<string, string>): string {
	return String(value).replace(/\$\{([A-Z0-9_]+)(?::?([-?])([^}]*))?\}/g, (_all, name: string, kind?: string, rest?: string) => {
		const present = env[name];
		if (present !== undefined && present !== '') return present;
		if (kind === '?') throw new Error(`${name} is required: ${rest}`);
		return kind === '-' ? (rest ?? '') : '';
	});
}

/** The secrets `.env.example` leaves empty, so that compose refuses to start until the user sets them. */
const SECRETS = ['KEY', 'SECRET', 'ADMIN_PASSWORD', 'DB_PASSWORD'];

/** `.env.example` as a user has it after following docs/deployment.md: the secrets generated and set. */
const configured = { ...example, ...Object.fromEntries(SECRETS.map((name) => [name, `generated-${name.toLowerCase()}`])) };

const effective = Object.fromEntries(
	Object.entries(directus.environment ?? {}).map(([name, value]) => [name, interpolate(value, configured)]),
);

function durationMs(value: string): number {
	const match = /^(\d+)(ms|s|m)$/.exec(value);
	if (!match) throw new TypeError(`not a compose duration: ${JSON.stringify(value)}`);
	return Number(match[1]) * { ms: 1, s: 1000, m: 60_000 }[match[2] as 'ms' | 's' | 'm'];
}

describe('docker-compose.yml and .env.example', () => {
	const configVariables = variablesRead();

	it('the recorded configuration variables are exactly the ones the configuration modules name', () => {
		expect(configVariables.length).toBeGreaterThanOrEqual(29);
		expect(configVariables).toEqual(variablesInSource());
	});

	it('2 every variable the extension reads is in .env.example and passed to Directus from it', () => {
		for (const name of configVariables) {
			expect(Object.keys(example), `.env.example lacks ${name}`).toContain(name);
			expect(String(directus.environment?.[name]), `directus service: ${name}`).toMatch(new RegExp(`^\\$\\{${name}(?::[-?].*)?\\}$`));
		}
	});

	it('2 the extension settings of .env.example are valid and show the extension defaults', () => {
		const fromExample = readConfig(example);
		const defaults = readConfig({});
		const { openaiApiKey: _key, openaiBaseUrl: baseUrl, redis, ...settings } = fromExample;
		const { openaiApiKey: _none, openaiBaseUrl: _sdk, redis: _noRedis, ...defaultSettings } = defaults;
		expect(settings).toEqual(defaultSettings);
		expect(baseUrl).toBe('https://api.openai.com/v1');
		// Directus's own Redis, which the provider pacing shares.
		expect(redis).toBe('redis://redis:6379');
		expect(readConfig(effective)).toEqual(fromExample);
	});

	it('1 the operating contract and Directus settings are wired from .env.example', () => {
		const required = ['KEY', 'SECRET', 'ADMIN_EMAIL', 'ADMIN_PASSWORD', 'PUBLIC_URL', 'LOG_LEVEL', 'DB_CLIENT', 'DB_HOST', 'DB_PORT', 'DB_DATABASE', 'DB_USER', 'DB_PASSWORD', 'REDIS'];
		for (const name of required) {
			expect(Object.keys(example), `.env.example lacks ${name}`).toContain(name);
			expect(String(directus.environment?.[name]), `directus service: ${name}`).toContain(`\${${name}`);
		}
		for (const secret of ['KEY', 'SECRET', 'ADMIN_PASSWORD', 'DB_PASSWORD']) {
			// No fallback: compose refuses to start without it rather than run with a guessable value.
			expect(String(directus.environment?.[secret])).toMatch(/^\$\{[A-Z_]+:\?.+\}$/);
		}
		expect(effective['DB_CLIENT']).toBe('pg');
		expect(effective['DB_HOST']).toBe('postgres');
		expect(new URL(effective['REDIS']!).hostname).toBe('redis');
	});

	it('ships no secret: KEY, SECRET, ADMIN_PASSWORD and DB_PASSWORD are empty in .env.example', () => {
		for (const name of SECRETS) expect(example[name], name).toBe('');
	});

	it('a copied .env.example without its secrets set makes compose refuse to start, naming each secret', () => {
		for (const name of SECRETS) {
			const unset = { ...configured, [name]: '' };
			const refusals = Object.values(services).flatMap((service) =>
				Object.values(service.environment ?? {}).flatMap((value) => {
					try {
						interpolate(value, unset);
						return [];
					} catch (error) {
						return [String(error)];
					}
				}),
			);
			expect(refusals.join('\n'), name).toContain(`${name} is required`);
		}
	});

	it('the deployment guide says how to generate each secret', () => {
		const guide = read('docs/deployment.md');
		expect(guide).toMatch(/openssl rand/);
		for (const name of SECRETS) expect(guide, name).toContain(`\`${name}\``);
	});

	it('5 every instance shares PostgreSQL and Redis: synchronisation, cache and rate limiter on Redis', () => {
		for (const name of ['SYNCHRONIZATION_STORE', 'CACHE_STORE', 'RATE_LIMITER_STORE']) {
			expect(example[name], name).toBe('redis');
			expect(effective[name], name).toBe('redis');
		}
		expect(services[effective['DB_HOST']!]?.image).toMatch(/^postgres:/);
		expect(services[new URL(effective['REDIS']!).hostname]?.image).toMatch(/^redis:/);
		const postgres = services['postgres']!.environment ?? {};
		expect(interpolate(postgres['POSTGRES_DB']!, configured)).toBe(effective['DB_DATABASE']);
		expect(interpolate(postgres['POSTGRES_USER']!, configured)).toBe(effective['DB_USER']);
		expect(interpolate(postgres['POSTGRES_PASSWORD']!, configured)).toBe(effective['DB_PASSWORD']);
	});

	it('runs at least two Directus replicas behind one proxy that balances over them', () => {
		expect(directus.deploy?.replicas).toBeGreaterThanOrEqual(2);
		// Replicas cannot share a published port; only the proxy publishes one.
		expect(directus.ports).toBeUndefined();
		const proxy = services['proxy']!;
		expect(proxy.ports?.length).toBe(1);
		const caddyfile = compose.configs?.[proxy.configs?.[0]?.source ?? '']?.content ?? '';
		expect(caddyfile).toMatch(/name directus\b/);
		expect(caddyfile).toContain(`port ${effective['PORT']}`);
		expect(proxy.depends_on?.['directus']?.condition).toBe('service_healthy');
	});

	it('uses the official Directus image at the version the project pins and tests against', () => {
		const pinned = manifest.devDependencies['directus'];
		expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
		expect(directus.image).toBe(`directus/directus:${pinned}`);
		expect(services['bootstrap']!.image).toBe(directus.image);
	});

	it('mounts the built bundle where Directus loads it: <EXTENSIONS_PATH>/<name>/{package.json,dist}', () => {
		const target = `${effective['EXTENSIONS_PATH']}/${manifest.name}`;
		expect(effective['EXTENSIONS_PATH']).toBe('/directus/extensions');
		const mounts = (directus.volumes ?? []).map((volume) => volume.split(':'));
		expect(mounts).toContainEqual(['./package.json', `${target}/package.json`, 'ro']);
		const folders = new Set(Object.values(manifest['directus:extension'].path).map((file) => path.posix.dirname(file)));
		expect(folders.size).toBe(1);
		for (const folder of folders) {
			expect(manifest.files).toContain(folder);
			expect(mounts).toContainEqual([`./${folder}`, `${target}/${folder}`, 'ro']);
		}
		expect(existsSync(path.join(ROOT, 'package.json'))).toBe(true);
		// Shared uploads, so a file stored through one replica is served by every other.
		expect(mounts.some(([source, destination]) => destination === '/directus/uploads' && source && compose.volumes && source in compose.volumes)).toBe(true);
	});

	it('bootstraps the database once, before any replica starts', () => {
		const bootstrap = services['bootstrap']!;
		expect(bootstrap.command).toEqual(['node', 'cli.js', 'bootstrap']);
		expect(bootstrap.restart).toBe('no');
		expect(bootstrap.volumes).toEqual(directus.volumes);
		expect(bootstrap.environment).toEqual(directus.environment);
		expect(directus.depends_on?.['bootstrap']?.condition).toBe('service_completed_successfully');
	});

	it('every long-running service has a health check, and Directus waits for healthy PostgreSQL and Redis', () => {
		for (const [name, service] of Object.entries(services)) {
			if (name === 'bootstrap') continue;
			expect(service.healthcheck?.test?.length, `${name} healthcheck`).toBeGreaterThan(0);
		}
		const test = JSON.stringify(directus.healthcheck?.test);
		expect(test).toContain('/server/health');
		// The extension's own health route: an instance without the extension is not healthy.
		expect(test).toContain('/pseo-endpoints/');
		for (const dependency of ['postgres', 'redis']) {
			expect(directus.depends_on?.[dependency]?.condition).toBe('service_healthy');
			expect(services['bootstrap']!.depends_on?.[dependency]?.condition).toBe('service_healthy');
		}
	});

	it('5 a stopping replica has time to drain: Node gets the SIGTERM, and the stop grace outlasts PSEO_SHUTDOWN_GRACE_MS', () => {
		// Node is not PID 1: an init forwards the signal (Node as PID 1 would get no default SIGTERM handling).
		expect(directus.init).toBe(true);
		expect(durationMs(directus.stop_grace_period ?? '10s')).toBeGreaterThan(readConfig(effective).shutdownGraceMs);
	});

	it('starts each replica as one Node process with the heap flag npm start uses', () => {
		const startScript = read('scripts/start.mjs');
		expect(startScript).toContain('--heap-growing-percent=30');
		expect(directus.command).toEqual(['node', '--heap-growing-percent=30', 'cli.js', 'start']);
		// The one-shot bootstrap runs the migrations; the replicas only start.
		expect(services['bootstrap']!.command).toEqual(['node', 'cli.js', 'bootstrap']);
	});
});
