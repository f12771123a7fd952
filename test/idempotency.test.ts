import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, balanceOf, call, createUser, createWebsite, eventually, expectEnvelope, waitForJob, type ApiResponse } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { expectLedgerBalances, expectPostsOnce, plannedSite } from './support/job-checks.ts';
import { LEGS, legAvailable } from './support/legs.ts';

/*
 * Idempotency-Key on the POSTs that create or charge (docs/api.md): a retry gets the first answer again, never a
 * second job or charge, even when the first answer was lost to a kill -9 after the trigger's transaction committed.
 */

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const PAGE_RATE = 10;

describe.each(LEGS)('Idempotency-Key on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let fake: FakeProvider;
		let directus: DirectusInstance;
		const faultFile = path.join(os.tmpdir(), `pseo-fault-${process.pid}-${randomBytes(3).toString('hex')}`);

		beforeAll(async () => {
			fake = await startFakeProvider();
			writeFileSync(faultFile, '');
			directus = await startDirectus({ leg, env: { OPENAI_BASE_URL: fake.url, PSEO_TEST_FAULT_FILE: faultFile, PSEO_PROVIDER_BACKOFF_MS: '20' } });
		});
		afterEach(() => {
			writeFileSync(faultFile, '');
			fake.reset();
		});
		afterAll(async () => {
			await directus?.dispose();
			await fake?.close();
			rmSync(faultFile, { force: true });
		});

		const trigger = (token: string, body: unknown, key?: string): Promise<ApiResponse> =>
			call(directus, 'POST', ON_DEMAND, { token, body, ...(key ? { headers: { 'idempotency-key': key } } : {}) });

		it('a repeat with the same key and body gets the first answer again, marked as replayed, and is charged once', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 2);
			const key = randomUUID();
			const first = await trigger(user.token, { pseo_id: site.pseoId, post_count: 1 }, key);
			expect(first.status).toBe(202);
			expect(first.headers.get('idempotent-replayed')).toBeNull();
			// The same JSON with its keys in another order is the same request.
			const again = await trigger(user.token, { post_count: 1, pseo_id: site.pseoId }, key);
			expect(again.status).toBe(202);
			expect(again.headers.get('idempotent-replayed')).toBe('true');
			expect(again.body).toEqual(first.body);
			await waitForJob(directus, user, first.body.generation_id);
			expect(await adminItems(directus, 'pseo_generations', `filter[user_id][_eq]=${user.id}`)).toHaveLength(1);
			expect(await balanceOf(directus, user.id)).toBe(100 - PAGE_RATE);
			// Without a key, the same body is a new request: here the website is free again, so a second job.
			const unkeyed = await trigger(user.token, { pseo_id: site.pseoId, post_count: 1 });
			expect(unkeyed.status).toBe(202);
			expect(unkeyed.body.generation_id).not.toBe(first.body.generation_id);
		});

		it('a key sent again with another body is a 422, a bad key a 400, and another user\'s same key is theirs alone', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 2);
			const key = randomUUID();
			expect((await trigger(user.token, { pseo_id: site.pseoId, post_count: 1 }, key)).status).toBe(202);
			// Another body: the same request for the user's second website.
			const second = await plannedSite(directus, user, 1);
			const reused = await trigger(user.token, { pseo_id: second.pseoId, post_count: 1 }, key);
			expect(expectEnvelope(reused, 422)).toMatchObject({ code: 'PSEO_IDEMPOTENCY_KEY_REUSED' });
			expect(reused.body.error).toContain(key);
			for (const bad of ['', 'x'.repeat(256), 'with space']) {
				const refused = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 }, headers: { 'idempotency-key': bad } });
				expect(expectEnvelope(refused, 400).error, JSON.stringify(bad)).toMatch(/Idempotency-Key/);
			}
			const other = await createUser(directus, { balance: 100 });
			const theirs = await plannedSite(directus, other, 1);
			const res = await trigger(other.token, { pseo_id: theirs.pseoId, post_count: 1 }, key);
			expect(res.status).toBe(202);
			expect(res.headers.get('idempotent-replayed')).toBeNull();
		});

		it('a request that failed leaves its key free: after a 402, the same key runs once the balance allows it', async () => {
			const user = await createUser(directus, { balance: 5 });
			const site = await plannedSite(directus, user, 1);
			const key = randomUUID();
			expectEnvelope(await trigger(user.token, { pseo_id: site.pseoId, post_count: 1 }, key), 402);
			const topUp = await call(directus, 'PATCH', `/users/${user.id}`, { token: directus.adminToken, body: { pseo_token_balance: 100 } });
			expect(topUp.status).toBe(200);
			const res = await trigger(user.token, { pseo_id: site.pseoId, post_count: 1 }, key);
			expect(res.status).toBe(202);
			expect(res.headers.get('idempotent-replayed')).toBeNull();
		});

		it('a concurrent twin of a request still running is a 409; once it has answered, the twin gets its answer', async () => {
			const user = await createUser(directus, { balance: 100 });
			// On loopback, which the address guard refuses at once: the plan reads no sitemap, and sends nothing out.
			const site = await createWebsite(directus, user, { website_url: 'http://127.0.0.1:9' });
			const key = randomUUID();
			const body = { pseo_id: site.id, description: 'A family bakery in Lyon that bakes sourdough bread, viennoiseries, seasonal pastries and celebration cakes, with a small tea room and catering for weddings and company events.', language_code: 'fr-FR' };
			// The plan waits at the provider until released: its key stays taken meanwhile.
			fake.configure({ holdChat: true });
			const first = call(directus, 'POST', '/pseo-endpoints/generate/main-json', { token: user.token, body, headers: { 'idempotency-key': key } });
			await eventually(async () => fake.heldChat() > 0, 30_000, 'the plan call at the provider');
			const twin = await call(directus, 'POST', '/pseo-endpoints/generate/main-json', { token: user.token, body, headers: { 'idempotency-key': key } });
			expect(expectEnvelope(twin, 409)).toMatchObject({ code: 'PSEO_IDEMPOTENCY_KEY_IN_USE' });
			fake.configure({ holdChat: false });
			fake.releaseChat();
			const answered = await first;
			expect(answered.status).toBe(200);
			const replay = await call(directus, 'POST', '/pseo-endpoints/generate/main-json', { token: user.token, body, headers: { 'idempotency-key': key } });
			expect(replay.status).toBe(200);
			expect(replay.headers.get('idempotent-replayed')).toBe('true');
			expect(replay.body).toEqual(answered.body);
			const ledger = await expectLedgerBalances(directus, user);
			expect(ledger.filter((row) => row.reason === 'charge')).toHaveLength(1);
		});

		it('5 a kill -9 between the trigger\'s commit and its answer: the retry with the key gets the same generation_id, one job, one charge', async () => {
			const user = await createUser(directus, { balance: 100 });
			const site = await plannedSite(directus, user, 2);
			const key = randomUUID();
			const body = { pseo_id: site.pseoId, post_count: 1 };
			writeFileSync(faultFile, 'after-trigger-commit');
			// The client sees the connection drop: it cannot know whether the job was accepted.
			await expect(trigger(user.token, body, key)).rejects.toThrow();
			await eventually(async () => !directus.running(), 30_000, 'the instance to die at the fault point');
			expect(directus.output()).toContain('fault point after-trigger-commit reached');
			writeFileSync(faultFile, '');
			await directus.restart();

			const retried = await trigger(user.token, body, key);
			expect(retried.status).toBe(202);
			expect(retried.headers.get('idempotent-replayed')).toBe('true');
			const jobs = await adminItems(directus, 'pseo_generations', `filter[user_id][_eq]=${user.id}`);
			expect(jobs).toHaveLength(1);
			expect(retried.body.generation_id).toBe(Number(jobs[0].id));
			const job = await waitForJob(directus, user, retried.body.generation_id);
			expect(job).toMatchObject({ status: 'completed', created_count: 1 });
			await expectPostsOnce(directus, site.pseoId, site.routes.slice(0, 1));
			const ledger = await expectLedgerBalances(directus, user);
			expect(ledger.map((row) => [row.reason, Number(row.amount)])).toEqual([['grant', 100], ['charge', -PAGE_RATE]]);
		});
	});
});
