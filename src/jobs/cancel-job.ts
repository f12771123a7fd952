import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { PseoConfig } from '../config/config.ts';
import { runCancel } from '../engine/end-job.ts';
import { LeaseLostError, markCancelled, readJobHead, renewLease } from '../engine/job-store.ts';
import { ConflictError } from '../errors/index.ts';
import type { ProviderSource } from '../provider/provider-source.ts';
import { faultPoint } from '../shared/fault-injection.ts';
import type { Logger } from '../shared/logger.ts';
import type { ServiceContext } from '../shared/services.ts';
import { requireOwnedGeneration } from './read-jobs.ts';

export interface CancelJobDeps {
	context: ServiceContext;
	database: Knex;
	logger: Logger;
	config: PseoConfig;
	/** The providers: a job's batches are cancelled at the provider it runs with. */
	providers: Pick<ProviderSource, 'current'>;
}

/**
 * Cancels a pending or running job of `userId`: 404 when it does not exist, 403 when it is someone else's, 409 when
 * it has already finished. The cancel is stored and the job's lease taken in one statement (job-store
 * `markCancelled`), so the worker that was running it stops at its next lease renewal and none of its late writes
 * land, on any instance. This request then finishes the cancel itself, as the job's new lease holder; were it to
 * die on the way, the next worker to claim the job would finish it.
 */
export async function cancelJob(deps: CancelJobDeps, userId: string, jobId: number): Promise<void> {
	const { database, logger, config } = deps;
	await requireOwnedGeneration(deps.context, jobId, userId);
	const owner = `cancel:${randomUUID()}`;
	if (!(await markCancelled(database, jobId, owner, config.leaseMs))) {
		throw new ConflictError({ reason: `Generation ${jobId} has already finished; only a pending or running job can be cancelled.` });
	}
	faultPoint('after-cancel-mark');
	const renew = setInterval(() => {
		renewLease(database, jobId, owner, config.leaseMs).catch((error: unknown) => logger.warn({ err: error, jobId }, 'pseo cancel: lease renewal failed'));
	}, Math.max(100, Math.floor(config.leaseMs / 3)));
	try {
		const job = await readJobHead(database, jobId);
		if (job) {
			const provider = await deps.providers.current({ provider: job.provider, model: job.model });
			await runCancel(job, { database, logger, worker: owner, provider, batchMode: config.bulkMode === 'batch' });
		}
	} catch (error) {
		// A second cancel took the job over meanwhile, and finishes it.
		if (!(error instanceof LeaseLostError)) throw error;
	} finally {
		clearInterval(renew);
	}
}
