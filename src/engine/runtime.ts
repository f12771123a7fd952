import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Knex } from 'knex';
import PQueue from 'p-queue';
import type { PseoConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import { failJob, runCancel, type EndJobDeps } from './end-job.ts';
import { runBatchStep } from './batch-runner.ts';
import type { ProviderSource } from '../provider/provider-source.ts';
import { hasBatchApi } from '../provider/generation-provider.ts';
import { claimJob, findClaimable, LeaseLostError, readJobHead, recordStepFailure, releaseJob, renewLease } from './job-store.ts';
import { nextStepError, stepRetryDelay } from './step-failure.ts';
import { isCapacityError, waitForCapacity } from './capacity-wait.ts';
import { runPages, type RunnerDeps } from './page-runner.ts';
import type { PostReviser } from '../posts/post-revisions.ts';
import { releaseAbandonedPlans } from '../plan/plan-store.ts';
import { deleteExpiredKeys } from '../idempotency/idempotency-store.ts';
import { sweepProviderFiles } from './provider-file-sweep.ts';
import { settleStrayParts } from './stray-batches.ts';
import { leaseClaims } from '../metrics/metrics.ts';

export interface RuntimeOptions {
	database: Knex;
	logger: Logger;
	config: PseoConfig;
	/** The provider each step runs with, or why there is none: the environment's, or Settings → AI's. */
	providers: ProviderSource;
	/** Rewrites a post with a regenerated page (posts/post-revisions.ts); without it, a regeneration fails. */
	revise?: PostReviser;
}

/**
 * The per-instance job runtime. Jobs live in the database; this claims them (a leased, conditional update),
 * runs their pages through one p-queue bounded by PSEO_CONCURRENCY, renews the lease while it works, and on a
 * schedule picks up pending jobs, jobs whose lease lapsed (their worker died) and batches due for a poll. Any
 * number of instances can run side by side: the claim decides who runs what.
 */
export class GenerationRuntime {
	readonly worker = `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
	readonly #options: RuntimeOptions;
	readonly #queue: PQueue;
	readonly #owned = new Map<number, { controller: AbortController; done: Promise<void> }>();
	/** Jobs an instance runs at once: enough to keep the queue full without hoarding work other instances could do. */
	readonly #maxJobs: number;
	#timer: NodeJS.Timeout | null = null;
	#sweeping: Promise<void> | null = null;
	#releasingPlans: Promise<unknown> | null = null;
	#stopping = false;
	#nextKeySweep = 0;
	/** The first look at the provider's files waits an interval: a restart loop must not list them at every start. */
	#nextFileSweep: number;
	#sweepingFiles = false;
	#nextStraySweep = 0;
	#settlingStrays = false;

	constructor(options: RuntimeOptions) {
		this.#options = options;
		this.#queue = new PQueue({ concurrency: options.config.concurrency });
		this.#maxJobs = Math.max(2, options.config.concurrency);
		this.#nextFileSweep = Date.now() + options.config.housekeepingIntervalMs;
	}

	/** Starts the schedule; the first sweep runs at once (start-up recovery). */
	start(): void {
		if (this.#timer || this.#stopping) return;
		const tick = () => {
			this.kick();
			this.#releaseAbandonedPlans();
			this.#forgetExpiredKeys();
			this.#sweepProviderFiles();
			this.#settleStrayParts();
		};
		this.#timer = setInterval(tick, this.#options.config.sweepIntervalMs);
		this.#timer.unref();
		tick();
	}

	/**
	 * Content plans whose request died with its instance hold their user's plan lock and charge until the lock
	 * lapses; the schedule fails and refunds them then, whether or not their user asks for another plan.
	 */
	#releaseAbandonedPlans(): void {
		if (this.#stopping || this.#releasingPlans) return;
		const { database, logger } = this.#options;
		this.#releasingPlans = releaseAbandonedPlans(database, logger)
			.catch((error: unknown) => logger.warn({ err: error }, 'pseo: abandoned content plans could not be released; the next sweep tries again'))
			.finally(() => {
				this.#releasingPlans = null;
			});
	}

	/** Idempotency keys past their 24 hours are deleted, by each instance at most once per PSEO_HOUSEKEEPING_INTERVAL_MS (an hour). */
	#forgetExpiredKeys(): void {
		const now = Date.now();
		if (this.#stopping || now < this.#nextKeySweep) return;
		this.#nextKeySweep = now + this.#options.config.housekeepingIntervalMs;
		const { database, logger } = this.#options;
		deleteExpiredKeys(database, now)
			.then((deleted) => deleted > 0 && logger.debug({ deleted }, 'pseo: expired idempotency keys deleted'))
			.catch((error: unknown) => logger.warn({ err: error }, 'pseo: expired idempotency keys could not be deleted; the next sweep tries again'));
	}

	/** Our uploads of ended jobs left at the provider (provider-file-sweep.ts), looked for once per PSEO_HOUSEKEEPING_INTERVAL_MS (an hour). */
	#sweepProviderFiles(): void {
		const now = Date.now();
		const { database, logger, providers } = this.#options;
		if (this.#stopping || this.#sweepingFiles || now < this.#nextFileSweep) return;
		this.#nextFileSweep = now + this.#options.config.housekeepingIntervalMs;
		this.#sweepingFiles = true;
		providers
			.current()
			.then((provider) => ('unavailable' in provider || !hasBatchApi(provider) ? 0 : sweepProviderFiles(database, provider, logger, now)))
			.catch((error: unknown) => logger.warn({ err: error }, 'pseo: the files left at the provider could not be listed; the next sweep tries again'))
			.finally(() => {
				this.#sweepingFiles = false;
			});
	}

	/**
	 * The batches of jobs that ended while they ran (stray-batches.ts): once each has stopped at the provider, its
	 * billed lines go into its job's usage and its files are deleted. Looked for at the batch poll interval.
	 */
	#settleStrayParts(): void {
		const now = Date.now();
		const { database, logger, providers, config } = this.#options;
		if (this.#stopping || this.#settlingStrays || now < this.#nextStraySweep) return;
		this.#nextStraySweep = now + config.batchPollIntervalMs;
		this.#settlingStrays = true;
		const providerOf = async (job: { provider: string | null; model: string | null }) => {
			const provider = await providers.current(job);
			return 'unavailable' in provider || !hasBatchApi(provider) ? null : provider;
		};
		settleStrayParts(database, providerOf, logger)
			.catch((error: unknown) => logger.warn({ err: error }, 'pseo: the batches of ended jobs could not be looked up; the next sweep tries again'))
			.finally(() => {
				this.#settlingStrays = false;
			});
	}

	/** Looks for claimable jobs now (after a trigger, say) instead of at the next tick. */
	kick(): void {
		if (this.#stopping || this.#sweeping) return;
		this.#sweeping = this.#sweep()
			.catch((error: unknown) => this.#options.logger.error({ err: error }, 'pseo job sweep failed'))
			.finally(() => {
				this.#sweeping = null;
			});
	}

	async #sweep(): Promise<void> {
		const { database, config } = this.#options;
		const free = this.#maxJobs - this.#owned.size;
		if (free <= 0) return;
		const candidates = await findClaimable(database, Date.now(), free * 2);
		for (const { id: jobId, takeover } of candidates) {
			if (this.#stopping || this.#owned.size >= this.#maxJobs) return;
			if (this.#owned.has(jobId)) continue;
			if (!(await claimJob(database, jobId, this.worker, config.leaseMs, this.#options.logger))) continue;
			// What the sweep read of the job says whether it was a lapsed lease: the metric costs no statement of its own.
			leaseClaims.inc({ kind: takeover ? 'takeover' : 'claim' });
			this.#run(jobId);
		}
	}

	#run(jobId: number): void {
		const controller = new AbortController();
		const done = this.#execute(jobId, controller).finally(() => {
			this.#owned.delete(jobId);
			// A slot freed up: there may be more work waiting.
			this.kick();
		});
		this.#owned.set(jobId, { controller, done });
	}

	async #execute(jobId: number, controller: AbortController): Promise<void> {
		const { database, logger, config } = this.#options;
		const renew = setInterval(() => {
			renewLease(database, jobId, this.worker, config.leaseMs)
				.then((held) => {
					if (!held) {
						logger.warn({ jobId, worker: this.worker }, 'pseo job lease lost; stopping work on it');
						controller.abort();
					}
				})
				.catch((error: unknown) => logger.warn({ err: error, jobId }, 'pseo lease renewal failed'));
		}, Math.max(100, Math.floor(config.leaseMs / 3)));
		const deps: RunnerDeps = {
			database,
			logger,
			worker: this.worker,
			// Resolved when the step starts (below): Settings → AI may have changed since the last step.
			provider: { unavailable: 'The AI provider was not resolved.' },
			queue: this.#queue,
			signal: controller.signal,
			quality: config.quality,
			capacity: { capacityWaitMs: config.providerCapacityWaitMs, retryMs: config.batchPollIntervalMs },
			...(this.#options.revise ? { revise: this.#options.revise } : {}),
		};
		const batchMode = config.bulkMode === 'batch';
		try {
			// Bulk steps in batch mode and cancels read a job's routes a part or a page at a time; chat runners walk them all.
			const job = await readJobHead(database, jobId);
			if (!job) return;
			// The provider and model the job was accepted with; Settings → AI may have changed since its last step.
			deps.provider = await this.#options.providers.current({ provider: job.provider, model: job.model });
			logger.debug({ jobId, mode: job.mode, attempt: job.attempts }, 'pseo job claimed');
			if (job.cancelled) {
				// Its owner cancelled it and the request that began the cancel did not finish it.
				await runCancel(job, { ...deps, batchMode });
			} else if (job.mode === 'bulk' && batchMode && !('unavailable' in deps.provider) && hasBatchApi(deps.provider)) {
				await runBatchStep(job, deps, {
					pollIntervalMs: config.batchPollIntervalMs,
					maxRequests: config.batchMaxRequests,
					maxBytes: config.batchMaxBytes,
					maxEnqueuedTokens: config.batchMaxEnqueuedTokens,
					capacityWaitMs: config.providerCapacityWaitMs,
				});
			} else {
				await runPages(job, deps);
			}
		} catch (error) {
			if (this.#stopping) return; // drain() hands the job back
			if (error instanceof LeaseLostError) {
				// The fence at work: this worker stalled past its lease, another took the job over, and the database
				// refused the write this worker was about to make.
				logger.warn({ jobId, worker: this.worker }, 'pseo job handed over to another worker; a late write from this worker was refused');
				return;
			}
			if (controller.signal.aborted) {
				logger.warn({ jobId, worker: this.worker }, 'pseo job handed over to another worker');
				return;
			}
			await this.#stepFailed(jobId, error, { ...deps, batchMode }).catch((recordError: unknown) =>
				// The lease lapses by itself and another sweep takes the job over; say why it waits that long.
				logger.warn({ err: recordError, jobId }, 'pseo job could not be handed back; it resumes when its lease lapses'),
			);
		} finally {
			clearInterval(renew);
		}
	}

	/**
	 * A step that threw (a provider outage or refusal on a batch call, a database fault): the failure is counted on
	 * the job, which is handed back to be tried again after a growing delay, or failed when its provider keeps
	 * refusing it in a way no retry mends (step-failure.ts).
	 */
	async #stepFailed(jobId: number, error: unknown, deps: EndJobDeps): Promise<void> {
		const { database, logger, config } = this.#options;
		const job = await readJobHead(database, jobId);
		if (!job || job.lease_owner !== this.worker || job.status !== 'running') return;
		if (isCapacityError(error)) {
			// The provider's rate limit, on a poll or a lookup: the job waits, it does not fail (capacity-wait.ts).
			const message = `Waiting for provider capacity: ${error instanceof Error ? error.message : String(error)}`;
			const pollAt = Date.now() + stepRetryDelay(config.batchPollIntervalMs, 1);
			await waitForCapacity(job, deps, { capacityWaitMs: config.providerCapacityWaitMs }, message, false, { waitingFor: null, pollAt });
			return;
		}
		const { record, fail } = nextStepError(job.last_error, error, Date.now(), config);
		if (fail) {
			logger.error({ err: error, jobId, code: record.code, attempts: record.attempts }, 'pseo job step failed again, in a way no retry mends; the job fails');
			await failJob(job, deps, record);
			return;
		}
		const delay = stepRetryDelay(config.batchPollIntervalMs, record.attempts);
		logger.error({ err: error, jobId, code: record.code, attempts: record.attempts, retryInMs: delay }, 'pseo job step failed; it will be retried');
		await recordStepFailure(database, jobId, this.worker, record, Date.now() + delay);
	}

	/**
	 * Graceful stop: claim nothing more, drop queued pages, give pages in flight `graceMs` to finish, then hand
	 * every job this instance holds back to the database so another instance (or the next start) resumes it at
	 * once instead of waiting for the lease to lapse.
	 */
	async drain(graceMs: number): Promise<void> {
		if (this.#stopping) return;
		this.#stopping = true;
		if (this.#timer) clearInterval(this.#timer);
		// Captured now: a runner whose queued pages were just dropped returns early and leaves #owned, but its job
		// is still running and leased to this worker.
		const held = [...this.#owned.keys()];
		this.#queue.clear();
		const inFlight = Promise.all([...this.#owned.values()].map((entry) => entry.done));
		await Promise.race([inFlight, new Promise((resolve) => setTimeout(resolve, graceMs))]);
		for (const entry of this.#owned.values()) entry.controller.abort();
		// A release of abandoned plans under way gets the same second: cut off, its transaction rolls back and the next
		// instance's schedule does it again.
		await Promise.race([Promise.all([inFlight, this.#releasingPlans]), new Promise((resolve) => setTimeout(resolve, 1000))]);
		for (const jobId of held) {
			await releaseJob(this.#options.database, jobId, this.worker).catch((error: unknown) =>
				this.#options.logger.warn({ err: error, jobId }, 'pseo job could not be handed back at shutdown; it resumes when its lease lapses'),
			);
		}
		if (held.length > 0) this.#options.logger.info({ jobs: held }, 'pseo jobs handed back for resumption');
	}
}
