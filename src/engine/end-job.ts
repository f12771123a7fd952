import { hasBatchApi, type BatchCapableProvider } from '../provider/generation-provider.ts';
import { BATCH_PART_KEY, readParts } from './part-store.ts';
import { finishJob, recordStepFailure } from './job-store.ts';
import { failUnsettled } from './route-walk.ts';
import type { JobHead } from './job-types.ts';
import type { RunnerDeps } from './page-runner.ts';
import type { StoredStepError } from './step-failure.ts';

/*
 * A job ended before its work is done: cancelled by its owner, or failed because its provider refuses it for good
 * (step-failure.ts) or is not configured at all. Both end the same way, as the job's lease holder: its provider
 * batches are stopped, every page not yet created fails (refunded in the transaction that records it), and the
 * job ends `failed`, or `completed` when every page had already been created. Every step can run again: stored
 * pages and recorded failures are skipped, refunds carry idempotency keys.
 */

/** The error of every page a cancel stopped, in `failed_routes`. */
const CANCELLED = 'cancelled';

export type EndJobDeps = Pick<RunnerDeps, 'database' | 'logger' | 'worker' | 'provider'> & {
	/** Bulk jobs run through the provider's Batch API (PSEO_BULK_MODE=batch). */
	batchMode: boolean;
};

/**
 * Finishes a cancelled job. Run by the cancel request itself, or, when that request's instance died on the way, by
 * whichever worker claims the job next. Trouble the job had before stays on its record.
 */
export async function runCancel(job: JobHead, deps: EndJobDeps): Promise<JobHead['status']> {
	const { pages, status } = await endEarly(job, deps, CANCELLED, 'Cancelled by its owner.');
	deps.logger.info({ jobId: job.id, cancelledPages: pages, status }, 'pseo job cancelled');
	return status;
}

/**
 * Fails a job that cannot go on, with `trouble` as every unsettled page's error, as the job's, and as its
 * `last_error`. The trouble is stored first: a crash before the end leaves the job running, and its next holder
 * sees the same count of failures.
 */
export async function failJob(job: JobHead, deps: EndJobDeps, trouble: StoredStepError): Promise<JobHead['status']> {
	await recordStepFailure(deps.database, job.id, deps.worker, trouble, null);
	const { pages, status } = await endEarly(job, deps, trouble.message, trouble.message);
	deps.logger.warn({ jobId: job.id, failedPages: pages, status, code: trouble.code, attempts: trouble.attempts }, 'pseo job failed: its provider cannot run it');
	return status;
}

async function endEarly(job: JobHead, deps: EndJobDeps, pageError: string, jobError: string): Promise<{ pages: number; status: JobHead['status'] }> {
	const { database, logger, worker } = deps;
	if (job.mode === 'bulk' && deps.batchMode && !('unavailable' in deps.provider) && hasBatchApi(deps.provider)) await stopBatch(job, deps.provider, deps);
	const pages = await failUnsettled(database, job, worker, pageError, logger);
	const status = await finishJob(database, job.id, worker, jobError, { keepLastError: true });
	return { pages, status };
}

/**
 * Cancels the job's running provider batches: its stored parts, and the part after them, found by its metadata,
 * when a create happened whose id was never stored. A batch that has already finished cannot be cancelled; the
 * provider says so and nothing is lost, so that refusal is only logged.
 */
async function stopBatch(job: JobHead, provider: BatchCapableProvider, deps: EndJobDeps): Promise<void> {
	const parts = await readParts(deps.database, job.id);
	const running = parts.filter((part) => part.status === 'running').map((part) => part.batch_id);
	if (parts.length === 0 && job.batch_id) running.push(job.batch_id);
	const lost = await provider.findBatchByMetadata(BATCH_PART_KEY, `${job.id}:${parts.length}`);
	if (lost) running.push(lost.id);
	for (const batchId of running) {
		try {
			const batch = await provider.cancelBatch(batchId);
			deps.logger.info({ jobId: job.id, batchId, batchStatus: batch.status }, 'pseo batch cancelled at the provider');
		} catch (error) {
			deps.logger.warn({ err: error, jobId: job.id, batchId }, 'pseo batch could not be cancelled at the provider (it may have finished)');
		}
	}
}
