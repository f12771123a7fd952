import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { startFakeProvider, type FakeProvider } from './fake-provider/server.ts';
import type { SharedInstanceInfo } from './instance-broker.ts';
import { copyDatabase as copyFrom, launchDirectus, type DatabaseCopy, type DirectusInstance, type Leg } from './instance.ts';

export type { DatabaseCopy, DirectusInstance, Leg } from './instance.ts';

/** A fresh database for one test file, copied from the template global-setup bootstrapped. */
export function copyDatabase(leg: Leg): Promise<DatabaseCopy> {
	const template = {
		sqlite: inject('sqliteTemplate'),
		'sqlite-d11': inject('sqliteD11Template'),
		postgres: inject('pgTemplate'),
		mariadb: inject('mariadbTemplate'),
		stock: inject('stockTemplate'),
	}[leg];
	return copyFrom(leg, template, inject('pgPrefix'));
}

/**
 * Starts a private Directus (as `npm start` does) on a fresh copy of the template, or on `database`: for a suite
 * that stops, kills, pauses or restarts it, or sets what every user of an instance would see. Any other suite
 * takes `shareDirectus`.
 */
export async function startDirectus(options: {
	leg: Leg;
	env?: Record<string, string>;
	/** The first start's `extraEnv`: what `restart(extraEnv)` would add, without a start with `env` alone before it. */
	startEnv?: Record<string, string>;
	database?: DatabaseCopy;
}): Promise<DirectusInstance> {
	return launchDirectus({ ...options, database: options.database ?? (await copyDatabase(options.leg)) });
}

/**
 * The Directus of `leg` with `env` that every suite asking the same shares (instance-broker.ts): already running
 * when another suite asked for it, booted otherwise. The suite makes its own users and websites on it; it may not
 * stop, kill or restart it. `dispose()` lets it go: the broker stops it once no suite has held it for a while.
 */
export async function shareDirectus(leg: Leg, env: Record<string, string> = {}): Promise<DirectusInstance> {
	const info = await broker<SharedInstanceInfo>('POST', '/instances', { leg, env });
	return sharedHandle(leg, env, info, () => broker('POST', '/release', { key: info.key }).then(() => {}));
}

/**
 * `shareDirectus`, with a fake provider of this suite's own behind the instance's provider address: the websites
 * that `createWebsite` makes on it name a model that only this suite uses, and the instance's tenant router passes
 * their calls to this fake, so its counters and knobs are this suite's alone. Close the fake after `dispose()`.
 */
export async function shareDirectusWithFake(leg: Leg, env: Record<string, string> = {}): Promise<{ directus: DirectusInstance; fake: FakeProvider }> {
	const [info, fake] = await Promise.all([broker<SharedInstanceInfo>('POST', '/instances', { leg, env }), startFakeProvider()]);
	const model = `pseo-suite-${randomBytes(5).toString('hex')}`;
	await broker('POST', '/tenants', { key: info.key, model, origin: fake.url });
	const release = async () => {
		await broker('DELETE', '/tenants', { key: info.key, model });
		await broker('POST', '/release', { key: info.key });
	};
	const directus = sharedHandle(leg, env, info, release, model);
	return { directus, fake };
}

function sharedHandle(leg: Leg, env: Record<string, string>, info: SharedInstanceInfo, release: () => Promise<void>, websiteModel?: string): DirectusInstance {
	const refuse = (what: string) => () => {
		throw new Error(`This Directus is shared by other suites: a suite that must ${what} it starts a private one (startDirectus).`);
	};
	return {
		url: info.url,
		leg,
		adminToken: info.adminToken,
		...(websiteModel ? { websiteModel } : {}),
		output: () => readFileSync(info.logFile, 'utf8'),
		stop: refuse('stop'),
		running: () => true,
		kill: refuse('kill'),
		pause: refuse('pause'),
		resume: refuse('resume'),
		restart: refuse('restart'),
		startedWith: () => env,
		dispose: release,
	};
}

async function broker<T>(method: string, path: string, body: unknown): Promise<T> {
	const res = await fetch(`${inject('instanceBroker')}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
	const answer = (await res.json()) as T & { error?: string };
	if (!res.ok) throw new Error(`the instance broker answered ${res.status}: ${answer.error ?? JSON.stringify(answer)}`);
	return answer;
}

/**
 * The hooks of a suite on a shared Directus, registered in the calling `describe`: the instance of `leg` and `env`
 * with this suite's own fake behind it, asked for before the tests, the fake reset after each test, both let go
 * after the last. Returns stand-ins for the two, usable in the tests as the objects themselves once the suite runs.
 */
export function useSharedDirectus(leg: Leg, env: Record<string, string>): { directus: DirectusInstance; fake: FakeProvider } {
	let current: { directus: DirectusInstance; fake: FakeProvider } | null = null;
	beforeAll(async () => {
		current = await shareDirectusWithFake(leg, env);
	});
	afterEach(() => current?.fake.reset());
	afterAll(async () => {
		await current?.directus.dispose();
		await current?.fake.close();
	});
	const use = <K extends 'directus' | 'fake'>(key: K) => {
		if (!current) throw new Error(`the shared Directus of ${leg} is used before the suite's beforeAll asked for it`);
		return current[key];
	};
	return { directus: standIn(() => use('directus')), fake: standIn(() => use('fake')) };
}

/** An object that forwards every property to `target()`, its methods bound to it (a fake keeps `#private` state). */
function standIn<T extends object>(target: () => T): T {
	return new Proxy({} as T, {
		get(_, property) {
			const real = target();
			const value: unknown = Reflect.get(real, property, real);
			return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(real) : value;
		},
	});
}
