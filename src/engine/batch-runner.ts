import { FINAL_BATCH_STATES, type BatchInfo, type BatchCapableProvider } from '../provider/generation-provider.ts';
import { ingestPart, INGESTED_TABLES } from './batch-ingest.ts';
import { submitPart, type PartPlan } from './batch-submit.ts';
import { faultPoint } from '../shared/fault-injection.ts';
import type { Logger } from '../shared/logger.ts';
import { ProviderCallError } from '../provider/provider-call-error.ts';
import { loadJobContext, type JobContext } from './job-context.ts';
import { finishJob, releaseJob } from './job-store.ts';
import { failJob } from './end-job.ts';
import { providerMissing, PROVIDER_CAPACITY } from './step-failure.ts';
import { batchParts } from '../metrics/metrics.ts';
import type { JobHead } from './job-types.ts';
import type { RunnerDeps } from './page-runner.ts';
import { enqueuedTokens, readParts, refusePart, savePart, setPartStatus, type JobPart } from './part-store.ts';
import { capacityKeyOf, learnLimit, withBatchCapacity, type CapacityWait } from './batch-capacity.ts';
import { waitForCapacity, batchWaitMessage, type CapacitySettings } from './capacity-wait.ts';
import { setWaitingFor, wakeJobsWaitingFor } from './job-store.ts';
import { discardPartFiles } from './batch-files.ts';
import { stopTwins } from './stray-batches.ts';
import { createStatisticsSchedule, refreshStatistics, type StatisticsSchedule } from '../shared/table-statistics.ts';

/** How bulk jobs use the provider's Batch API (operating contract section 2). */
export interface BatchSettings {
	/** PSEO_BATCH_POLL_INTERVAL_MS. */
	pollIntervalMs: number;
	/** PSEO_BATCH_MAX_REQUESTS: lines per provider batch (OpenAI accepts 50,000). */
	maxRequests: number;
	/** PSEO_BATCH_MAX_BYTES: bytes of JSONL per provider batch (OpenAI accepts 200 MB). */
	maxBytes: number;
	/** PSEO_BATCH_MAX_ENQUEUED_TOKENS: the input tokens a provider's batch queue takes, per provider that has it set. */
	maxEnqueuedTokens: Partial<Record<string, number>>;
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
export async function runBatchStep(job: JobHead, deps: RunnerDeps, instanceSettings: BatchSettings & CapacitySettings): Promise<void> {
	const { database, worker, logger } = deps;
	if ('unavailable' in deps.provider) {
		await failJob(job, { ...deps, batchMode: false }, providerMissing(deps.provider, Date.now()));
		return;
	}
	// The runtime sends a bulk job here only when its provider has a batch API.
	const provider = deps.provider as BatchCapableProvider;
	// A provider may take less in one batch than the instance is set to send (Anthropic: 100,000 requests, 256 MB).
	const limits = provider.limits;
	const settings = limits
		? { ...instanceSettings, maxRequests: Math.min(instanceSettings.maxRequests, limits.maxRequests), maxBytes: Math.min(instanceSettings.maxBytes, limits.maxBytes) }
		: instanceSettings;
	const parts = await readParts(database, job.id);
	if (parts.length === 0 && job.batch_id) {
		// A job submitted before jobs had parts: its one batch runs every route.
		const legacy = { part: 0, route_start: 0, route_end: job.route_count, batch_id: job.batch_id, input_file_id: job.batch_input_file_id, resubmit_of: null };
		await savePart(database, job.id, worker, legacy);
		parts.push({ ...legacy, status: 'running', estimated_tokens: null, capacity_key: null });
	}
	// The provider whose batch queue the job's parts go to, and what is known of its limit.
	const capacityKey = capacityKeyOf(job);
	const configured = settings.maxEnqueuedTokens[capacityKey] ?? null;
	let wait: CapacityWait | null = null;
	// Whether the step moved the job on (a part's results stored): a job waiting for capacity that moves on starts its
	// wait afresh. A submission alone is not progress: a part the provider keeps refusing is submitted again and again.
	let progress = false;

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
		if (refusedForCapacity(batch)) {
			// The provider's batch queue was full: nothing of the part ran. Its routes go again in a later part, when
			// there is room; the limit that refused it is learnt, unless it is set.
			await refusePart(database, job.id, worker, part.part);
			part.status = 'refused';
			batchParts.inc({ state: 'refused' });
			const besides = await enqueuedTokens(database, capacityKey);
			const limit = await learnLimit(database, capacityKey, besides, part.estimated_tokens);
			wait = { reason: 'refused', enqueued: besides, limit };
			logger.warn({ jobId: job.id, part: part.part, batchId: batch.id, enqueuedBesides: besides, limit }, 'pseo batch part refused for the provider\'s batch queue limit; its routes go again when there is room');
			if (!deps.signal.aborted) await discardPartFiles(provider, batch, job.id, logger);
			continue;
		}
		// An expired first submission leaves its unanswered lines for one resubmission; anything else settles them.
		const resubmit = batch.status === 'expired' && part.resubmit_of === null;
		const { unanswered, timing } = await ingestPart(job, part, batch, await jobContext(), await ingestStatistics(), deps, provider, resubmit);
		if (deps.signal.aborted) return;
		part.status = unanswered > 0 ? 'expired' : 'ingested';
		await setPartStatus(database, job.id, worker, part.part, part.status);
		batchParts.inc({ state: part.status });
		progress = true;
		// Its room in the provider's queue is free: the jobs waiting for it go now rather than at their next poll.
		await wakeJobsWaitingFor(database, capacityKey, job.id);
		logger.info({ jobId: job.id, part: part.part, batchId: batch.id, batchStatus: batch.status, unanswered, ...timing }, 'pseo batch part ingested');
		if (!deps.signal.aborted) await discardPartFiles(provider, batch, job.id, logger);
		// A twin a lost create left running was cancelled, or not found, when the part was stored; ended by now, it is deleted.
		if (!deps.signal.aborted && provider.twinsDeletedOnceEnded) {
			await stopTwins(provider, job.id, `${job.id}:${part.part}`, batch.id, logger).catch((error: unknown) =>
				logger.warn({ err: error, jobId: job.id, part: part.part, batchId: batch.id }, 'pseo batch part ingested; its twins could not be looked up at the provider'),
			);
		}
	}

	// Parts are numbered in the order they are submitted, resubmissions of expired parts first. A part's batch may
	// come back from a lost create as something else than this step planned (a new part lost before an expiry, whose
	// resubmission now takes its number): it is stored as what its metadata says it is, and what the step planned
	// waits for the next step. New parts cover the job's routes that no part holds: the ranges after the last part,
	// and those of parts the provider refused for its queue limit.
	let next = parts.length;
	/** Ranges this step found already settled, which need no part. */
	const settledRanges: { start: number; end: number }[] = [];
	const stored = (saved: JobPart) => {
		parts.push(saved);
		next++;
		const repeated = saved.resubmit_of === null ? undefined : parts.find((part) => part.part === saved.resubmit_of);
		if (repeated) repeated.status = 'ingested';
	};
	// Each part goes when its provider's batch queue has room for it and the job's turn has come (batch-capacity.ts).
	const submitWithin = async (plan: Omit<PartPlan, 'capacityKey' | 'tokenBudget' | 'queueEmpty'>): Promise<JobPart | null | 'wait'> => {
		// The job's context (its plan and sibling index) is loaded only once the queue has room for a part.
		const outcome = await withBatchCapacity(database, { key: capacityKey, jobId: job.id, worker, configured, minimum: lineTokens(parts) }, async (budget, enqueued) =>
			submitPart(job, deps, provider, await jobContext(), settings, { ...plan, capacityKey, tokenBudget: budget, queueEmpty: enqueued === 0 }),
		);
		if (!outcome.ran) {
			wait = outcome.wait;
			return 'wait';
		}
		const result = outcome.value;
		if (result === null || 'batch_id' in result) return result;
		// Refused at the create (Anthropic's and Google's full queue), or too big for the room left.
		const besides = await enqueuedTokens(database, capacityKey);
		const limit = result.short === 'refused' ? await learnLimit(database, capacityKey, besides, result.tokens) : (configured ?? besides + result.tokens);
		wait = { reason: result.short === 'refused' ? 'refused' : 'full', enqueued: besides, limit };
		if (result.short === 'refused') logger.warn({ jobId: job.id, part: plan.part, tokens: result.tokens, enqueuedBesides: besides, limit }, 'pseo batch part refused at its create for the provider\'s batch queue; it goes when there is room');
		return 'wait';
	};
	for (const expired of parts.filter((part) => part.status === 'expired')) {
		// An adopted batch may have been this part's resubmission already.
		if (expired.status !== 'expired') continue;
		const saved = await submitWithin({ part: next, start: expired.route_start, end: expired.route_end, resubmitOf: expired.part });
		if (saved === 'wait') break;
		if (saved) {
			stored(saved);
		} else {
			expired.status = 'ingested';
			await setPartStatus(database, job.id, worker, expired.part, 'ingested');
		}
	}
	for (let gap = wait ? null : uncovered(parts, settledRanges, job.route_count); gap; gap = uncovered(parts, settledRanges, job.route_count)) {
		const saved = await submitWithin({ part: next, start: gap.start, end: null, until: gap.end, resubmitOf: null });
		if (saved === 'wait') break;
		if (saved) stored(saved);
		else settledRanges.push(gap); // every route of the range is already settled
		if (uncovered(parts, settledRanges, job.route_count)) faultPoint('between-parts');
	}

	if (wait) {
		await waitForCapacity(job, { ...deps, batchMode: true }, settings, batchWaitMessage(wait, capacityKey), progress, { waitingFor: capacityKey, pollAt: Date.now() + settings.pollIntervalMs });
		return;
	}
	// A job that waited for its turn and has now sent every part leaves its provider's queue.
	if (job.last_error?.code === PROVIDER_CAPACITY) await setWaitingFor(database, job.id, worker, null);
	if (parts.some((part) => part.status !== 'ingested' && part.status !== 'refused')) {
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

/** The estimated tokens of one line of the job, from the parts it has built; 0 before its first. */
function lineTokens(parts: readonly JobPart[]): number {
	const sized = parts.filter((part) => part.estimated_tokens !== null && part.route_end > part.route_start);
	const tokens = sized.reduce((sum, part) => sum + part.estimated_tokens!, 0);
	const lines = sized.reduce((sum, part) => sum + (part.route_end - part.route_start), 0);
	return lines === 0 ? 0 : Math.floor(tokens / lines);
}

/** Whether a failed batch ran nothing because the provider's batch queue was full (OpenAI's `token_limit_exceeded`). */
function refusedForCapacity(batch: BatchInfo): boolean {
	return batch.status === 'failed' && batch.errors.some((error) => error.code === 'token_limit_exceeded');
}

/**
 * The first range of the job's routes that no part holds, from its start: parts refused for capacity hold nothing,
 * resubmissions repeat a part's range, and `settled` are ranges found to need no part.
 */
function uncovered(parts: readonly JobPart[], settled: readonly { start: number; end: number }[], routeCount: number): { start: number; end: number } | null {
	const held = [
		...parts.filter((part) => part.resubmit_of === null && part.status !== 'refused').map((part) => ({ start: part.route_start, end: part.route_end })),
		...settled,
	].sort((a, b) => a.start - b.start);
	let cursor = 0;
	for (const range of held) {
		if (range.start > cursor) return { start: cursor, end: range.start };
		cursor = Math.max(cursor, range.end);
	}
	return cursor < routeCount ? { start: cursor, end: routeCount } : null;
}
