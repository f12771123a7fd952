import { randomBytes } from 'node:crypto';
import type { DirectusInstance } from './directus.ts';
import { checkResponse } from './response-contract.ts';

export interface ApiResponse<T = any> {
	status: number;
	body: T;
	headers: Headers;
}

/**
 * One HTTP call; `body` as an object is sent as JSON, as a string it is sent verbatim. A response from under
 * /pseo-endpoints must match the OpenAPI document (`response-contract.ts`), or the call throws.
 */
export async function call<T = any>(
	base: string | DirectusInstance,
	method: string,
	path: string,
	options: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
	const url = `${typeof base === 'string' ? base : base.url}${path}`;
	const headers: Record<string, string> = { ...options.headers };
	if (options.token) headers['authorization'] = `Bearer ${options.token}`;
	let body: string | undefined;
	if (options.body !== undefined) {
		headers['content-type'] ??= 'application/json';
		body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
	}
	const res = await fetch(url, { method, headers, body });
	const text = await res.text();
	let parsed: unknown = text;
	try {
		parsed = text ? JSON.parse(text) : null;
	} catch {
		// not JSON; keep the text
	}
	// Under /pseo-endpoints, a body the OpenAPI document does not describe fails the test that received it.
	checkResponse(method, url, res.status, res.headers.get('content-type'), parsed);
	return { status: res.status, body: parsed as T, headers: res.headers };
}

export const PSEO_USER_ROLE = '5e0a7c1e-7d1b-4f4e-9a61-3b3f2d9c0a02';
const PSEO_API_ROLE = '5e0a7c1e-7d1b-4f4e-9a61-3b3f2d9c0a04';

export interface TestUser {
	id: string;
	email: string;
	token: string;
}

/** A user who signs in with a password as well (the app's login screen, `POST /auth/login`). */
export interface PasswordUser extends TestUser {
	password: string;
}

interface UserOptions {
	balance?: number;
	role?: string;
	/**
	 * Gives the user a password. Only for a test that signs in with one: Directus hashes a password with argon2 when it
	 * stores it, about 200 ms of a core (20 ms for the rest of the user), and a run creates hundreds of users who
	 * call the API with their static token only.
	 */
	password?: boolean;
}

/**
 * Creates a user through Directus's own API, with a static token and a starting balance. API clients take the
 * "pSEO API Client" role (no app seat; Directus Core allows three seats).
 */
export async function createUser(instance: DirectusInstance, options: UserOptions & { password: true }): Promise<PasswordUser>;
export async function createUser(instance: DirectusInstance, options?: UserOptions & { password?: false }): Promise<TestUser>;
export async function createUser(instance: DirectusInstance, options: UserOptions = {}): Promise<TestUser | PasswordUser> {
	const suffix = randomBytes(5).toString('hex');
	const user = {
		email: `user-${suffix}@example.com`,
		token: `token-${suffix}-${randomBytes(8).toString('hex')}`,
		...(options.password ? { password: `pw-${suffix}` } : {}),
	};
	const res = await call(instance, 'POST', '/users', {
		token: instance.adminToken,
		body: {
			...user,
			role: options.role ?? PSEO_API_ROLE,
			status: 'active',
			pseo_token_balance: options.balance ?? 0,
		},
	});
	if (res.status !== 200) throw new Error(`createUser failed: ${res.status} ${JSON.stringify(res.body)}`);
	return { id: res.body.data.id, ...user };
}

/** Registers a website for `user` through the extension. */
export async function createWebsite(
	instance: DirectusInstance,
	user: TestUser,
	body: Record<string, unknown> = {},
): Promise<{ id: number }> {
	const res = await call(instance, 'POST', '/pseo-endpoints/pseo', {
		token: user.token,
		body: { website_url: 'https://example.com', master_prompt: 'Write helpful pages.', ...(instance.websiteModel ? { model: instance.websiteModel } : {}), ...body },
	});
	if (res.status !== 201) throw new Error(`createWebsite failed: ${res.status} ${JSON.stringify(res.body)}`);
	return res.body.data;
}

/** A user's balance, read by the admin. */
export async function balanceOf(instance: DirectusInstance, userId: string): Promise<number> {
	const res = await call(instance, 'GET', `/users/${userId}?fields=pseo_token_balance`, { token: instance.adminToken });
	return Number(res.body.data.pseo_token_balance);
}

/** Rows of a collection, read by the admin through the items API. */
export async function adminItems<T = any>(
	instance: DirectusInstance,
	collection: string,
	query = '',
): Promise<T[]> {
	const res = await call(instance, 'GET', `/items/${collection}?limit=-1${query ? `&${query}` : ''}`, {
		token: instance.adminToken,
	});
	if (res.status !== 200) throw new Error(`read ${collection} failed: ${res.status} ${JSON.stringify(res.body)}`);
	return res.body.data;
}

/** Asserts the interface's error envelope (section 7) and returns it. */
export function expectEnvelope(res: ApiResponse, status: number): { success: false; error: string; timestamp: string } {
	if (res.status !== status) {
		throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
	}
	const body = res.body;
	if (!body || body.success !== false || typeof body.error !== 'string' || body.error.length === 0) {
		throw new Error(`not an error envelope: ${JSON.stringify(body)}`);
	}
	if (typeof body.timestamp !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(body.timestamp)) {
		throw new Error(`bad timestamp in ${JSON.stringify(body)}`);
	}
	return body;
}

/** A plan page for seeding. */
export interface SeedPage {
	route: string;
	title: string;
	priority: number;
}

/** `count` plan pages `/page-1` ... with descending priority, so `/page-1` is generated first. */
export function planPages(count: number, prefix = '/page'): SeedPage[] {
	return Array.from({ length: count }, (_, i) => ({ route: `${prefix}-${i + 1}`, title: `Page ${i + 1}`, priority: count - i }));
}

/**
 * Stores a ready content plan for a website directly (as the admin), so generation tests do not depend on the
 * plan generator.
 */
export async function seedPlan(
	instance: DirectusInstance,
	user: TestUser,
	pseoId: number,
	pages: SeedPage[],
	language = 'en-US',
): Promise<number> {
	const res = await call(instance, 'POST', '/items/pseo_main_json', {
		token: instance.adminToken,
		body: {
			pseo_id: pseoId,
			user_id: user.id,
			status: 'ready',
			language_code: language,
			description: 'A test business that sells useful things to people who need them.',
			main_json: { pages },
			total_pages: pages.length,
		},
	});
	if (res.status !== 200) throw new Error(`seedPlan failed: ${res.status} ${JSON.stringify(res.body)}`);
	return res.body.data.id;
}

/** Polls a generation until it is completed or failed. */
export async function waitForJob(
	instance: DirectusInstance,
	user: TestUser,
	id: number,
	timeoutMs = 60_000,
): Promise<Record<string, any>> {
	const deadline = Date.now() + timeoutMs;
	let last: any;
	for (let attempt = 0; Date.now() < deadline; attempt++) {
		const res = await call(instance, 'GET', `/pseo-endpoints/generations/${id}`, { token: user.token });
		last = res.body;
		if (res.status === 200 && (res.body.data.status === 'completed' || res.body.data.status === 'failed')) return res.body.data;
		await pause(attempt);
	}
	throw new Error(`generation ${id} did not finish within ${timeoutMs} ms: ${JSON.stringify(last)}\n${instance.output().slice(-4000)}`);
}

/** Waits until `check` returns a truthy value. */
export async function eventually<T>(check: () => Promise<T | null | undefined | false>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (let attempt = 0; Date.now() < deadline; attempt++) {
		const value = await check();
		if (value) return value;
		await pause(attempt);
	}
	throw new Error(`timed out waiting for ${what}`);
}

/**
 * The wait between two polls: 20 ms at first, growing to 100 ms, and 250 ms once a wait has lasted about three
 * seconds. Most waits end within a few hundred milliseconds (a one-page job, a row written), and hundreds of them
 * run in a suite: a flat 100 ms gave each about 50 ms of nothing. The long ones wait for a lease to lapse or a batch
 * to be polled; every poll is a request that Directus authenticates and answers, and the run is short of CPU, not
 * of time (docs/testing.md): a quarter second more at the end of a long wait costs less than the polls it saves.
 */
function pause(attempt: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, attempt >= 30 ? 250 : Math.min(100, 20 * 2 ** attempt)));
}

/** Every ledger row of a user, oldest first. */
export async function ledgerOf(instance: DirectusInstance, userId: string): Promise<Record<string, any>[]> {
	return adminItems(instance, 'pseo_token_ledger', `filter[user_id][_eq]=${userId}&sort=id`);
}

/** A user with `balance` tokens and a website whose plan has `pages` pages (`/page-1` first). */
export async function plannedWebsite(
	instance: DirectusInstance,
	balance: number,
	pages: number,
): Promise<{ user: TestUser; pseoId: number }> {
	const user = await createUser(instance, { balance });
	const { id } = await createWebsite(instance, user);
	await seedPlan(instance, user, id, planPages(pages));
	return { user, pseoId: id };
}

/** What an admin does so that a user may upload to the file library: a policy with files create and read. */
export async function grantFileLibrary(directus: DirectusInstance, user: TestUser): Promise<void> {
	const policy = await call(directus, 'POST', '/policies', {
		token: directus.adminToken,
		body: {
			name: `files ${user.id}`,
			icon: 'folder',
			app_access: false,
			admin_access: false,
			permissions: [
				{ collection: 'directus_files', action: 'create', fields: ['*'], permissions: {}, validation: {} },
				{ collection: 'directus_files', action: 'read', fields: ['*'], permissions: {}, validation: {} },
			],
		},
	});
	if (policy.status !== 200) throw new Error(`policy: ${policy.status} ${JSON.stringify(policy.body)}`);
	const linked = await call(directus, 'POST', '/access', { token: directus.adminToken, body: { user: user.id, policy: policy.body.data.id } });
	if (linked.status !== 200) throw new Error(`access: ${linked.status} ${JSON.stringify(linked.body)}`);
}

export async function uploadFile(directus: DirectusInstance, user: TestUser, name: string, type: string, content: string): Promise<string> {
	const form = new FormData();
	form.append('file', new Blob([content], { type }), name);
	const res = await fetch(`${directus.url}/files`, { method: 'POST', headers: { authorization: `Bearer ${user.token}` }, body: form });
	const body = (await res.json()) as { data?: { id: string } };
	if (res.status !== 200 || !body.data) throw new Error(`upload: ${res.status} ${JSON.stringify(body)}`);
	return body.data.id;
}
