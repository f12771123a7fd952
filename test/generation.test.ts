import { expect, it } from 'vitest';
import {
	adminItems,
	balanceOf,
	call,
	createUser,
	createWebsite,
	eventually,
	expectEnvelope,
	ledgerOf,
	planPages,
	plannedWebsite,
	seedPlan,
	waitForJob,
} from './support/api.ts';
import { useSharedDirectus, type DirectusInstance } from './support/directus.ts';
import { describeLegs, ENGINE_ENV, ENGINE_INTERFACE_LEGS } from './support/legs.ts';

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const BULK = '/pseo-endpoints/trigger/bulk-generation';

const planned = (directus: DirectusInstance, balance: number, pages = 30) => plannedWebsite(directus, balance, pages);

describeLegs('generation engine on %s', ENGINE_INTERFACE_LEGS, (leg) => {
	const { directus, fake } = useSharedDirectus(leg, ENGINE_ENV);

	it('4.4 an on-demand job of one page completes with its post, counters and charge', async () => {
		const { user, pseoId } = await planned(directus, 100);
		const res = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect(res.status).toBe(202);
		expect(res.body).toMatchObject({ success: true, status: 'pending', generation_id: expect.any(Number) });
		expect(typeof res.body.message).toBe('string');
		expect(res.body.timestamp).toMatch(/Z$/);
		const job = await waitForJob(directus, user, res.body.generation_id);
		expect(job).toMatchObject({
			id: res.body.generation_id,
			pseo_id: pseoId,
			status: 'completed',
			requested_count: 1,
			created_count: 1,
			failed_count: 0,
			failed_routes: [],
		});
		expect(job['date_completed']).toMatch(/^\d{4}-\d{2}-\d{2}T.*Z$/);
		expect(job['date_updated']).toMatch(/Z$/);
		const posts = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}`);
		expect(posts).toHaveLength(1);
		expect(posts[0]).toMatchObject({ route: '/page-1', generation_id: job['id'], user_id: user.id, language: 'en-US' });
		expect(posts[0].title.length).toBeGreaterThan(0);
		expect(posts[0].body.length).toBeGreaterThan(0);
		const [website] = await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}`);
		expect(website.post_counts_total).toBe(1);
		expect(await balanceOf(directus, user.id)).toBe(90);
		expect(fake.countChat('/page-1')).toBe(1);
	});

	it('4.5 a 25-page bulk job runs through the Batch API, highest priority first', async () => {
		const { user, pseoId } = await planned(directus, 200, 40);
		const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 25 } });
		expect(res.status).toBe(202);
		const job = await waitForJob(directus, user, res.body.generation_id);
		expect(job).toMatchObject({ status: 'completed', requested_count: 25, created_count: 25, failed_count: 0, failed_routes: [] });
		const posts = await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}`);
		expect(posts.map((post) => post.route).sort()).toEqual(planPages(25).map((page) => page.route).sort());
		expect(fake.countBatchesCreated()).toBe(1);
		expect(fake.countChat()).toBe(0);
		expect(await balanceOf(directus, user.id)).toBe(200 - 25 * 5);
		const [website] = await adminItems(directus, 'pseo', `filter[id][_eq]=${pseoId}`);
		expect(website.post_counts_total).toBe(25);
		// The next job takes the next routes by priority.
		const next = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		await waitForJob(directus, user, next.body.generation_id);
		expect(fake.countChat('/page-26')).toBe(1);
	});

	it('a job\'s routes are rows in its order, each with its state, past SQLite\'s 500 terms a statement', async () => {
		const pages = 620;
		const { user, pseoId } = await planned(directus, pages * 5, pages);
		fake.configure({ holdBatches: true });
		const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: pages } });
		expect(res.status).toBe(202);
		const id = res.body.generation_id as number;
		const rowsOf = () => adminItems(directus, 'pseo_generation_routes', `filter[generation_id][_eq]=${id}&sort=position&fields=position,route,state,part,error`);
		// Highest priority first, as the plan ranks them; once the batch is at the provider, every route is in part 0.
		const sent = await eventually(async () => {
			const rows = await rowsOf();
			return rows.length === pages && rows.every((row) => row.state === 'in_part') ? rows : null;
		}, 60_000, 'every route in its part');
		expect(sent.map((row) => row.position)).toEqual([...Array(pages).keys()]);
		expect(sent.map((row) => row.route)).toEqual(planPages(pages).map((page) => page.route));
		expect(new Set(sent.map((row) => row.part))).toEqual(new Set([0]));

		const cancelled = await call(directus, 'POST', `/pseo-endpoints/generations/${id}/cancel`, { token: user.token });
		expect(cancelled.status).toBe(200);
		expect(cancelled.body.data).toMatchObject({ status: 'failed', requested_count: pages, failed_count: pages });
		expect(cancelled.body.data.failed_routes.map((failure: { route: string }) => failure.route)).toEqual(planPages(pages).map((page) => page.route));
		const ended = await rowsOf();
		expect(new Set(ended.map((row) => `${row.state}:${row.error}`))).toEqual(new Set(['failed:cancelled']));
		expect(await balanceOf(directus, user.id)).toBe(pages * 5);
		fake.configure({ holdBatches: false });
	});

	it('4 a failing route ends the job failed, lists it, and refunds it', async () => {
		const { user, pseoId } = await planned(directus, 100, 5);
		fake.configure({ failRoutes: { '/page-2': 'error' } });
		const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
		const job = await waitForJob(directus, user, res.body.generation_id);
		expect(job).toMatchObject({ status: 'failed', requested_count: 3, created_count: 2, failed_count: 1 });
		expect(job['failed_routes']).toEqual([{ route: '/page-2', error: expect.any(String) }]);
		expect(job['failed_routes'][0].error.length).toBeGreaterThan(0);
		expect(await balanceOf(directus, user.id)).toBe(100 - 3 * 5 + 5);
		const ledger = await ledgerOf(directus, user.id);
		expect(ledger.map((row) => [row.reason, row.amount])).toEqual([
			['grant', 100],
			['charge', -15],
			['refund', 5],
		]);
		expect(ledger[2]).toMatchObject({ route: '/page-2', generation_id: job['id'] });
	});

	it('4.4 twenty simultaneous triggers on one website give one 202 and nineteen 409s', async () => {
		const { user, pseoId } = await planned(directus, 1000, 5);
		// The accepted job's page is held at the provider, so the job is provably active through every trigger.
		fake.configure({ holdChat: true });
		const answers = await Promise.all(
			Array.from({ length: 20 }, () => call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } })),
		);
		fake.configure({ holdChat: false });
		fake.releaseChat();
		const statuses = answers.map((a) => a.status).sort();
		expect(statuses.filter((s) => s === 202)).toHaveLength(1);
		expect(statuses.filter((s) => s === 409)).toHaveLength(19);
		for (const answer of answers.filter((a) => a.status === 409)) expectEnvelope(answer, 409);
		expect(await balanceOf(directus, user.id)).toBe(990);
		const accepted = answers.find((a) => a.status === 202)!;
		await waitForJob(directus, user, accepted.body.generation_id);
	});

	it('8 ten simultaneous triggers by one user with a balance for three give exactly three 202s and seven 402s, never a 500', async () => {
		const user = await createUser(directus, { balance: 30 });
		const sites: number[] = [];
		for (let i = 0; i < 10; i++) {
			const { id } = await createWebsite(directus, user);
			await seedPlan(directus, user, id, planPages(2));
			sites.push(id);
		}
		// Each transaction charges the same balance row and inserts a job that references it: on InnoDB that is
		// the deadlock that the payer-first lock order and the bounded retry exist for.
		const answers = await Promise.all(
			sites.map((pseoId) => call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } })),
		);
		expect(answers.map((a) => a.status).sort()).toEqual([202, 202, 202, 402, 402, 402, 402, 402, 402, 402]);
		for (const answer of answers.filter((a) => a.status === 402)) expectEnvelope(answer, 402);
		const accepted = answers.filter((a) => a.status === 202).map((a) => a.body.generation_id as number);
		const jobs = await adminItems(directus, 'pseo_generations', `filter[user_id][_eq]=${user.id}`);
		expect(jobs.map((job) => job.id).sort()).toEqual([...accepted].sort());
		for (const id of accepted) expect((await waitForJob(directus, user, id))['status']).toBe('completed');
		expect(await balanceOf(directus, user.id)).toBe(0);
		const ledger = await ledgerOf(directus, user.id);
		expect(ledger.map((row) => [row.reason, row.amount])).toEqual([['grant', 30], ['charge', -10], ['charge', -10], ['charge', -10]]);
	});

	it('4.4 validates the body: post_count exactly 1, positive integers, known website', async () => {
		const { user, pseoId } = await planned(directus, 100, 3);
		const other = await planned(directus, 100, 3);
		const cases: [unknown, number][] = [
			[{ pseo_id: pseoId, post_count: 2 }, 400],
			[{ pseo_id: pseoId, post_count: 0 }, 400],
			[{ pseo_id: pseoId }, 400],
			[{ post_count: 1 }, 400],
			[{ pseo_id: String(pseoId), post_count: 1 }, 400],
			[{ pseo_id: pseoId, post_count: 1.5 }, 400],
			[{ pseo_id: -1, post_count: 1 }, 400],
			[{ pseo_id: 3_000_000_000, post_count: 1 }, 400],
			['[1]', 400],
			['{oops', 400],
			[{ pseo_id: 999_999, post_count: 1 }, 404],
			[{ pseo_id: other.pseoId, post_count: 1 }, 403],
		];
		for (const [body, status] of cases) {
			expectEnvelope(await call(directus, 'POST', ON_DEMAND, { token: user.token, body }), status);
		}
		expectEnvelope(await call(directus, 'POST', ON_DEMAND, { body: { pseo_id: pseoId, post_count: 1 } }), 401);
		expect(await balanceOf(directus, user.id)).toBe(100);
	});

	it('4.5 bulk takes any positive integer but needs that many ungenerated plan routes; nothing is charged otherwise', async () => {
		const { user, pseoId } = await planned(directus, 1000, 3);
		for (const body of [{ pseo_id: pseoId, post_count: 0 }, { pseo_id: pseoId, post_count: -3 }, { pseo_id: pseoId, post_count: 'many' }]) {
			expectEnvelope(await call(directus, 'POST', BULK, { token: user.token, body }), 400);
		}
		const tooMany = expectEnvelope(await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 4 } }), 400);
		expect(tooMany.error).toMatch(/3 ungenerated/);
		const bare = await createWebsite(directus, user);
		const noPlan = expectEnvelope(await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: bare.id, post_count: 1 } }), 400);
		expect(noPlan.error).toMatch(/content plan/);
		expect(await balanceOf(directus, user.id)).toBe(1000);
		expect(await adminItems(directus, 'pseo_generations', `filter[user_id][_eq]=${user.id}`)).toHaveLength(0);
	});

	it('8 a short balance is a 402 that changes nothing', async () => {
		const { user, pseoId } = await planned(directus, 9, 3);
		expectEnvelope(await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } }), 402);
		expect(await balanceOf(directus, user.id)).toBe(9);
		expect(await adminItems(directus, 'pseo_generations', `filter[pseo_id][_eq]=${pseoId}`)).toHaveLength(0);
	});

	it('4.6 and 4.7 read jobs: every field, newest first, at most 50, only the owner', async () => {
		const { user, pseoId } = await planned(directus, 10_000, 60);
		const ids: number[] = [];
		for (let i = 0; i < 52; i++) {
			const res = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
			expect(res.status).toBe(202);
			ids.push(res.body.generation_id);
			await waitForJob(directus, user, res.body.generation_id);
		}
		const list = await call(directus, 'GET', `/pseo-endpoints/generations?pseo_id=${pseoId}`, { token: user.token });
		expect(list.status).toBe(200);
		expect(list.body.success).toBe(true);
		expect(list.body.data).toHaveLength(50);
		expect(list.body.data.map((job: { id: number }) => job.id)).toEqual([...ids].reverse().slice(0, 50));
		expect(Object.keys(list.body.data[0]).sort()).toEqual(
			['id', 'pseo_id', 'kind', 'status', 'requested_count', 'created_count', 'failed_count', 'failed_routes', 'date_created', 'date_completed', 'last_error', 'attention', 'provider', 'model'].sort(),
		);
		// Jobs that went well: no trouble on their record.
		expect(list.body.data[0]).toMatchObject({ last_error: null, attention: false });
		expect(list.body.data[0].date_created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
		const one = await call(directus, 'GET', `/pseo-endpoints/generations/${ids[0]}`, { token: user.token });
		expect(Object.keys(one.body.data).sort()).toEqual(
			['id', 'pseo_id', 'kind', 'status', 'requested_count', 'created_count', 'failed_count', 'failed_routes', 'date_created', 'date_updated', 'date_completed', 'last_error', 'attention', 'provider', 'model', 'usage'].sort(),
		);
		// The provider and model it was accepted with: the environment's OpenAI key, and the instance's model; and
		// what started it.
		expect(one.body.data).toMatchObject({ kind: 'on_demand', provider: 'openai', model: expect.stringMatching(/\S/) });
		const stranger = await createUser(directus);
		expectEnvelope(await call(directus, 'GET', `/pseo-endpoints/generations/${ids[0]}`, { token: stranger.token }), 403);
		expectEnvelope(await call(directus, 'GET', `/pseo-endpoints/generations?pseo_id=${pseoId}`, { token: stranger.token }), 403);
		expectEnvelope(await call(directus, 'GET', `/pseo-endpoints/generations/${ids[0]}`, { token: directus.adminToken }), 403);
		expectEnvelope(await call(directus, 'GET', '/pseo-endpoints/generations/99999999', { token: user.token }), 404);
		// 2147483648 is past the 32-bit integer ids of PostgreSQL and MySQL, whose queries would fail on it (a 500).
		for (const bad of ['abc', '0', '-1', '1.5', '1e3', '01', '99999999999999999999', '2147483648', '3000000000']) {
			expectEnvelope(await call(directus, 'GET', `/pseo-endpoints/generations/${bad}`, { token: user.token }), 400);
		}
		for (const query of ['', '?pseo_id=', '?pseo_id=x', `?pseo_id=${pseoId}&pseo_id=${pseoId}`]) {
			expectEnvelope(await call(directus, 'GET', `/pseo-endpoints/generations${query}`, { token: user.token }), 400);
		}
	});

	it('3 transient faults (429 with retry-after, 5xx, malformed and refused output) are retried to success', async () => {
		const { user, pseoId } = await planned(directus, 100, 3);
		fake.configure({ rateLimit: { count: 1, retryAfterS: 1 }, serverErrors: { count: 1, status: 503 } });
		const first = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect((await waitForJob(directus, user, first.body.generation_id))['status']).toBe('completed');
		fake.configure({ failRoutes: { '/page-2': 'malformed', '/page-3': 'refusal' }, failRoutesTimes: 1 });
		const second = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect((await waitForJob(directus, user, second.body.generation_id))['status']).toBe('completed');
		const third = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect((await waitForJob(directus, user, third.body.generation_id))['status']).toBe('completed');
		expect(fake.countChat('/page-2')).toBe(2);
		expect(fake.countChat('/page-3')).toBe(2);
		expect(await balanceOf(directus, user.id)).toBe(70);
	});

	it('usage: every answer the provider billed, retries included, summed per job in chat and in batch', async () => {
		const { user, pseoId } = await planned(directus, 100, 10);
		fake.configure({ failRoutes: { '/page-1': 'malformed' }, failRoutesTimes: 1 });
		const first = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		expect((await waitForJob(directus, user, first.body.generation_id))['status']).toBe('completed');
		const answered = fake.requests.filter((entry) => entry.path === '/v1/chat/completions' && entry.route === '/page-1' && entry.usage);
		expect(answered.length).toBeGreaterThanOrEqual(2);
		const chat = await call(directus, 'GET', `/pseo-endpoints/generations/${first.body.generation_id}`, { token: user.token });
		expect(chat.body.data.usage).toEqual({
			prompt_tokens: answered.reduce((sum, entry) => sum + entry.usage!.prompt_tokens, 0),
			completion_tokens: answered.reduce((sum, entry) => sum + entry.usage!.completion_tokens, 0),
			requests: answered.length,
		});
		expect(chat.body.data.usage.prompt_tokens).toBeGreaterThan(0);

		const bulk = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: 3 } });
		expect((await waitForJob(directus, user, bulk.body.generation_id))['status']).toBe('completed');
		const [row] = await adminItems(directus, 'pseo_generations', `filter[id][_eq]=${bulk.body.generation_id}`);
		const batch = (await (await fetch(`${fake.url}/batches/${row.batch_id}`, { headers: { authorization: 'Bearer test-key' } })).json()) as { usage: { input_tokens: number; output_tokens: number } };
		const batched = await call(directus, 'GET', `/pseo-endpoints/generations/${bulk.body.generation_id}`, { token: user.token });
		expect(batched.body.data.usage).toEqual({ prompt_tokens: batch.usage.input_tokens, completion_tokens: batch.usage.output_tokens, requests: 3 });

		// The admin's "pSEO usage" dashboard: each panel's query, built from its stored options as the Insights
		// panels build it, gives this website's sums over both jobs, per website and per day.
		const total = {
			usage_prompt_tokens: chat.body.data.usage.prompt_tokens + batched.body.data.usage.prompt_tokens,
			usage_completion_tokens: chat.body.data.usage.completion_tokens + batched.body.data.usage.completion_tokens,
			usage_requests: chat.body.data.usage.requests + batched.body.data.usage.requests,
		};
		const dashboard = await call(directus, 'GET', '/panels?limit=-1&filter[dashboard][name][_eq]=pSEO usage', { token: directus.adminToken });
		const panels: { type: string; options: Record<string, any> }[] = dashboard.body.data;
		expect(panels.map((panel) => panel.type).sort()).toEqual(['metric-list', 'metric-list', 'metric-list', 'time-series', 'time-series', 'time-series']);
		const today = new Date().toISOString().slice(0, 10);
		for (const { type, options } of panels) {
			const field = type === 'metric-list' ? options.aggregateField : options.valueField;
			const fn = type === 'metric-list' ? options.aggregateFunction : options.function;
			const group = type === 'metric-list' ? [options.groupByField] : ['year(date_created)', 'month(date_created)', 'day(date_created)'];
			expect(options.collection).toBe('pseo_generations');
			const query = [`aggregate[${fn}]=${field}`, ...group.map((g: string) => `groupBy[]=${g}`), `filter[pseo_id][_eq]=${pseoId}`].join('&');
			const rows = await adminItems(directus, options.collection, query);
			expect(rows).toHaveLength(1);
			expect(Number(rows[0][fn][field])).toBe(total[field as keyof typeof total]);
			if (type === 'time-series') {
				const row = rows[0];
				const day = `${row.date_created_year}-${String(row.date_created_month).padStart(2, '0')}-${String(row.date_created_day).padStart(2, '0')}`;
				expect(day).toBe(today);
			} else {
				expect(Number(rows[0].pseo_id)).toBe(pseoId);
			}
		}
	});

	it('3 invalid output that never gets better fails the page after bounded attempts', async () => {
		const { user, pseoId } = await planned(directus, 100, 2);
		fake.configure({ failRoutes: { '/page-1': 'invalid' } });
		const res = await call(directus, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: pseoId, post_count: 1 } });
		const job = await waitForJob(directus, user, res.body.generation_id);
		expect(job).toMatchObject({ status: 'failed', created_count: 0, failed_count: 1 });
		expect(fake.countChat('/page-1')).toBe(4);
		expect(await balanceOf(directus, user.id)).toBe(100);
	});
});
