import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createCollection, grantRead } from './support/collections.ts';
import { startFakeProvider, type FakeProvider } from './support/fake-provider/server.ts';
import {
	adminItems,
	balanceOf,
	call,
	createUser,
	createWebsite,
	eventually,
	expectEnvelope,
	waitForJob,
	type ApiResponse,
	type TestUser,
} from './support/api.ts';
import { copyDatabase, type DirectusInstance } from './support/directus.ts';
import { startCluster, type Cluster } from './support/cluster.ts';
import { redisKeys } from './support/redis.ts';
import { clusterMissing } from './support/cluster-prerequisites.ts';
import { batchesOf, expectLedgerBalances, expectPostsOnce, jobRow, plannedSite } from './support/job-checks.ts';

/*
 * Operating contract section 5: several Directus instances on one PostgreSQL database, with Redis for Directus's
 * synchronisation, cache and rate limiter, run jobs exactly once between them. Every count below comes from the
 * fake provider's own request log or from the shared database, never from an instance's memory.
 */

const ON_DEMAND = '/pseo-endpoints/trigger/on-demand-generation';
const BULK = '/pseo-endpoints/trigger/bulk-generation';
const PART_LINES = 2;
/** Provider batches of a bulk job of `pages` pages. */
const partsFor = (pages: number) => Math.ceil(pages / PART_LINES);
const PLAN = '/pseo-endpoints/generate/main-json';
const INSTANCES = 3;
const LEASE_MS = 3000;
const SWEEP_MS = 200;
const POLL_MS = 400;
const PAGE_RATE = 10;
const BATCH_RATE = 5;
const CLAUDE_KEY = 'sk-ant-cluster-5b2e81';
const SOURCE_SYNC_DELAY_MS = 1000;

const missing = clusterMissing('multi-instance suite');

describe.skipIf(missing.length > 0)('several instances on one PostgreSQL database and Redis', () => {
	let fake: FakeProvider;
	let cluster: Cluster;
	let instances: DirectusInstance[];
	/** The instance to read through, for checks; any of them sees the same database. */
	let reader: DirectusInstance;

	beforeAll(async () => {
		fake = await startFakeProvider();
		const database = await copyDatabase('postgres');
		cluster = await startCluster({
			size: INSTANCES,
			database,
			env: {
				OPENAI_BASE_URL: fake.url,
				// A second provider, for the websites that name it: Claude, through Anthropic's protocol.
				ANTHROPIC_API_KEY: CLAUDE_KEY,
				ANTHROPIC_BASE_URL: fake.url.replace(/\/v1$/, ''),
				PSEO_PROVIDER_BACKOFF_MS: '50',
				PSEO_CONCURRENCY: '3',
				PSEO_LEASE_MS: String(LEASE_MS),
				PSEO_SWEEP_INTERVAL_MS: String(SWEEP_MS),
				PSEO_BATCH_POLL_INTERVAL_MS: String(POLL_MS),
				// Bulk jobs run as provider batches of two lines at most: every bulk job here has several parts.
				PSEO_BATCH_MAX_REQUESTS: String(PART_LINES),
				PSEO_TOKEN_PER_PAGE: String(PAGE_RATE),
				PSEO_TOKEN_PER_BATCH_PAGE: String(BATCH_RATE),
				PSEO_PLAN_PAGES: '12',
				PSEO_SOURCE_SYNC_DELAY_MS: String(SOURCE_SYNC_DELAY_MS),
			},
		});
		instances = cluster.instances;
		reader = instances[0]!;
	});
	afterEach(() => fake.reset());
	afterAll(async () => {
		await cluster?.dispose();
		await fake?.close();
	});

	it('5 every instance runs its own job runtime and shares Redis for its rate limiter and caches', async () => {
		const workers = instances.map((instance) => cluster.workerOf(instance));
		expect(workers.every((worker) => typeof worker === 'string')).toBe(true);
		expect(new Set(workers).size).toBe(INSTANCES);
		// A request on each instance goes through the Redis rate limiter and the Redis permissions cache.
		for (const instance of instances) expect((await call(instance, 'GET', '/users/me', { token: instance.adminToken })).status).toBe(200);
		// The limiter's key lives for RATE_LIMITER_DURATION (1 s here), so it is looked for right after a request: on a
		// slow machine the requests above can outlast it.
		const keys = await eventually(
			async () => {
				await call(instances[0]!, 'GET', '/users/me', { token: instances[0]!.adminToken });
				const found = await redisKeys(cluster.redisUrl, `*${cluster.runId}*`);
				return found.includes(`${cluster.runId}:rl:127.0.0.1`) ? found : null;
			},
			10_000,
			'the rate limiter key in Redis',
		);
		expect(keys.some((key) => key.startsWith(`${cluster.runId}:permissions:`))).toBe(true);
	});

	it('4.4 and 4.5 a trigger storm over every instance gives exactly one 202 per PSEO and never overdraws', async () => {
		// Accepted jobs stay active through the storm (chat and batches held at the provider), so every later trigger
		// meets them.
		fake.configure({ holdChat: true, holdBatches: true });
		const rich = [await createUser(reader, { balance: 1000 }), await createUser(reader, { balance: 1000 })];
		// Pays for two on-demand pages only, whatever the number of websites and instances.
		const poor = await createUser(reader, { balance: 25 });
		type Target = { user: TestUser; pseoId: number; routes: string[]; path: string; body: Record<string, number> };
		const targets: Target[] = [];
		for (const [index, user] of rich.entries()) {
			for (let i = 0; i < 3; i++) {
				const site = await plannedSite(reader, user, 5);
				const bulk = index === 1;
				targets.push({ user, ...site, path: bulk ? BULK : ON_DEMAND, body: { pseo_id: site.pseoId, post_count: bulk ? 3 : 1 } });
			}
		}
		for (let i = 0; i < 4; i++) {
			const site = await plannedSite(reader, poor, 3);
			targets.push({ user: poor, ...site, path: ON_DEMAND, body: { pseo_id: site.pseoId, post_count: 1 } });
		}

		let next = 0;
		const shots: { target: Target; promise: Promise<ApiResponse> }[] = [];
		for (let round = 0; round < 6; round++) {
			for (const target of targets) {
				if (target.user === poor && round >= 3) continue;
				const instance = instances[next++ % INSTANCES]!;
				shots.push({ target, promise: call(instance, 'POST', target.path, { token: target.user.token, body: target.body }) });
			}
		}
		const answers = await Promise.all(shots.map(async (shot) => ({ target: shot.target, res: await shot.promise })));

		for (const target of targets) {
			const mine = answers.filter((answer) => answer.target === target);
			const accepted = mine.filter((answer) => answer.res.status === 202);
			for (const { res } of mine.filter((answer) => answer.res.status !== 202)) {
				expect(target.user === poor ? [402, 409] : [409], JSON.stringify(res.body)).toContain(res.status);
				expectEnvelope(res, res.status);
			}
			if (target.user !== poor) expect(accepted, `PSEO ${target.pseoId}`).toHaveLength(1);
			else expect(accepted.length).toBeLessThanOrEqual(1);
		}
		const poorAccepted = answers.filter((answer) => answer.target.user === poor && answer.res.status === 202);
		expect(poorAccepted).toHaveLength(2);
		expect(await balanceOf(reader, rich[0]!.id)).toBe(1000 - 3 * PAGE_RATE);
		expect(await balanceOf(reader, rich[1]!.id)).toBe(1000 - 3 * 3 * BATCH_RATE);
		expect(await balanceOf(reader, poor.id)).toBe(5);
		for (const user of [...rich, poor]) {
			const ledger = await expectLedgerBalances(reader, user);
			const jobs = await adminItems(reader, 'pseo_generations', `filter[user_id][_eq]=${user.id}`);
			expect(ledger.filter((row) => row.reason === 'charge')).toHaveLength(jobs.length);
		}

		// Every accepted job then runs exactly once.
		fake.configure({ holdChat: false, holdBatches: false });
		fake.releaseChat();
		fake.releaseBatches();
		for (const { target, res } of answers.filter((answer) => answer.res.status === 202)) {
			const job = await waitForJob(reader, target.user, res.body.generation_id);
			expect(job['status']).toBe('completed');
			const routes = target.routes.slice(0, target.body['post_count']);
			await expectPostsOnce(reader, target.pseoId, routes);
			if (target.path === BULK) {
				expect(batchesOf(fake, job['id'])).toBe(partsFor(routes.length));
				for (const route of routes) expect(fake.countBatchedRoute(route)).toBe(1);
			} else {
				for (const route of routes) expect(fake.countChat(route)).toBe(1);
			}
		}
	});

	it('5 every job runs exactly once between the instances: one post and one provider call per page, one batch per part of a bulk job', async () => {
		const users = [await createUser(reader, { balance: 10_000 }), await createUser(reader, { balance: 10_000 })];
		const sites: { user: TestUser; pseoId: number; routes: string[] }[] = [];
		for (const user of users) for (let i = 0; i < 3; i++) sites.push({ user, ...(await plannedSite(reader, user, 12)) });
		let next = 0;
		const jobs: { generationId: number; mode: 'on_demand' | 'bulk'; pseoId: number }[] = [];

		// First, one page per website, each triggered on the next instance and held at the provider, until the
		// database shows the work shared: more than one instance holds a running job.
		fake.configure({ holdChat: true });
		for (const site of sites) {
			const res = await call(instances[next++ % INSTANCES]!, 'POST', ON_DEMAND, { token: site.user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
			expect(res.status, JSON.stringify(res.body)).toBe(202);
			jobs.push({ generationId: res.body.generation_id, mode: 'on_demand', pseoId: site.pseoId });
		}
		const owners = await eventually(
			async () => {
				const rows = await adminItems(reader, 'pseo_generations', 'filter[status][_eq]=running&fields=lease_owner');
				const held = new Set(rows.map((row) => row.lease_owner as string | null).filter((owner): owner is string => !!owner));
				return held.size >= 2 ? held : null;
			},
			30_000,
			'running jobs held by two instances or more',
		);
		fake.configure({ holdChat: false });
		fake.releaseChat();
		for (const [index, job] of jobs.entries()) expect((await waitForJob(reader, sites[index]!.user, job.generationId))['status']).toBe('completed');

		// Then per website: two more on-demand pages and a bulk job of five, each trigger on the next instance.
		await Promise.all(
			sites.map(async (site) => {
				const rounds: [string, number][] = [[ON_DEMAND, 1], [ON_DEMAND, 1], [BULK, 5]];
				for (const [path, count] of rounds) {
					const instance = instances[next++ % INSTANCES]!;
					const res = await call(instance, 'POST', path, { token: site.user.token, body: { pseo_id: site.pseoId, post_count: count } });
					expect(res.status, JSON.stringify(res.body)).toBe(202);
					jobs.push({ generationId: res.body.generation_id, mode: path === BULK ? 'bulk' : 'on_demand', pseoId: site.pseoId });
					const job = await waitForJob(instances[next % INSTANCES]!, site.user, res.body.generation_id);
					expect(job['status']).toBe('completed');
				}
			}),
		);
		for (const site of sites) {
			await expectPostsOnce(reader, site.pseoId, site.routes.slice(0, 8));
			for (const route of site.routes.slice(0, 3)) {
				expect(fake.countChat(route), route).toBe(1);
				expect(fake.countBatchedRoute(route), route).toBe(0);
			}
			for (const route of site.routes.slice(3, 8)) {
				expect(fake.countBatchedRoute(route), route).toBe(1);
				expect(fake.countChat(route), route).toBe(0);
			}
			for (const route of site.routes.slice(8)) expect(fake.countChat(route) + fake.countBatchedRoute(route)).toBe(0);
		}
		const bulkJobs = jobs.filter((job) => job.mode === 'bulk');
		for (const job of bulkJobs) expect(batchesOf(fake, job.generationId)).toBe(partsFor(5));
		expect(fake.countBatchesCreated()).toBe(bulkJobs.length * partsFor(5));
		expect(fake.countChat()).toBe(jobs.length - bulkJobs.length);

		// One charge per job, no refund, and the balances agree with the ledger.
		for (const user of users) {
			const ledger = await expectLedgerBalances(reader, user);
			expect(ledger.filter((row) => row.reason === 'refund')).toEqual([]);
			const charges = ledger.filter((row) => row.reason === 'charge');
			const own = jobs.filter((job) => sites.some((site) => site.user === user && site.pseoId === job.pseoId));
			expect(charges.map((row) => Number(row.generation_id)).sort((a, b) => a - b)).toEqual(own.map((job) => job.generationId).sort((a, b) => a - b));
			expect(await balanceOf(reader, user.id)).toBe(10_000 - 3 * (3 * PAGE_RATE + 5 * BATCH_RATE));
		}
		// The work really was spread: more than one instance held jobs.
		const workers = instances.map((instance) => cluster.workerOf(instance));
		expect([...owners].every((owner) => workers.includes(owner))).toBe(true);
		expect(owners.size).toBeGreaterThanOrEqual(2);
	});

	it('5 websites on Claude run exactly once between the instances too: one Messages API call per page, one message batch per part of a bulk job', async () => {
		const user = await createUser(reader, { balance: 10_000 });
		const sites: { pseoId: number; routes: string[] }[] = [];
		for (let i = 0; i < 3; i++) sites.push(await plannedSite(reader, user, 6, { provider: 'anthropic', model: 'claude-haiku-4-5' }));
		let next = 0;
		const ids: number[] = [];
		await Promise.all(
			sites.map(async (site) => {
				for (const [path, count] of [[ON_DEMAND, 1], [BULK, 4]] as const) {
					const res = await call(instances[next++ % INSTANCES]!, 'POST', path, { token: user.token, body: { pseo_id: site.pseoId, post_count: count } });
					expect(res.status, JSON.stringify(res.body)).toBe(202);
					ids.push(res.body.generation_id);
					const job = await waitForJob(instances[next % INSTANCES]!, user, res.body.generation_id);
					expect(job).toMatchObject({ status: 'completed', provider: 'anthropic', model: 'claude-haiku-4-5' });
				}
			}),
		);
		for (const site of sites) {
			await expectPostsOnce(reader, site.pseoId, site.routes.slice(0, 5));
			// Each page asked once: the on-demand one through the Messages API, the bulk ones in a message batch.
			for (const route of site.routes.slice(0, 5)) expect(fake.countChat(route) + fake.countBatchedRoute(route), route).toBe(1);
		}
		const calls = fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/messages');
		expect(calls.length).toBe(3);
		const creates = fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/messages/batches' && entry.status === 200);
		expect(creates.length).toBe(3 * partsFor(4));
		expect(fake.countBatchesCreated()).toBe(3 * partsFor(4));
		expect(fake.requests.filter((entry) => entry.path.startsWith('/v1/messages')).every((entry) => entry.apiKey === CLAUDE_KEY)).toBe(true);
		const ledger = await expectLedgerBalances(reader, user);
		expect(ledger.filter((row) => row.reason === 'charge').map((row) => Number(row.generation_id)).sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
		expect(ledger.filter((row) => row.reason === 'refund')).toEqual([]);
		expect(await balanceOf(reader, user.id)).toBe(10_000 - 3 * (PAGE_RATE + 4 * BATCH_RATE));
	});

	it('4.8 concurrent plan requests by one user on different instances give one 200 and the rest 409', async () => {
		fake.configure({ holdChat: true });
		const user = await createUser(reader, { balance: 1000 });
		// A loopback website: the sitemap reader refuses it without connecting, so no request leaves the machine.
		const { id } = await createWebsite(reader, user, { website_url: 'http://127.0.0.1:9' });
		const body = {
			pseo_id: id,
			language_code: 'en-US',
			description:
				'A family-run bakery in Leeds that sells sourdough bread, pastries and celebration cakes to local households, offices and cafes, and wants more online orders and wholesale enquiries.',
		};
		// The winner's provider call is held until the five others have their answer.
		let answered = 0;
		const pending = Array.from({ length: 6 }, (_, i) =>
			call(instances[i % INSTANCES]!, 'POST', PLAN, { token: user.token, body }).finally(() => answered++),
		);
		await eventually(async () => answered === 5 && fake.heldChat() === 1, 30_000, 'five answers while the winner is at the provider');
		fake.configure({ holdChat: false });
		fake.releaseChat();
		const answers = await Promise.all(pending);
		const statuses = answers.map((answer) => answer.status);
		expect(statuses.filter((status) => status === 200), JSON.stringify(answers.map((a) => a.body))).toHaveLength(1);
		expect(statuses.filter((status) => status === 409)).toHaveLength(5);
		const plan = answers.find((answer) => answer.status === 200)!;
		expect(plan.body.data.total_pages).toBeGreaterThan(0);
		for (const answer of answers.filter((a) => a.status === 409)) expectEnvelope(answer, 409);
		const ledger = await expectLedgerBalances(reader, user);
		expect(ledger.filter((row) => row.reason === 'charge')).toHaveLength(1);
		expect(ledger.filter((row) => row.reason === 'refund')).toEqual([]);
	});

	it('5 a batch waiting at the provider is polled once per interval by the whole cluster, not once per instance', async () => {
		fake.configure({ holdBatches: true });
		const user = await createUser(reader, { balance: 1000 });
		const site = await plannedSite(reader, user, 4);
		const res = await call(instances[1]!, 'POST', BULK, { token: user.token, body: { pseo_id: site.pseoId, post_count: 4 } });
		expect(res.status).toBe(202);
		const id = res.body.generation_id;
		const batchId = await eventually(async () => (await jobRow(reader, id)).batch_id as string | null, 30_000, 'a stored batch id');

		const windowMs = 5000;
		const start = Date.now();
		await new Promise((resolve) => setTimeout(resolve, windowMs));
		const polls = fake.requests
			.filter((entry) => entry.method === 'GET' && entry.path === `/v1/batches/${batchId}` && entry.time >= start && entry.time < start + windowMs)
			.map((entry) => entry.time);
		// Once per interval at most: three instances polling on their own would make about three times as many.
		expect(polls.length).toBeGreaterThanOrEqual(3);
		expect(polls.length).toBeLessThanOrEqual(Math.floor(windowMs / POLL_MS) + 1);
		for (let i = 1; i < polls.length; i++) expect(polls[i]! - polls[i - 1]!).toBeGreaterThanOrEqual(POLL_MS - 20);

		fake.configure({ holdBatches: false });
		fake.releaseBatches();
		const job = await waitForJob(reader, user, id);
		expect(job['status']).toBe('completed');
		expect(batchesOf(fake, id)).toBe(partsFor(4));
		await expectPostsOnce(reader, site.pseoId, site.routes);
	});

	it('a followed collection written on every instance at once is synced once per change: one sync at a time, each item\'s page added once', async () => {
		const cities = `cities_${randomBytes(3).toString('hex')}`;
		await createCollection(reader, cities, [
			{ field: 'name', type: 'string' },
			{ field: 'population', type: 'integer' },
		]);
		const owner = await createUser(reader, { balance: 0 });
		await grantRead(reader, owner, [{ collection: cities, fields: ['*'] }]);
		// A loopback address the sitemap guard refuses: no sync reads a site outside this machine.
		const { id: pseoId } = await createWebsite(reader, owner, { website_url: 'http://127.0.0.1:9' });
		const followed = await call(instances[1]!, 'POST', '/pseo-endpoints/plan/import', {
			token: owner.token,
			body: { pseo_id: pseoId, language_code: 'en-GB', template: { route: '/{name}', title: 'Plumbers in {name}', facts: ['population'] }, mode: 'sync', source: 'cities', collection: cities, follow: true },
		});
		expect(followed.status, JSON.stringify(followed.body)).toBe(200);

		// Items created and changed through every instance at once: each instance notes what it saw.
		const perInstance = 4;
		const created = await Promise.all(
			instances.map((instance, n) =>
				call(instance, 'POST', `/items/${cities}`, { token: instance.adminToken, body: Array.from({ length: perInstance }, (_, i) => ({ name: `town-${n}-${i}`, population: i })) }),
			),
		);
		expect(created.map((res) => res.status)).toEqual(instances.map(() => 200));
		const keys = created.flatMap((res) => (res.body.data as { id: number }[]).map((item) => item.id));
		await Promise.all(instances.map((instance, n) => call(instance, 'PATCH', `/items/${cities}`, { token: instance.adminToken, body: { keys: keys.slice(n * perInstance, (n + 1) * perInstance), data: { population: 100 + n } } })));

		const total = instances.length * perInstance;
		const pages = () => adminItems(reader, 'pseo_plan_pages', `filter[pseo_id][_eq]=${pseoId}&fields=route,facts`);
		await eventually(async () => {
			const now = await pages();
			return now.length === total && now.every((page) => Number(page.facts?.population) >= 100);
		}, 30_000, 'every item\'s page with its changed population');
		// Settled: nothing left due, no sync running.
		await eventually(async () => {
			const [row] = await adminItems(reader, 'pseo', `filter[id][_eq]=${pseoId}&fields=data_source_state`);
			await new Promise((resolve) => setTimeout(resolve, SOURCE_SYNC_DELAY_MS + 2 * SWEEP_MS));
			const [again] = await adminItems(reader, 'pseo', `filter[id][_eq]=${pseoId}&fields=data_source_state`);
			return row.data_source_state.syncs === again.data_source_state.syncs ? again : null;
		}, 30_000, 'the syncs to settle');

		const [website] = await adminItems(reader, 'pseo', `filter[id][_eq]=${pseoId}&fields=data_source_state`);
		const plans = await adminItems(reader, 'pseo_main_json', `filter[pseo_id][_eq]=${pseoId}&fields=id,status,main_json&sort=id`);
		// Each sync is one plan record; none failed (no two ran at once: a second would have met the plan lock).
		expect(plans.map((plan) => plan.status)).toEqual(plans.map(() => 'ready'));
		expect(plans).toHaveLength(website.data_source_state.syncs);
		expect(website.data_source_state).toMatchObject({ status: 'following', last_error: null });
		// Each item's page was added once, by whichever instance synced it: the adds of all syncs sum to the items.
		const summaries = plans.map((plan) => (typeof plan.main_json === 'string' ? JSON.parse(plan.main_json) : plan.main_json));
		expect(summaries.reduce((sum, summary) => sum + summary.added, 0)).toBe(total);
		expect(summaries.slice(1).every((summary) => summary.trigger === 'follow')).toBe(true);
		const routes = (await pages()).map((page) => page.route);
		expect(new Set(routes).size).toBe(total);
		// Gathered: fewer syncs than the 15 actions Directus fired (12 creations and 3 updates of 4 items, on 3
		// instances); each instance notes what it saw in a few writes, and a sync takes all that is due.
		expect(website.data_source_state.syncs).toBeLessThan(1 + total);
		await call(reader, 'DELETE', `/collections/${cities}`, { token: reader.adminToken });
	});

	it('5 after a kill -9 of the instance running jobs, a survivor takes them over within the lease and finishes them once', async () => {
		// Every page waits at the provider until the takeover is measured.
		fake.configure({ holdChat: true });
		const user = await createUser(reader, { balance: 1000 });
		const sites: { pseoId: number; routes: string[] }[] = [];
		for (let i = 0; i < 4; i++) sites.push(await plannedSite(reader, user, 3));
		// All triggered on one instance, which wakes at once and claims what it can.
		const victim = instances[2]!;
		const ids: number[] = [];
		for (const site of sites) {
			const res = await call(victim, 'POST', ON_DEMAND, { token: user.token, body: { pseo_id: site.pseoId, post_count: 1 } });
			expect(res.status).toBe(202);
			ids.push(res.body.generation_id);
		}
		const victimWorker = cluster.workerOf(victim)!;
		const held = await eventually(
			async () => {
				const rows = await Promise.all(ids.map((id) => jobRow(reader, id)));
				const mine = rows.filter((row) => row.status === 'running' && row.lease_owner === victimWorker);
				return mine.length > 0 ? mine.map((row) => Number(row.id)) : null;
			},
			20_000,
			'a job leased by the victim',
		);
		// Mid-flight: a page of a job the victim holds is out at the provider when the instance dies.
		const heldRoutes = held.map((id) => sites[ids.indexOf(id)]!.routes[0]);
		await eventually(
			async () => fake.requests.some((entry) => entry.path === '/v1/chat/completions' && entry.status === null && heldRoutes.includes(entry.route ?? '')),
			10_000,
			'a page in flight',
		);
		const killedAt = Date.now();
		await victim.kill();

		const survivors = instances.filter((instance) => instance !== victim).map((instance) => cluster.workerOf(instance)!);
		const takeover = await eventually(
			async () => {
				const rows = await Promise.all(held.map((id) => jobRow(reader, id)));
				const moved = rows.every((row) => survivors.includes(row.lease_owner) || row.status === 'completed');
				return moved ? Date.now() - killedAt : null;
			},
			LEASE_MS + 15_000,
			'a survivor to take the jobs over',
		);
		// Bounded by the lease: the last renewal before the kill, plus one sweep, plus slack for a loaded machine.
		expect(takeover).toBeLessThanOrEqual(LEASE_MS + SWEEP_MS + 3000);
		fake.configure({ holdChat: false });
		fake.releaseChat();

		for (const [index, id] of ids.entries()) {
			const job = await waitForJob(reader, user, id, 30_000);
			expect(job).toMatchObject({ status: 'completed', created_count: 1, failed_count: 0, failed_routes: [] });
			await expectPostsOnce(reader, sites[index]!.pseoId, sites[index]!.routes.slice(0, 1));
			// A page that was in flight at the kill may be asked again; none more than that.
			expect(fake.countChat(sites[index]!.routes[0])).toBeLessThanOrEqual(2);
		}
		expect(heldRoutes.some((route) => fake.countChat(route) === 2)).toBe(true);
		const ledger = await expectLedgerBalances(reader, user);
		expect(ledger.filter((row) => row.reason === 'charge').map((row) => Number(row.amount))).toEqual(ids.map(() => -PAGE_RATE));
		expect(ledger.filter((row) => row.reason === 'refund')).toEqual([]);
		expect(await balanceOf(reader, user.id)).toBe(1000 - ids.length * PAGE_RATE);
	});
});
