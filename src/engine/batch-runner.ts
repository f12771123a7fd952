import { FINAL_BATCH_STATES, type BatchInfo, type GenerationProvider } from '../provider/generation-provider.ts';
import { faultPoint } from '../shared/fault-injection.ts';
import { loadJobContext, type JobContext } from './job-context.ts';
import { finishJob, recordOutcomes, releaseJob, saveBatch, settledRoutes, type PageOutcome } from './job-store.ts';
import type { JobRecord } from './job-types.ts';
import { buildPageRequest, generatePage, pageFromBatchLine } from './page-request.ts';
import { errorMessage, type RunnerDeps } from './page-runner.ts';
import { createQualityGate, type QualityGate } from '../quality/quality-gate.ts';
import type { QualityIssue } from '../quality/page-checks.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import type { ReportedUsage } from '../provider/types.ts';
import { assessDrafts, rewriteFailed } from './quality-pass.ts';

/** Results are written in chunks: big enough to be fast, small enough that memory stays flat. */
const INGEST_CHUNK = 250;

/** Metadata key that tags a provider batch with its job, so a lost create can be found and adopted. */
export const BATCH_JOB_KEY = 'pseo_generation_id';

/**
 * One step of a bulk job in batch mode, run by whichever worker claimed it:
 * - no batch yet: adopt a batch already tagged with this job (a create that timed out but happened), or upload
 *   the JSONL and create one; store its id; come back after the poll interval;
 * - a batch still running: come back after the poll interval (the schedule lives in the database, so any
 *   instance, after any restart, polls it; Azure's batches may run for days and are simply polled on);
 * - a finished batch: stream its output and error files into posts and failed routes, then end the job.
 */
export async function runBatchStep(job: JobRecord, deps: RunnerDeps, pollIntervalMs: number): Promise<void> {
	const { database, worker, logger } = deps;
	if ('unavailable' in deps.provider) {
		const reason = deps.provider.unavailable;
		const settled = await settledRoutes(database, job);
		const remaining = job.routes.filter((item) => !settled.has(item.route));
		await recordOutcomes(database, job, worker, remaining.map((item) => ({ route: item.route, error: reason })), logger);
		await finishJob(database, job.id, worker, reason);
		return;
	}
	const provider = deps.provider;

	if (!job.batch_id) {
		const batch = await submitBatch(job, deps, provider);
		await saveBatch(database, job.id, worker, batch.id, batch.inputFileId);
		logger.info({ jobId: job.id, batchId: batch.id, adopted: batch.adopted }, 'pseo batch submitted');
		await releaseJob(database, job.id, worker, Date.now() + pollIntervalMs);
		return;
	}

	const batch = await provider.retrieveBatch(job.batch_id);
	if (!FINAL_BATCH_STATES.has(batch.status)) {
		logger.debug({ jobId: job.id, batchId: batch.id, status: batch.status }, 'pseo batch still running');
		await releaseJob(database, job.id, worker, Date.now() + pollIntervalMs);
		return;
	}
	await ingestBatch(job, batch, deps, provider);
	if (deps.signal.aborted) return;
	const status = await finishJob(database, job.id, worker);
	logger.info({ jobId: job.id, batchId: batch.id, batchStatus: batch.status, status }, 'pseo batch job finished');
}

async function submitBatch(
	job: JobRecord,
	deps: RunnerDeps,
	provider: GenerationProvider,
): Promise<{ id: string; inputFileId: string | null; adopted: boolean }> {
	// The SDK retries a timed-out create without an idempotency key, so a batch may exist that we never heard of.
	const existing = await provider.findBatchByMetadata(BATCH_JOB_KEY, String(job.id));
	if (existing) return { id: existing.id, inputFileId: null, adopted: true };

	const context = await loadJobContext(deps.database, job);
	const settled = await settledRoutes(deps.database, job);
	const remaining = job.routes.filter((item) => !settled.has(item.route));
	const lines = remaining.map((item) => provider.buildBatchLine(item.route, buildPageRequest(context, item)));
	const inputFileId = await provider.uploadBatchFile(lines, `pseo-generation-${job.id}.jsonl`);
	const batch = await provider.createBatch(inputFileId, { [BATCH_JOB_KEY]: String(job.id), pseo_id: String(job.pseo_id) });
	faultPoint('after-batch-create');
	return { id: batch.id, inputFileId, adopted: false };
}

async function ingestBatch(job: JobRecord, batch: BatchInfo, deps: RunnerDeps, provider: GenerationProvider): Promise<void> {
	const { database, worker, logger } = deps;
	const context: JobContext = await loadJobContext(database, job);
	const items = new Map(job.routes.map((item) => [item.route, item]));
	const gate = createQualityGate(database, job.pseo_id, deps.quality);
	const seen = new Set<string>();
	let chunk: PageOutcome[] = [];
	const flush = async () => {
		if (chunk.length === 0) return;
		const outcomes = chunk;
		chunk = [];
		await gateChunk(outcomes, items, context, gate, deps, provider, job.id);
		if (deps.signal.aborted) return;
		try {
			await recordOutcomes(database, job, worker, outcomes, logger);
		} finally {
			gate.settle(outcomes.map((outcome) => outcome.route));
		}
		faultPoint('mid-batch-ingest');
	};

	for (const fileId of [batch.outputFileId, batch.errorFileId]) {
		if (!fileId) continue;
		for await (const line of provider.streamFileLines(fileId)) {
			if (deps.signal.aborted) return;
			const outcome = pageFromBatchLine(line, context);
			if (!outcome || !items.has(outcome.route) || seen.has(outcome.route)) continue;
			seen.add(outcome.route);
			chunk.push(outcome);
			if (chunk.length >= INGEST_CHUNK) await flush();
		}
	}
	await flush();
	if (deps.signal.aborted) return;

	const missing = job.routes.filter((item) => !seen.has(item.route)).map((item) => item.route);
	if (missing.length > 0) {
		const reason = missingReason(batch);
		for (let i = 0; i < missing.length; i += INGEST_CHUNK) {
			await recordOutcomes(database, job, worker, missing.slice(i, i + INGEST_CHUNK).map((route) => ({ route, error: reason })), logger);
		}
	}
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
	provider: GenerationProvider,
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
		const usage = (outcome.usage ??= { prompt_tokens: 0, completion_tokens: 0, requests: 0 });
		const call = {
			signal,
			logContext: { jobId, route: item.route },
			onUsage: (reported: ReportedUsage) => {
				usage.prompt_tokens += reported.prompt_tokens;
				usage.completion_tokens += reported.completion_tokens;
				usage.requests++;
			},
		};
		const rewrite = (qualityIssues: readonly QualityIssue[]) => queue.add(() => generatePage(provider, context, item, { ...call, qualityIssues }), { signal });
		rewrites.push(
			rewriteFailed(first, rewrite, { gate, logger, jobId, signal }).then((content) => {
				outcome.content = content;
			}),
		);
	});
	await Promise.all(rewrites);
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
