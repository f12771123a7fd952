import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { call, createUser, waitForJob, type ApiResponse } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { jobRow, plannedSite } from './support/job-checks.ts';
import { LEGS, legAvailable } from './support/legs.ts';

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const PLAN = '/pseo-endpoints/generate/main-json';
const DESCRIPTION =
	'A family bakery in Lyon that bakes sourdough bread, viennoiseries and celebration cakes to order, delivers to offices across the city every morning, and teaches weekend baking classes.';
/** Keys as an admin would enter them in Settings → AI; neither may show anywhere but at the provider. */
const FIRST_KEY = 'sk-settings-first-2f9c1e';
const SECOND_KEY = 'sk-settings-second-7b4d0a';

/*
 * Settings → AI (directus_settings) as the provider's configuration, with no OPENAI_API_KEY in the environment:
 * the OpenAI key an admin saved there runs plans and jobs, a new key is used by the next call without a restart,
 * and OPENAI_API_KEY in the environment still wins. OPENAI_BASE_URL sends the OpenAI protocol to the test's
 * provider, as it would to a gateway. (Settings → AI's OpenAI-compatible server is a licensed Directus feature,
 * which a test instance may not save: its choice is covered by provider-source.test.ts.)
 */
describe.each(LEGS)('providers from Settings → AI on %s', (leg) => {
	describe.skipIf(!legAvailable(leg))(`${leg}`, () => {
		let fake: FakeProvider;
		let directus: DirectusInstance;
		/** Every answer of our routes in this suite, scanned for keys at the end. */
		const answers: ApiResponse[] = [];
		const send = async (...args: Parameters<typeof call>) => {
			const res = await call(...args);
			answers.push(res);
			return res;
		};

		beforeAll(async () => {
			fake = await startFakeProvider();
			// No OPENAI_API_KEY, no OPENAI_BASE_URL: the provider can come from Directus alone.
			directus = await startDirectus({ leg, env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: fake.url, PSEO_PROVIDER_BACKOFF_MS: '20', PSEO_PLAN_PAGES: '6', LOG_LEVEL: 'info' } });
		});
		afterAll(async () => {
			await directus?.dispose();
			await fake?.close();
		});

		const saveSettings = async (body: Record<string, unknown>) => {
			const res = await call(directus, 'PATCH', '/settings', { token: directus.adminToken, body });
			expect(res.status, JSON.stringify(res.body)).toBe(200);
		};
		const keysSeen = (from: number) => [...new Set(fake.requests.slice(from).map((entry) => entry.apiKey))];

		it('an OpenAI key saved in Settings → AI runs plans and jobs, and a new key takes effect on the next call without a restart', async () => {
			const user = await createUser(directus, { balance: 500 });
			const { pseoId } = await plannedSite(directus, user, 3);

			// Nothing configured anywhere: the job fails, refunded, and says where to configure a provider.
			const unconfigured = await send(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			const failed = await waitForJob(directus, user, unconfigured.body.generation_id as number);
			expect(failed['status']).toBe('failed');
			expect(failed['last_error']).toMatchObject({ code: 'missing_api_key' });
			expect(failed['failed_routes'][0].error).toMatch(/Settings → AI/);
			expect(fake.requests).toHaveLength(0);

			await saveSettings({ ai_openai_api_key: FIRST_KEY });
			const plan = await send(directus, 'POST', PLAN, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', description: DESCRIPTION } });
			expect(plan.status, JSON.stringify(plan.body)).toBe(200);
			const job = await send(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect((await waitForJob(directus, user, job.body.generation_id as number))['status']).toBe('completed');
			expect(keysSeen(0)).toEqual([FIRST_KEY]);

			// The admin rotates the key: the next call carries the new one, with no restart.
			await saveSettings({ ai_openai_api_key: SECOND_KEY });
			const before = fake.requests.length;
			const next = await send(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect((await waitForJob(directus, user, next.body.generation_id as number))['status']).toBe('completed');
			expect(keysSeen(before)).toEqual([SECOND_KEY]);

			// No key in any answer of ours, in a job row, or in the log.
			const rows = await Promise.all([unconfigured, job, next].map((res) => jobRow(directus, res.body.generation_id as number)));
			const health = await send(directus, 'GET', '/pseo-endpoints/', { token: directus.adminToken });
			expect(health.status).toBe(200);
			const seen = JSON.stringify([answers.map((res) => res.body), rows]) + directus.output();
			for (const secret of [FIRST_KEY, SECOND_KEY]) expect(seen).not.toContain(secret);
			expect(directus.output()).toContain('AI provider configured from Settings → AI');
		});

		it('OPENAI_API_KEY in the environment wins over Settings → AI', async () => {
			expect(await directus.stop()).toBe(0);
			await directus.restart({ OPENAI_API_KEY: 'sk-environment-key' });
			const user = await createUser(directus, { balance: 100 });
			const { pseoId } = await plannedSite(directus, user, 2);
			const before = fake.requests.length;
			const job = await send(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			const ended = await waitForJob(directus, user, job.body.generation_id as number);
			expect(ended['status'], JSON.stringify(ended)).toBe('completed');
			expect(keysSeen(before)).toEqual(['sk-environment-key']);
		});
	});
});
