import type { GenerationProvider } from '../provider/generation-provider.ts';
import { BATCH_PART_KEY } from './batch-runner.ts';
import { readParts } from './part-store.ts';
import { finishJob } from './job-store.ts';
import { failUnsettled } from './route-walk.ts';
import type { JobHead } from './job-types.ts';
import type { RunnerDeps } from './page-runner.ts';

/** The error of every page a cancel stopped, in `failed_routes`. */
const CANCELLED = 'cancelled';

export type CancelDeps = Pick<RunnerDeps, 'database' | 'logger' | 'worker' | 'provider'> & {
	/** Bulk jobs run through the provider's Batch API (PSEO_BULK_MODE=batch). */
	batchMode: boolean;
};

/**
 * Finishes a cancelled job as its lease holder: stops its provider batch, records every page not yet created as
 * failed with the error `cancelled` (and refunds it, in the same transactions), and ends the job `failed`, or
 * `completed` when every page had already been created. Run by the cancel request itself, or, when that request's
 * instance died on the way, by whichever worker claims the job next. Every step can run again: stored pages and
 * recorded failures are skipped, refunds carry idempotency keys.
 */
export async function runCancel(job: JobHead, deps: CancelDeps): Promise<JobHead['status']> {
	const { database, logger, worker } = deps;
	if (job.mode === 'bulk' && deps.batchMode && !('unavailable' in deps.provider)) await stopBatch(job, deps);
	const cancelled = await failUnsettled(database, job, worker, CANCELLED, logger);
	const status = await finishJob(database, job.id, worker, 'Cancelled by its owner.');
	logger.info({ jobId: job.id, cancelledPages: cancelled, status }, 'pseo job cancelled');
	return status;
}

/**
 * Cancels the job's running provider batches: its stored parts, and the part after them, found by its metadata,
 * when a create happened whose id was never stored. A batch that has already finished cannot be cancelled; the
 * provider says so and nothing is lost, so that refusal is only logged.
 */
async function stopBatch(job: JobHead, deps: CancelDeps): Promise<void> {
	const provider = deps.provider as GenerationProvider;
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
