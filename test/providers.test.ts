import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import { adminItems, balanceOf, call, createUser, eventually, expectEnvelope, ledgerOf, seedPlan, planPages, waitForJob, type ApiResponse, type TestUser } from './support/api.ts';
import { startDirectus, type DirectusInstance } from './support/directus.ts';
import { expectLedgerBalances, jobRow, plannedSite, postedRoutes } from './support/job-checks.ts';
import { LEGS, legAvailable } from './support/legs.ts';

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const BULK = '/pseo-endpoints/trigger/bulk-generation';
const PLAN = '/pseo-endpoints/generate/main-json';
const PROVIDERS = '/pseo-endpoints/providers';
const DESCRIPTION =
	'A family bakery in Lyon that bakes sourdough bread, viennoiseries and celebration cakes to order, delivers to offices across the city every morning, and teaches weekend baking classes.';
/** Keys as an admin would enter them in Settings → AI; none may show anywhere but at the provider. */
const ANTHROPIC_KEY = 'sk-ant-settings-first-5c1d9e';
const ROTATED_KEY = 'sk-ant-settings-second-0a7f3b';
/** OpenAI keys as an admin would enter them in Settings → AI. */
const FIRST_KEY = 'sk-settings-first-2f9c1e';
const SECOND_KEY = 'sk-settings-second-7b4d0a';
const ALLOWED = ['claude-haiku-4-5', 'claude-sonnet-4-6'];
const GOOGLE_KEY = 'AIza-settings-google-4e8b2c';

let serial = 0;

/*
 * The providers as Directus keeps them: keys and allowed models saved in Settings → AI, with no provider variable in
 * the environment (the *_BASE_URL variables only point each protocol at the test's provider, as they would at a
 * gateway). An OpenAI key saved there runs plans and jobs, and a new one takes effect without a restart; the
 * environment's OPENAI_API_KEY still wins. (Settings → AI's OpenAI-compatible server is a licensed Directus feature,
 * which a test instance may not save: its choice is covered by provider-source.test.ts.) A website names its
 * provider and model (Anthropic, Google): its plans and jobs run with them, jobs record them, a model the settings
 * do not allow is refused before any charge, and Anthropic's bulk jobs run through the Message Batches API.
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
			directus = await startDirectus({
				leg,
				env: {
					OPENAI_API_KEY: '',
					OPENAI_BASE_URL: fake.url,
					ANTHROPIC_BASE_URL: fake.url.replace(/\/v1$/, ''),
					GOOGLE_GEMINI_BASE_URL: fake.url.replace(/\/v1$/, ''),
					PSEO_PROVIDER_BACKOFF_MS: '20',
					PSEO_PLAN_PAGES: '6',
					PSEO_CONCURRENCY: '2',
					LOG_LEVEL: 'info',
				},
			});
		});
		afterEach((context) => {
			if (context.task.result?.state === 'fail') console.error(directus.output().slice(-6000));
			fake.reset();
		});
		afterAll(async () => {
			await directus?.dispose();
			await fake?.close();
		});

		const saveSettings = async (body: Record<string, unknown>) => {
			const res = await call(directus, 'PATCH', '/settings', { token: directus.adminToken, body });
			expect(res.status, JSON.stringify(res.body)).toBe(200);
		};
		/** A website naming `provider` and `model`, with a plan of `pages` pages of routes unique in the run. */
		const claudeSite = async (user: TestUser, pages: number, model: string | null = 'claude-sonnet-4-6', provider = 'anthropic') => {
			const created = await send(directus, 'POST', '/pseo-endpoints/pseo', {
				token: user.token,
				body: { website_url: 'https://claude.example', master_prompt: 'Warm tone.', provider, model },
			});
			expect(created.status, JSON.stringify(created.body)).toBe(201);
			const pseoId = created.body.data.id as number;
			const plan = planPages(pages, `/a${process.pid}-${++serial}-page`);
			await seedPlan(directus, user, pseoId, plan);
			return { pseoId, routes: plan.map((page) => page.route) };
		};
		const messageCalls = () => fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/messages');

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
			// Back to no OpenAI key, for the tests below that configure other providers.
			await saveSettings({ ai_openai_api_key: null });
		});

		it('GET /providers says what a website may name, with no key in it', async () => {
			const user = await createUser(directus, { balance: 0 });
			const before = await send(directus, 'GET', PROVIDERS, { token: user.token });
			expect(before.status).toBe(200);
			const anthropic = () => before.body.data.providers.find((entry: { provider: string }) => entry.provider === 'anthropic');
			expect(anthropic()).toMatchObject({ provider: 'anthropic', name: 'Anthropic', origin: null, default_model: 'claude-haiku-4-5', bulk: 'batch' });
			expect(before.body.data.default).toEqual({ provider: 'openai', model: 'gpt-5.4-mini' });

			await saveSettings({ ai_anthropic_api_key: ANTHROPIC_KEY, ai_anthropic_allowed_models: ALLOWED });
			const after = await send(directus, 'GET', PROVIDERS, { token: user.token });
			expect(after.body.data.default).toEqual({ provider: 'anthropic', model: 'claude-haiku-4-5' });
			expect(after.body.data.providers.map((entry: { provider: string }) => entry.provider)).toEqual(['openai', 'anthropic', 'google', 'openai_compatible']);
			expect(after.body.data.providers[1]).toEqual({
				provider: 'anthropic',
				name: 'Anthropic',
				origin: 'directus-settings',
				models: ALLOWED,
				default_model: 'claude-haiku-4-5',
				bulk: 'batch',
				// No part of this instance has met a limit of Anthropic's batch queue.
				batch_queue: { limit_tokens: null, limit_source: null, enqueued_tokens: 0, jobs_waiting: 0 },
				rate_limit: { requests_per_minute: null, tokens_per_minute: null },
			});
			expect(after.body.data.providers[2]).toMatchObject({ provider: 'google', origin: null, default_model: 'gemini-2.5-flash', bulk: 'batch' });
			expectEnvelope(await call(directus, 'GET', PROVIDERS, {}), 401);
		});

		it("a website's plan, on-demand page and bulk job run on Claude with its model, and the job records them", async () => {
			await saveSettings({ ai_anthropic_api_key: ANTHROPIC_KEY, ai_anthropic_allowed_models: ALLOWED });
			const user = await createUser(directus, { balance: 500 });
			const { pseoId, routes } = await claudeSite(user, 4);

			const plan = await send(directus, 'POST', PLAN, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', description: DESCRIPTION } });
			expect(plan.status, JSON.stringify(plan.body)).toBe(200);
			expect(plan.body.data.total_pages).toBe(6);
			expect(messageCalls().length).toBeGreaterThan(0);
			expect(fake.countChat()).toBe(messageCalls().length); // no chat completion went to OpenAI's protocol

			// The plan replaced the seeded one: the jobs run its pages.
			const one = await send(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect(one.status, JSON.stringify(one.body)).toBe(202);
			const done = await waitForJob(directus, user, one.body.generation_id as number);
			expect(done).toMatchObject({ status: 'completed', created_count: 1, provider: 'anthropic', model: 'claude-sonnet-4-6' });
			expect(done['usage'].requests).toBeGreaterThanOrEqual(1);
			expect(done['usage'].prompt_tokens).toBeGreaterThan(0);

			const bulk = await send(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
			expect(bulk.status, JSON.stringify(bulk.body)).toBe(202);
			const ended = await waitForJob(directus, user, bulk.body.generation_id as number);
			expect(ended).toMatchObject({ status: 'completed', created_count: 3, failed_count: 0, provider: 'anthropic', model: 'claude-sonnet-4-6' });
			// One message batch, at Anthropic's protocol, holding the three pages.
			expect(fake.countBatchesCreated()).toBe(1);
			expect(fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/messages/batches' && entry.status === 200)).toHaveLength(1);
			// The job's usage counts the three lines the batch billed.
			expect(ended['usage'].requests).toBe(3);
			expect(messageCalls().every((entry) => entry.apiKey === ANTHROPIC_KEY)).toBe(true);
			expect((await postedRoutes(directus, pseoId)).length).toBe(4);
			expect(routes.length).toBe(4);
			// Charged 20 for the plan, 10 for the page and 3 × 5 for the bulk pages; nothing refunded.
			expect(await balanceOf(directus, user.id)).toBe(500 - 20 - 10 - 15);
			await expectLedgerBalances(directus, user);
		});

		it('a model Settings → AI does not allow is refused before anything is charged', async () => {
			await saveSettings({ ai_anthropic_api_key: ANTHROPIC_KEY, ai_anthropic_allowed_models: ALLOWED });
			const user = await createUser(directus, { balance: 100 });
			const { pseoId } = await claudeSite(user, 2, 'claude-opus-4-7');
			await eventually(async () => (await ledgerOf(directus, user.id)).length === 1, 10_000, 'the initial grant');
			const jobsBefore = (await adminItems(directus, 'pseo_generations', `filter[pseo_id][_eq]=${pseoId}`)).length;
			for (const [path, body] of [
				[ON_DEMAND, { pseo_id: pseoId, post_count: 1 }],
				[BULK, { pseo_id: pseoId, post_count: 2 }],
				[PLAN, { pseo_id: pseoId, language_code: 'en-GB', description: DESCRIPTION }],
			] as const) {
				const refused = await send(directus, 'POST', path, { token: user.token, body });
				const envelope = expectEnvelope(refused, 400);
				expect(envelope.error).toContain('The model "claude-opus-4-7" is not allowed for Anthropic in Settings → AI; allowed: claude-haiku-4-5, claude-sonnet-4-6.');
			}
			expect(await balanceOf(directus, user.id)).toBe(100);
			expect(await ledgerOf(directus, user.id)).toHaveLength(1);
			expect(await adminItems(directus, 'pseo_generations', `filter[pseo_id][_eq]=${pseoId}`)).toHaveLength(jobsBefore);
			expect(fake.requests).toHaveLength(0);

			// The owner picks an allowed model through the items API: the job runs with it.
			const edit = await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: user.token, body: { model: 'claude-haiku-4-5' } });
			expect(edit.status, JSON.stringify(edit.body)).toBe(200);
			const job = await send(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect(job.status).toBe(202);
			expect(await waitForJob(directus, user, job.body.generation_id as number)).toMatchObject({ status: 'completed', model: 'claude-haiku-4-5' });
			// A provider the field does not know is refused by Directus's validation.
			expect((await call(directus, 'PATCH', `/items/pseo/${pseoId}`, { token: user.token, body: { provider: 'mistral' } })).status).toBe(400);
		});

		it('a page Claude keeps failing is failed and refunded; the others are stored', async () => {
			await saveSettings({ ai_anthropic_api_key: ANTHROPIC_KEY, ai_anthropic_allowed_models: ALLOWED });
			const user = await createUser(directus, { balance: 100 });
			const { pseoId, routes } = await claudeSite(user, 3);
			fake.configure({ failRoutes: { [routes[1]!]: 'malformed' } });
			const bulk = await send(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
			const ended = await waitForJob(directus, user, bulk.body.generation_id as number);
			expect(ended).toMatchObject({ status: 'failed', created_count: 2, failed_count: 1 });
			expect(ended['failed_routes']).toEqual([{ route: routes[1], error: expect.stringMatching(/malformed/i) }]);
			// Each of the batch's three lines, and each attempt of the failing page's retry through chat, was billed by
			// the provider and counted.
			expect(fake.countChat(routes[1]!)).toBeGreaterThan(0);
			expect(fake.countChat()).toBe(fake.countChat(routes[1]!));
			expect(ended['usage'].requests).toBe(3 + fake.countChat());
			expect(await balanceOf(directus, user.id)).toBe(100 - 15 + 5);
			await expectLedgerBalances(directus, user);
		});

		it("a website naming Google runs its plan, page and bulk job on Gemini with Settings → AI's key", async () => {
			await saveSettings({ ai_google_api_key: GOOGLE_KEY, ai_google_allowed_models: ['gemini-2.5-flash', 'gemini-2.5-pro'] });
			const user = await createUser(directus, { balance: 200 });
			const { pseoId } = await claudeSite(user, 3, null, 'google');
			const plan = await send(directus, 'POST', PLAN, { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', description: DESCRIPTION } });
			expect(plan.status, JSON.stringify(plan.body)).toBe(200);
			const one = await send(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect(await waitForJob(directus, user, one.body.generation_id as number)).toMatchObject({ status: 'completed', provider: 'google', model: 'gemini-2.5-flash' });
			const bulk = await send(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 2 } });
			const ended = await waitForJob(directus, user, bulk.body.generation_id as number);
			expect(ended).toMatchObject({ status: 'completed', created_count: 2, provider: 'google', model: 'gemini-2.5-flash' });
			expect(ended['usage'].prompt_tokens).toBeGreaterThan(0);
			// The plan and the on-demand page through generateContent, the bulk job through one Gemini batch.
			const gemini = fake.requests.filter((entry) => entry.method === 'POST' && entry.path.startsWith('/v1beta/models/gemini-2.5-flash:'));
			expect(gemini.filter((entry) => entry.path.endsWith(':generateContent')).length).toBe(fake.countChat());
			expect(gemini.filter((entry) => entry.path.endsWith(':batchGenerateContent') && entry.status === 200)).toHaveLength(1);
			expect(fake.countBatchesCreated()).toBe(1);
			expect(fake.requests.filter((entry) => entry.path.startsWith('/v1beta/')).every((entry) => entry.apiKey === GOOGLE_KEY)).toBe(true);
			expect(await balanceOf(directus, user.id)).toBe(200 - 20 - 10 - 10);
			const seen = JSON.stringify([answers.map((res) => res.body), await adminItems(directus, 'pseo_generations', 'fields=*')]) + directus.output();
			expect(seen).not.toContain(GOOGLE_KEY);
		});

		it('a new Anthropic key takes effect on the next call without a restart, and no key shows in answers, rows or the log', async () => {
			await saveSettings({ ai_anthropic_api_key: ROTATED_KEY, ai_anthropic_allowed_models: ALLOWED });
			const user = await createUser(directus, { balance: 100 });
			const { pseoId } = await claudeSite(user, 2);
			const job = await send(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect((await waitForJob(directus, user, job.body.generation_id as number))['status']).toBe('completed');
			expect([...new Set(messageCalls().map((entry) => entry.apiKey))]).toEqual([ROTATED_KEY]);

			const jobs = await adminItems(directus, 'pseo_generations', 'fields=*');
			const websites = await adminItems(directus, 'pseo', 'fields=*');
			const seen = JSON.stringify([answers.map((res) => res.body), jobs, websites]) + directus.output();
			for (const secret of [ANTHROPIC_KEY, ROTATED_KEY, FIRST_KEY, SECOND_KEY]) expect(seen).not.toContain(secret);
			expect(directus.output()).toContain('AI provider configured from Settings → AI');
			expect((await jobRow(directus, job.body.generation_id as number)).provider).toBe('anthropic');
		});

		// Last: it restarts the instance with a key in its environment.
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
