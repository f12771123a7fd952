import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createUser, expectEnvelope, type TestUser } from './support/api.ts';
import { shareDirectus, type DirectusInstance } from './support/directus.ts';
import { CORE_INTERFACE_LEGS, legAvailable } from './support/legs.ts';
import { SECRET } from './support/paths.ts';

/** This suite's own website address: the instance is shared, so "no website was created" counts only these. */
const WEBSITE_URL = `https://auth-${randomBytes(4).toString('hex')}.example`;

/** Every route that needs a Bearer token (interface section 4), with a body that would otherwise be valid. */
const PROTECTED: { method: string; path: string; body?: unknown }[] = [
	{ method: 'POST', path: '/pseo-endpoints/pseo', body: { website_url: WEBSITE_URL, master_prompt: 'x' } },
	{ method: 'POST', path: '/pseo-endpoints/trigger/on-demand-generation', body: { pseo_id: 1, post_count: 1 } },
	{ method: 'POST', path: '/pseo-endpoints/trigger/bulk-generation', body: { pseo_id: 1, post_count: 2 } },
	{ method: 'GET', path: '/pseo-endpoints/generations/1' },
	{ method: 'GET', path: '/pseo-endpoints/generations?pseo_id=1' },
	{ method: 'POST', path: '/pseo-endpoints/generate/main-json', body: { pseo_id: 1, language_code: 'en-US', description: 'x'.repeat(200) } },
	{ method: 'GET', path: '/pseo-endpoints/fetch-sitemap?pseo_id=1' },
	{ method: 'GET', path: '/pseo-endpoints/balance' },
];

const base64url = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** An HS256 JWT shaped like Directus's own access tokens, signed with `secret`. */
function jwt(payload: Record<string, unknown>, secret: string): string {
	const head = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url(payload)}`;
	return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`;
}

describe.each(CORE_INTERFACE_LEGS)('authentication on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let directus: DirectusInstance;
		let alice: TestUser;
		let failures: [string, string | null][];

		beforeAll(async () => {
			directus = await shareDirectus(leg);
			alice = await createUser(directus, { balance: 5 });
			const now = Math.floor(Date.now() / 1000);
			const claims = { id: alice.id, role: null, app_access: false, admin_access: false, iss: 'directus' };
			failures = [
				['a missing token', null],
				['a JWT signed with the wrong secret', jwt({ ...claims, iat: now, exp: now + 900 }, 'not-the-instance-secret')],
				['a malformed JWT', `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url('{not json')}.c2ln`],
				['a JWT missing its claims', jwt({ iss: 'directus', iat: now, exp: now + 900 }, SECRET)],
				['an expired JWT', jwt({ ...claims, iat: now - 7200, exp: now - 3600 }, SECRET)],
				['an unknown static token', 'token-that-no-user-has-0123456789'],
			];
		});
		afterAll(async () => {
			await directus?.dispose();
		});

		it('5.3 a valid static token passes authentication on every protected route (the control case)', async () => {
			for (const route of PROTECTED) {
				const res = await call(directus, route.method, route.path, { token: alice.token, body: route.body });
				const label = `${route.method} ${route.path}: ${res.status} ${JSON.stringify(res.body)}`;
				expect(res.status, label).not.toBe(401);
				expect(['INVALID_TOKEN', 'TOKEN_EXPIRED', 'INVALID_CREDENTIALS', 'PSEO_UNAUTHORIZED'], label).not.toContain(res.body?.code);
			}
		});

		it('5.3 and 7 every token failure on every protected route answers 401 in the envelope', async () => {
			for (const [what, token] of failures) {
				for (const route of PROTECTED) {
					const res = await call(directus, route.method, route.path, { token, body: route.body });
					const label = `${what} on ${route.method} ${route.path}: ${res.status} ${JSON.stringify(res.body)}`;
					expect(res.status, label).toBe(401);
					const body = expectEnvelope(res, 401);
					expect(body, label).not.toHaveProperty('errors');
				}
			}
		});

		it('5.3 a token failure changes nothing: no website is created and no token is charged', async () => {
			const websites = async () => (await call(directus, 'GET', `/items/pseo?limit=-1&filter[website_url][_contains]=${new URL(WEBSITE_URL).hostname}`, { token: directus.adminToken })).body.data.length;
			const before = await websites();
			// The control case above made one: the count below can see a website made with this body.
			expect(before).toBeGreaterThan(0);
			const balance = async () => (await call(directus, 'GET', '/pseo-endpoints/balance', { token: alice.token })).body.data.balance;
			const balanceBefore = await balance();
			for (const [, token] of failures) {
				expect((await call(directus, 'POST', '/pseo-endpoints/pseo', { token, body: PROTECTED[0]!.body })).status).toBe(401);
			}
			expect(await websites()).toBe(before);
			expect(await balance()).toBe(balanceBefore);
		});
	});
});
