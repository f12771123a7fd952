import { setImmediate } from 'node:timers/promises';
import { FINAL_BATCH_STATES, type BatchInfo, type BatchCapableProvider } from '../provider/generation-provider.ts';
import { faultPoint } from '../shared/fault-injection.ts';
import type { Logger } from '../shared/logger.ts';
import { isProviderCallError, ProviderCallError } from '../provider/provider-call-error.ts';
import { loadJobContext, type JobContext } from './job-context.ts';
import { finishJob, holdsLease, LeaseLostError, readJobHead, recordOutcomes, releaseJob, settledAmong, type PageOutcome } from './job-store.ts';
import { walkJobRoutes } from './route-walk.ts';
import { failJob } from './end-job.ts';
import { providerMissing } from './step-failure.ts';
import { batchParts } from '../metrics/metrics.ts';
import type { JobHead } from './job-types.ts';
import { buildPageRequest, generatePage, pageFromBatchLine } from './page-request.ts';
import { errorMessage, type RunnerDeps } from './page-runner.ts';
import { isAbortError } from '../shared/abort-error.ts';
import { BATCH_PART_KEY, readParts, savePart, setPartStatus, type JobPart } from './part-store.ts';
import { discardFile, discardPartFiles } from './batch-files.ts';
import { stopTwins } from './stray-batches.ts';
import { createQualityGate, type QualityGate } from '../quality/quality-gate.ts';
import type { QualityIssue } from '../quality/page-checks.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import type { ReportedUsage } from '../provider/types.ts';
import { assessDrafts, rewriteFailed } from './quality-pass.ts';
import { createStatisticsSchedule, refreshStatistics, type StatisticsSchedule, type StatisticsTarget } from '../shared/table-statistics.ts';
import { POSTS } from '../posts/post-store.ts';
import { BANDS_TABLE } from '../quality/similarity-index.ts';
import { JOB_ROUTES, readJobRouteRange } from './job-route-store.ts';
import { PLAN_PAGES } from '../plan/plan-page-store.ts';

/** Results are written in chunks: big enough to be fast, small enough that memory stays flat. */
const INGEST_CHUNK = 250;
/**
 * Output lines parsed between two turns of the event loop. Lines the download has already buffered come out of
 * the stream as resolved promises, which never let I/O in: without a turn, a chunk's 250 lines were parsed and
 * validated in one go while every request on the instance waited.
 */
const LINES_PER_TURN = 25;

/**
 * Tables an ingest grows or rewrites quickly enough to outrun autovacuum, with the columns its statements filter on
 * (shared/table-statistics.ts). The band rows' re-indexing DELETE by route scanned every band row of the website
 * without them (127 ms a chunk at 100,000 pages, against 1.5 ms).
 */
const INGESTED_TABLES: readonly StatisticsTarget[] = [
	{ table: POSTS, columns: ['pseo_id', 'route'] },
	{ table: BANDS_TABLE, columns: ['pseo_id', 'route', 'band_key'] },
	{ table: JOB_ROUTES, columns: ['generation_id', 'position', 'route', 'state'] },
	{ table: PLAN_PAGES, columns: ['pseo_id', 'route', 'has_post', 'priority'] },
];

/** Metadata key that tags a provider batch with its job, so a lost create can be found and adopted. */
const BATCH_JOB_KEY = 'pseo_generation_id';
/** Metadata key that says which expired part a batch resubmits (`none` for a new part), for its adoption. */
const RESUBMIT_KEY = 'resubmit_of';
const NEW_PART = 'none';

/** How bulk jobs use the provider's Batch API (operating contract section 2). */
export interface BatchSettings {
	/** PSEO_BATCH_POLL_INTERVAL_MS. */
	pollIntervalMs: number;
	/** PSEO_BATCH_MAX_REQUESTS: lines per provider batch (OpenAI accepts 50,000). */
	maxRequests: number;
	/** PSEO_BATCH_MAX_BYTES: bytes of JSONL per provider batch (OpenAI accepts 200 MB). */
	maxBytes: number;
}

/**
 * One step of a bulk job in batch mode, run by whichever worker claimed it. A job is split into parts, each one
 * provider batch within the request and byte limits, and every part is a row (part-store.ts), so any worker,
 * after any restart, knows what runs where. A step:
 * - polls every running part and ingests those that finished, so the job's counters grow part by part; a part
 *   that expired with lines unanswered waits for its one resubmission;
 * - submits the resubmissions, then every part still to come (adopting a batch already tagged with that part,
 *   from a create that timed out but happened);
 * - ends the job when every part is ingested, else comes back after the poll interval (the schedule lives in the
 *   database; Azure's batches may run for days and are simply polled on).
 */
export async function runBatchStep(job: JobHead, deps: RunnerDeps, settings: BatchSettings): Promise<void> {
	const { database, worker, logger } = deps;
	if ('unavailable' in deps.provider) {
		await failJob(job, { ...deps, batchMode: false }, providerMissing(deps.provider.unavailable, Date.now()));
		return;
	}
	// The runtime sends a bulk job here only when its provider has a batch API.
	const provider = deps.provider as BatchCapableProvider;
	const parts = await readParts(database, job.id);
	if (parts.length === 0 && job.batch_id) {
		// A job submitted before jobs had parts: its one batch runs every route.
		const legacy = { part: 0, route_start: 0, route_end: job.route_count, batch_id: job.batch_id, input_file_id: job.batch_input_file_id, resubmit_of: null };
		await savePart(database, job.id, worker, legacy);
		parts.push({ ...legacy, status: 'running' });
	}

	// Loaded once per step, on first need: the plan's pages and their sibling index are large for a large plan.
	let context: JobContext | undefined;
	const jobContext = async () => (context ??= await loadJobContext(database, job));
	let statistics: StatisticsSchedule | undefined;
	const ingestStatistics = async () => {
		if (statistics) return statistics;
		// Fresh statistics before a job stores its first page (a plan import may just have grown the tables), then
		// one doubling schedule across its parts, from what it stored before this step. A 100,000-page job of three
		// parts ran ANALYZE 14 times when each part started a schedule of its own (counted by pg_stat_statements);
		// one schedule refreshes at the start and at 5,000, 10,000, 20,000, 40,000 and 80,000 pages.
		if (job.created_count === 0) await refreshStatistics(database, INGESTED_TABLES, logger);
		return (statistics = createStatisticsSchedule(undefined, job.created_count));
	};
	for (const part of parts) {
		if (part.status !== 'running') continue;
		const batch = await retrievePart(provider, part, job.id, logger);
		if (!FINAL_BATCH_STATES.has(batch.status)) {
			logger.debug({ jobId: job.id, part: part.part, batchId: batch.id, status: batch.status }, 'pseo batch still running');
			continue;
		}
		// An expired first submission leaves its unanswered lines for one resubmission; anything else settles them.
		const resubmit = batch.status === 'expired' && part.resubmit_of === null;
		const { unanswered, timing } = await ingestPart(job, part, batch, await jobContext(), await ingestStatistics(), deps, provider, resubmit);
		if (deps.signal.aborted) return;
		part.status = unanswered > 0 ? 'expired' : 'ingested';
		await setPartStatus(database, job.id, worker, part.part, part.status);
		batchParts.inc({ state: part.status });
		logger.info({ jobId: job.id, part: part.part, batchId: batch.id, batchStatus: batch.status, unanswered, ...timing }, 'pseo batch part ingested');
		if (!deps.signal.aborted) await discardPartFiles(provider, batch, job.id, logger);
	}

	// Parts are numbered in the order they are submitted, resubmissions of expired parts first. A part's batch may
	// come back from a lost create as something else than this step planned (a new part lost before an expiry, whose
	// resubmission now takes its number): it is stored as what its metadata says it is, and what the step planned
	// waits for the next step.
	const coveredBy = () => parts.reduce((end, part) => (part.resubmit_of === null ? Math.max(end, part.route_end) : end), 0);
	let covered = coveredBy();
	let next = parts.length;
	const stored = (saved: JobPart) => {
		parts.push(saved);
		next++;
		const repeated = saved.resubmit_of === null ? undefined : parts.find((part) => part.part === saved.resubmit_of);
		if (repeated) repeated.status = 'ingested';
		covered = coveredBy();
	};
	for (const expired of parts.filter((part) => part.status === 'expired')) {
		// An adopted batch may have been this part's resubmission already.
		if (expired.status !== 'expired') continue;
		const saved = await submitPart(job, deps, provider, await jobContext(), settings, { part: next, start: expired.route_start, end: expired.route_end, resubmitOf: expired.part });
		if (saved) {
			stored(saved);
		} else {
			expired.status = 'ingested';
			await setPartStatus(database, job.id, worker, expired.part, 'ingested');
		}
	}
	while (covered < job.route_count) {
		const saved = await submitPart(job, deps, provider, await jobContext(), settings, { part: next, start: covered, end: null, resubmitOf: null });
		if (!saved) break; // every route left is already settled
		stored(saved);
		if (covered < job.route_count) faultPoint('between-parts');
	}

	if (parts.some((part) => part.status !== 'ingested')) {
		// A step that got this far went well: the job's trouble, if it had any, is over.
		await releaseJob(database, job.id, worker, Date.now() + settings.pollIntervalMs, job.last_error !== null);
		return;
	}
	const status = await finishJob(database, job.id, worker);
	logger.info({ jobId: job.id, parts: parts.length, status }, 'pseo batch job finished');
}

/**
 * A part's batch as the provider reports it. A batch the provider no longer knows (404: deleted, or the API key now
 * belongs to another project) never finishes: it is taken as failed, so that the part's lines fail and are refunded
 * and the job ends, instead of the job being polled for ever with its tokens held. (A refused key, 401 or 403, is
 * left to retry: an admin who fixes the key gets the job going again.)
 */
async function retrievePart(provider: BatchCapableProvider, part: JobPart, jobId: number, logger: Logger): Promise<BatchInfo> {
	try {
		return await provider.retrieveBatch(part.batch_id);
	} catch (error) {
		if (!(error instanceof ProviderCallError) || error.status !== 404) throw error;
		logger.warn({ jobId, part: part.part, batchId: part.batch_id }, 'pseo batch part: the provider no longer knows its batch; its lines fail and are refunded');
		const errors = [{ code: 'batch_not_found', message: 'the provider no longer knows this batch', line: null }];
		return { id: part.batch_id, status: 'failed', inputFileId: null, outputFileId: null, errorFileId: null, requestCounts: { total: 0, completed: 0, failed: 0 }, metadata: {}, errors, createdAt: null };
	}
}

/**
 * Whether a failed create surely made no batch: the provider answered it, and not with what the provider failure
 * classification takes as transient (a timeout, a conflict or a server error may have made one, which the next step
 * adopts, and whose input file it still needs), or with a 429, which made nothing. This holds because a create is
 * sent once, retried only after a 429: a refusal that answered a retry of a create that timed out would say nothing
 * of the first one.
 */
function refusedCreate(error: unknown): boolean {
	return isProviderCallError(error) && error.status !== undefined && (!error.retryable || error.reason === 'rate_limited');
}

interface PartPlan {
	part: number;
	start: number;
	/** Fixed for a resubmission; null for a new part, which ends where the limits say. */
	end: number | null;
	resubmitOf: number | null;
}

/**
 * Submits one part and stores it, fenced by the lease: adopts the batch already tagged with this part when a
 * create was lost, else streams the part's JSONL (routes from `start` not yet settled, within the request and byte
 * limits) to the provider and creates the batch. Null when no route of the range is left to send.
 */
async function submitPart(
	job: JobHead,
	deps: RunnerDeps,
	provider: BatchCapableProvider,
	context: JobContext,
	settings: BatchSettings,
	plan: PartPlan,
): Promise<JobPart | null> {
	const { database, worker, logger } = deps;
	const tag = `${job.id}:${plan.part}`;
	// A create whose answer was lost (a timeout, a dropped connection) may have made a batch we never heard of.
	const existing = await provider.findBatchByMetadata(BATCH_PART_KEY, tag);
	if (existing) return adoptPart(job.id, existing, plan, deps, provider, 'pseo batch part adopted after a lost create');

	const limit = plan.end ?? job.route_count;
	// The range's unsettled routes, read from the job's rows a page at a time, with the position they end.
	async function* unsettled(from: number): AsyncGenerator<{ item: PlanPage; end: number } | { item: null; end: number }> {
		for await (const { routes, settled } of walkJobRoutes(database, job, from, limit)) {
			for (const { position, ...item } of routes) yield settled.has(item.route) ? { item: null, end: position + 1 } : { item, end: position + 1 };
		}
	}
	// Settled routes at the start of the range are skipped before anything is uploaded; none left, no part.
	let first = plan.start;
	for await (const next of unsettled(plan.start)) {
		if (next.item) break;
		first = next.end;
	}
	if (first >= limit) return null;
	let end = first;
	let count = 0;
	let bytes = 0;
	// Lines are built as the upload reads them, so a part never sits in memory whole.
	async function* lines(): AsyncGenerator<string> {
		for await (const next of unsettled(first)) {
			if (!next.item) {
				end = next.end;
				continue;
			}
			const line = provider.buildBatchLine(next.item.route, await buildPageRequest(context, next.item));
			const size = Buffer.byteLength(line) + 1;
			if (plan.end === null && count > 0 && (count >= settings.maxRequests || bytes + size > settings.maxBytes)) return;
			count++;
			bytes += size;
			end = next.end;
			yield line;
		}
	}
	const inputFileId = await provider.uploadBatchFile(lines(), `pseo-generation-${job.id}-part-${plan.part}.jsonl`);
	// The upload of a large part takes minutes, and the job may change hands meanwhile. The part is looked up once
	// more (a worker that held the job before this one may have created its batch during the upload), then the lease
	// is checked, last because the lookup may page through the provider's batches: a job cancelled, taken over or
	// stopping gets no batch that nothing would cancel, ingest or refund. A create that outruns a cancel or a
	// takeover arriving after the check is stopped by the cancel's lookup by metadata, or by cancelIfOrphaned.
	// An upload that no batch will run is deleted, not left to the provider's expiry: a job whose creates are refused
	// uploads its part again at every step.
	const unused = () => discardFile(provider, inputFileId, { jobId: job.id, part: plan.part }, logger);
	const raced = await provider.findBatchByMetadata(BATCH_PART_KEY, tag);
	if (raced) {
		await unused();
		return adoptPart(job.id, raced, plan, deps, provider, 'pseo batch part adopted from the worker that held the job before');
	}
	if (deps.signal.aborted || !(await holdsLease(database, job.id, worker))) {
		await unused();
		throw new LeaseLostError(job.id);
	}
	const routeEnd = plan.end ?? end;
	let batch: BatchInfo;
	try {
		batch = await provider.createBatch(inputFileId, {
			[BATCH_JOB_KEY]: String(job.id),
			[BATCH_PART_KEY]: tag,
			pseo_id: String(job.pseo_id),
			route_start: String(plan.start),
			route_end: String(routeEnd),
			[RESUBMIT_KEY]: plan.resubmitOf === null ? NEW_PART : String(plan.resubmitOf),
		});
	} catch (error) {
		if (refusedCreate(error)) await unused();
		throw error;
	}
	faultPoint('after-batch-create');
	const saved = { part: plan.part, route_start: plan.start, route_end: routeEnd, batch_id: batch.id, input_file_id: inputFileId, resubmit_of: plan.resubmitOf };
	try {
		await savePart(database, job.id, worker, saved);
	} catch (error) {
		if (error instanceof LeaseLostError) {
			await cancelIfOrphaned(provider, deps, job.id, saved).catch((lookup: unknown) =>
				logger.warn({ err: lookup, jobId: job.id, batchId: batch.id }, 'pseo batch created after the job was lost: its owner could not be looked up'),
			);
		}
		throw error;
	}
	batchParts.inc({ state: 'submitted' });
	logger.info({ jobId: job.id, part: plan.part, batchId: batch.id, lines: count, bytes, resubmitOf: plan.resubmitOf }, 'pseo batch part submitted');
	await stopTwinsOf(provider, job.id, tag, batch.id, logger);
	return { ...saved, status: 'running' };
}

/**
 * Once a part is stored, any other batch tagged with it is a twin that nothing would ingest (stray-batches.ts).
 * The part stays stored whatever this finds. A lookup that fails is only logged: a twin it missed runs unnoticed,
 * and its input is swept once the job has ended (provider-file-sweep.ts).
 */
async function stopTwinsOf(provider: BatchCapableProvider, jobId: number, tag: string, kept: string, logger: Logger): Promise<void> {
	await stopTwins(provider, jobId, tag, kept, logger).catch((error: unknown) =>
		logger.warn({ err: error, jobId, tag, batchId: kept }, 'pseo batch part stored; its twins could not be looked up at the provider'),
	);
}

/** Stores a batch found by its part's metadata as that part, as what the batch says it was created as. */
async function adoptPart(jobId: number, batch: BatchInfo, plan: PartPlan, deps: RunnerDeps, provider: BatchCapableProvider, message: string): Promise<JobPart> {
	const start = Number(batch.metadata['route_start']);
	const end = Number(batch.metadata['route_end']);
	// What the batch was created as, which may not be what this step planned for the number (see runBatchStep).
	// A batch created before its metadata said so is taken as planned, as it always was.
	const recorded = batch.metadata[RESUBMIT_KEY];
	const resubmitOf = recorded === NEW_PART ? null : recorded !== undefined && /^\d+$/.test(recorded) ? Number(recorded) : plan.resubmitOf;
	const adopted = { part: plan.part, route_start: start, route_end: end, batch_id: batch.id, input_file_id: null, resubmit_of: resubmitOf };
	await savePart(deps.database, jobId, deps.worker, adopted);
	batchParts.inc({ state: 'adopted' });
	deps.logger.info({ jobId, part: plan.part, batchId: batch.id, routeStart: start, resubmitOf }, message);
	await stopTwinsOf(provider, jobId, `${jobId}:${plan.part}`, batch.id, deps.logger);
	return { ...adopted, status: 'running' };
}

/**
 * A batch created after this worker lost the job (the lease check before the create passed, then a cancel or another
 * worker took the job) belongs to nobody when the job was cancelled or has ended, or when its part is stored with
 * another batch: a cancel looked for it by its metadata before it existed, and a new holder made its own. It is
 * cancelled at the provider, which would otherwise run it, and bill for it, for nothing. A batch whose part is still
 * to be stored is left alone: whoever holds the job adopts it by its metadata.
 */
async function cancelIfOrphaned(provider: BatchCapableProvider, deps: RunnerDeps, jobId: number, saved: Omit<JobPart, 'status'>): Promise<void> {
	const { database, logger } = deps;
	const job = await readJobHead(database, jobId);
	const stored = (await readParts(database, jobId)).find((part) => part.part === saved.part);
	const ended = !job || job.cancelled || (job.status !== 'running' && job.status !== 'pending');
	if (!ended && (stored === undefined || stored.batch_id === saved.batch_id)) return;
	try {
		await provider.cancelBatch(saved.batch_id);
		logger.warn({ jobId, part: saved.part, batchId: saved.batch_id }, 'pseo batch created after the job was cancelled or taken over; cancelled at the provider');
	} catch (error) {
		logger.warn({ err: error, jobId, part: saved.part, batchId: saved.batch_id }, 'pseo batch created after the job was lost could not be cancelled at the provider');
	}
}

/**
 * Where an ingest's time went, logged with each part: `pages` the outcomes it stored (posts and failures),
 * `judgeMs` the gate with its index lookups and any rewrites or retries through chat, `writeMs` the transactions
 * storing the chunks and the statistics refreshes between them, and `waitMs` how long judged chunks waited for the
 * write before them. Judging and writing overlap, so a large `waitMs` says the database paces the ingest.
 */
interface IngestTiming {
	pages: number;
	ms: number;
	judgeMs: number;
	writeMs: number;
	waitMs: number;
}

/**
 * Streams a finished part's output and error files into posts and failed routes. A line the provider answered
 * unusably is written once more through chat completions before it fails. Lines the batch left unanswered are
 * failed with the batch's reason, or, when `resubmit` holds, left for the resubmission, and counted as `unanswered`.
 */
async function ingestPart(
	job: JobHead,
	part: JobPart,
	batch: BatchInfo,
	context: JobContext,
	statistics: StatisticsSchedule,
	deps: RunnerDeps,
	provider: BatchCapableProvider,
	resubmit: boolean,
): Promise<{ unanswered: number; timing: IngestTiming }> {
	const { database, worker, logger } = deps;
	const started = performance.now();
	const timing: IngestTiming = { pages: 0, ms: 0, judgeMs: 0, writeMs: 0, waitMs: 0 };
	const timed = async <T>(field: 'judgeMs' | 'writeMs' | 'waitMs', work: () => Promise<T>): Promise<T> => {
		const start = performance.now();
		try {
			return await work();
		} finally {
			timing[field] += performance.now() - start;
		}
	};
	const result = (unanswered: number) => ({
		unanswered,
		timing: { pages: timing.pages, ms: Math.round(performance.now() - started), judgeMs: Math.round(timing.judgeMs), writeMs: Math.round(timing.writeMs), waitMs: Math.round(timing.waitMs) },
	});
	// The part's own routes only: a job of several parts is never read whole.
	const slice = await readJobRouteRange(database, job.id, part.route_start, part.route_end);
	const items = new Map(slice.map(({ position: _position, ...item }) => [item.route, item]));
	const settled = await settledAmong(
		database,
		job,
		slice.map((item) => item.route),
	);
	const gate = createQualityGate(database, job.pseo_id, deps.quality, context);
	const seen = new Set<string>();
	const unansweredRoutes = new Set<string>();
	let chunk: PageOutcome[] = [];
	// One chunk is written while the next is judged: the database and the gate's CPU work overlap. At most one
	// write is in flight, so chunks are stored in order and memory holds two chunks at most.
	let writing: Promise<void> = Promise.resolve();
	const record = (outcomes: PageOutcome[]) =>
		timed('writeMs', async () => {
			try {
				await recordOutcomes(database, job, worker, outcomes, logger);
			} finally {
				gate.settle(outcomes.map((outcome) => outcome.route));
			}
			timing.pages += outcomes.length;
			faultPoint('mid-batch-ingest');
			if (statistics.add(outcomes.length)) await refreshStatistics(database, INGESTED_TABLES, logger);
		});
	const flush = async () => {
		if (chunk.length === 0) return;
		const outcomes = chunk;
		chunk = [];
		const { kept, abandoned } = await timed('judgeMs', async () => {
			const abandoned = await retryByChat(
				outcomes.filter((outcome) => !unansweredRoutes.has(outcome.route)),
				items,
				context,
				deps,
				provider,
				job.id,
			);
			// Lines whose retry the stopping instance dropped are left unsettled, for the ingest that resumes the part.
			const kept = abandoned.size > 0 ? outcomes.filter((outcome) => !abandoned.has(outcome.route)) : outcomes;
			if (!deps.signal.aborted) await gateChunk(kept, items, context, gate, deps, provider, job.id);
			return { kept, abandoned };
		});
		if (deps.signal.aborted) return;
		await timed('waitMs', () => writing);
		writing = record(kept);
		// A failed write surfaces at the next flush or at the end; this only keeps it from being reported unhandled.
		writing.catch(() => {});
		if (abandoned.size > 0) {
			// The instance is stopping: the step ends here, with the part still running, so that the worker resuming
			// the job ingests it again and reaches the lines left unsettled (settled ones are skipped).
			await writing;
			throw new DOMException(`The instance is stopping; ${abandoned.size} line(s) are left for the resumed ingest.`, 'AbortError');
		}
	};

	let parsed = 0;
	try {
		for (const fileId of [batch.outputFileId, batch.errorFileId]) {
			if (!fileId) continue;
			for await (const line of provider.streamFileLines(fileId)) {
				if (deps.signal.aborted) return result(0);
				if (++parsed % LINES_PER_TURN === 0) await setImmediate();
				const outcome = pageFromBatchLine(provider.parseBatchLine(line), context);
				if (!outcome || !items.has(outcome.route) || seen.has(outcome.route) || settled.has(outcome.route)) continue;
				if (outcome.unanswered && resubmit) continue;
				seen.add(outcome.route);
				const { unanswered, ...page } = outcome;
				if (unanswered) unansweredRoutes.add(page.route);
				chunk.push(page);
				if (chunk.length >= INGEST_CHUNK) await flush();
			}
		}
		await flush();
	} finally {
		// Never leave a write running behind the step, whatever ended it.
		await writing;
	}
	if (deps.signal.aborted) return result(0);

	const missing = [...items.keys()].filter((route) => !seen.has(route) && !settled.has(route));
	if (resubmit) return result(missing.length);
	const reason = missingReason(batch);
	for (let i = 0; i < missing.length; i += INGEST_CHUNK) {
		await recordOutcomes(database, job, worker, missing.slice(i, i + INGEST_CHUNK).map((route) => ({ route, error: reason })), logger);
	}
	return result(0);
}

/**
 * Lines the provider answered but unusably (invalid or truncated output, a refusal, a non-200 answer) are written
 * once more through chat completions, on the instance's queue, at no extra charge; a page that fails again keeps
 * the batch line's error. Unanswered lines (an expired or cancelled batch) are not retried here.
 */
async function retryByChat(
	outcomes: PageOutcome[],
	items: ReadonlyMap<string, PlanPage>,
	context: JobContext,
	deps: RunnerDeps,
	provider: BatchCapableProvider,
	jobId: number,
): Promise<Set<string>> {
	const { logger, signal, queue } = deps;
	const abandoned = new Set<string>();
	await Promise.all(
		outcomes.map(async (outcome) => {
			const item = items.get(outcome.route);
			if (outcome.content || !item || !outcome.error) return;
			const call = { signal, logContext: { jobId, route: item.route }, onUsage: countUsage(outcome) };
			try {
				const content = await queue.add(() => generatePage(provider, context, item, call), { signal });
				outcome.content = content;
				outcome.language = context.language;
				delete outcome.error;
			} catch (error) {
				if (signal.aborted) return;
				// Dropped from the queue by a shutdown (drain clears it before it aborts the jobs): not a second failure.
				if (isAbortError(error)) {
					abandoned.add(outcome.route);
					return;
				}
				logger.warn({ jobId, route: item.route, error: errorMessage(error) }, 'pseo batch line failed again through chat');
			}
		}),
	);
	return abandoned;
}

/**
 * The quality gate over a chunk of batch results, in place: one pass over the index for the whole chunk (whose
 * pages are also compared with each other); a page that fails is written once more through chat completions, on
 * the instance's queue, and the chunk is stored once those rewrites are done.
 */
async function gateChunk(
	outcomes: PageOutcome[],
	items: ReadonlyMap<string, PlanPage>,
	context: JobContext,
	gate: QualityGate,
	deps: RunnerDeps,
	provider: BatchCapableProvider,
	jobId: number,
): Promise<void> {
	const { logger, signal, queue } = deps;
	const drafts = outcomes.flatMap((outcome) => {
		const item = items.get(outcome.route);
		return outcome.content && item ? [{ outcome, item, content: outcome.content }] : [];
	});
	const verdicts = await assessDrafts(drafts, context.allowedRoutes, gate);
	const rewrites: Promise<void>[] = [];
	drafts.forEach(({ outcome, item }, i) => {
		const first = verdicts[i]!;
		outcome.content = first.content;
		if (!first.failed || signal.aborted) return;
		const call = { signal, logContext: { jobId, route: item.route }, onUsage: countUsage(outcome) };
		const rewrite = (qualityIssues: readonly QualityIssue[]) => queue.add(() => generatePage(provider, context, item, { ...call, qualityIssues }), { signal });
		rewrites.push(
			rewriteFailed(first, rewrite, { gate, logger, jobId, signal }).then((content) => {
				outcome.content = content;
			}),
		);
	});
	await Promise.all(rewrites);
}

/** Adds what each further answer for a page costs to the page's usage. */
function countUsage(outcome: PageOutcome): (reported: ReportedUsage) => void {
	const usage = (outcome.usage ??= { prompt_tokens: 0, completion_tokens: 0, requests: 0 });
	return (reported) => {
		usage.prompt_tokens += reported.prompt_tokens;
		usage.completion_tokens += reported.completion_tokens;
		usage.requests++;
	};
}

function missingReason(batch: BatchInfo): string {
	switch (batch.status) {
		case 'expired':
			return 'The provider batch expired before this page was generated.';
		case 'cancelled':
			return 'The provider batch was cancelled before this page was generated.';
		case 'failed': {
			const detail = batch.errors?.map((error) => error.message).filter(Boolean).join('; ');
			return errorMessage(`The provider rejected the batch${detail ? `: ${detail}` : '.'}`);
		}
		default:
			return 'The provider batch returned no result for this page.';
	}
}
