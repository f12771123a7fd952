import type { BatchSettings } from './batch-runner.ts';
import type { BatchInfo, BatchCapableProvider } from '../provider/generation-provider.ts';
import { faultPoint } from '../shared/fault-injection.ts';
import type { Logger } from '../shared/logger.ts';
import { isProviderCallError } from '../provider/provider-call-error.ts';
import type { JobContext } from './job-context.ts';
import { holdsLease, LeaseLostError, readJobHead } from './job-store.ts';
import { walkJobRoutes } from './route-walk.ts';
import { batchParts } from '../metrics/metrics.ts';
import type { JobHead } from './job-types.ts';
import { buildPageRequest } from './page-request.ts';
import type { RunnerDeps } from './page-runner.ts';
import { BATCH_PART_KEY, readParts, savePart, type JobPart, type NewPart } from './part-store.ts';
import { estimateInputTokens } from '../provider/pacing/input-tokens.ts';
import { discardFile } from './batch-files.ts';
import { stopTwins } from './stray-batches.ts';
import type { PlanPage } from '../plan/plan-page.ts';

/*
 * Submitting one part of a bulk job to the provider's batch API (batch-runner.ts runs the step): the adoption of a
 * batch a lost create made, the part's input streamed to the provider, the create fenced by the lease, and the
 * batches nobody would ingest stopped.
 */

/** Metadata key that tags a provider batch with its job, so a lost create can be found and adopted. */
const BATCH_JOB_KEY = 'pseo_generation_id';
/** Metadata key that says which expired part a batch resubmits (`none` for a new part), for its adoption. */
const RESUBMIT_KEY = 'resubmit_of';
const NEW_PART = 'none';

/**
 * Whether a failed create surely made no batch: the provider answered it, and not with what the provider failure
 * classification takes as transient (a timeout, a conflict or a server error may have made one, which the next step
 * adopts, and whose input file it still needs), or with a 429, which made nothing. This holds because a create is
 * sent once and never repeated in the call (after a 429 the part waits for the next step): a refusal that answered a
 * repeat of a create that timed out would say nothing of the first one.
 */
function refusedCreate(error: unknown): boolean {
	return isProviderCallError(error) && error.status !== undefined && (!error.retryable || error.reason === 'rate_limited');
}

export interface PartPlan {
	part: number;
	start: number;
	/** Fixed for a resubmission; null for a new part, which ends where the limits say. */
	end: number | null;
	resubmitOf: number | null;
	/** For a new part: the position it must end by at the latest (the next part's start, or the job's end). */
	until?: number;
	/** The provider whose batch queue it goes to (batch-capacity.ts). */
	capacityKey: string;
	/** Input tokens the part may hold of that queue; null when the queue has no known limit. */
	tokenBudget: number | null;
	/** Whether nothing else is in the queue: a first line bigger than the budget then goes alone rather than never. */
	queueEmpty: boolean;
}

/**
 * A part that could not go for its provider's capacity: its first line is bigger than the room left in the batch
 * queue (`room`), or the provider refused the create because its queue is full (`refused`, 429). Nothing was stored.
 */
export interface CapacityShort {
	short: 'room' | 'refused';
	/** The estimated tokens of what would have gone. */
	tokens: number;
}

/**
 * Submits one part and stores it, fenced by the lease: adopts the batch already tagged with this part when a
 * create was lost, else streams the part's JSONL (routes from `start` not yet settled, within the request and byte
 * limits) to the provider and creates the batch. Null when no route of the range is left to send.
 */
export async function submitPart(
	job: JobHead,
	deps: RunnerDeps,
	provider: BatchCapableProvider,
	context: JobContext,
	settings: BatchSettings,
	plan: PartPlan,
): Promise<JobPart | CapacityShort | null> {
	const { database, worker, logger } = deps;
	const tag = `${job.id}:${plan.part}`;
	// A create whose answer was lost (a timeout, a dropped connection) may have made a batch we never heard of.
	const existing = await provider.findBatchByMetadata(BATCH_PART_KEY, tag);
	if (existing) return adoptPart(job.id, existing, plan, deps, provider, 'pseo batch part adopted after a lost create');

	const limit = plan.end ?? plan.until ?? job.route_count;
	// The range's unsettled routes, read from the job's rows a page at a time, with the position they end.
	async function* unsettled(from: number): AsyncGenerator<{ item: PlanPage; position: number; end: number } | { item: null; end: number }> {
		for await (const { routes, settled } of walkJobRoutes(database, job, from, limit)) {
			for (const { position, ...item } of routes) yield settled.has(item.route) ? { item: null, end: position + 1 } : { item, position, end: position + 1 };
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
	let tokens = 0;
	const source = unsettled(first)[Symbol.asyncIterator]();
	// A line, and its input tokens as the pacer counts a request's (what the provider's batch queue holds of it).
	const lineOf = async (next: { item: PlanPage; position: number }) => {
		const customId = provider.customIdFor ? provider.customIdFor(next.item.route, next.position) : next.item.route;
		const request = await buildPageRequest(context, next.item);
		return { text: provider.buildBatchLine(customId, request), tokens: estimateInputTokens(request) };
	};
	// The first line is built before anything is uploaded: a queue without room for it gets no upload at all.
	let head: { item: PlanPage; position: number; end: number } | undefined;
	for (let next = await source.next(); !next.done; next = await source.next()) {
		if (next.value.item) {
			head = next.value as { item: PlanPage; position: number; end: number };
			break;
		}
	}
	if (!head) return null;
	const firstLine = await lineOf(head);
	const budget = plan.tokenBudget;
	if (budget !== null && firstLine.tokens > budget && !plan.queueEmpty) {
		await source.return?.(undefined);
		return { short: 'room', tokens: firstLine.tokens };
	}
	// Lines are built as the upload reads them, so a part never sits in memory whole. A new part ends at the
	// instance's request and byte limits, and at the room its provider's batch queue has left.
	async function* lines(): AsyncGenerator<string> {
		let next: { item: PlanPage | null; position?: number; end: number } | undefined = head;
		let line: { text: string; tokens: number } | undefined = firstLine;
		while (next) {
			if (next.item) {
				line ??= await lineOf(next as { item: PlanPage; position: number });
				const size = Buffer.byteLength(line.text) + 1;
				const full = count >= settings.maxRequests || bytes + size > settings.maxBytes || (budget !== null && tokens + line.tokens > budget);
				if (plan.end === null && count > 0 && full) return;
				count++;
				bytes += size;
				tokens += line.tokens;
				end = next.end;
				yield line.text;
				line = undefined;
			} else {
				end = next.end;
			}
			const following = await source.next();
			next = following.done ? undefined : following.value;
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
		// A create refused for the provider's queue (Anthropic's and Google's 429) made nothing: the part waits.
		if (isProviderCallError(error) && error.reason === 'rate_limited') return { short: 'refused', tokens };
		throw error;
	}
	faultPoint('after-batch-create');
	const saved: NewPart = {
		part: plan.part,
		route_start: plan.start,
		route_end: routeEnd,
		batch_id: batch.id,
		input_file_id: inputFileId,
		resubmit_of: plan.resubmitOf,
		estimated_tokens: tokens,
		capacity_key: plan.capacityKey,
	};
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
	logger.info({ jobId: job.id, part: plan.part, batchId: batch.id, lines: count, bytes, tokens, resubmitOf: plan.resubmitOf }, 'pseo batch part submitted');
	await stopTwinsOf(provider, job.id, tag, batch.id, logger);
	return { ...saved, status: 'running', estimated_tokens: tokens, capacity_key: plan.capacityKey };
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
	// Its size was not stored before the create was lost: it counts in its provider's queue as the room it was given.
	const adopted = { part: plan.part, route_start: start, route_end: end, batch_id: batch.id, input_file_id: null, resubmit_of: resubmitOf, estimated_tokens: plan.tokenBudget, capacity_key: plan.capacityKey };
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
async function cancelIfOrphaned(provider: BatchCapableProvider, deps: RunnerDeps, jobId: number, saved: NewPart): Promise<void> {
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
