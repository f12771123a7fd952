import type { Knex } from 'knex';
import type PQueue from 'p-queue';
import type { Logger } from '../shared/logger.ts';
import type { GenerationProvider, ProviderUnavailable } from '../provider/generation-provider.ts';
import { loadJobContext, SHARED_CATALOG_ROUTES } from './job-context.ts';
import { finishJob, LeaseLostError, recordOutcomes, type PageOutcome, type PageUsage } from './job-store.ts';
import { readJobRouteRange } from './job-route-store.ts';
import { unsettledRoutes } from './route-walk.ts';
import { failJob } from './end-job.ts';
import { providerMissing } from './step-failure.ts';
import type { ReportedUsage } from '../provider/types.ts';
import type { PostReviser } from '../posts/post-revisions.ts';
import type { JobHead } from './job-types.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { generatePage } from './page-request.ts';
import { createQualityGate, type QualitySettings } from '../quality/quality-gate.ts';
import type { QualityIssue } from '../quality/page-checks.ts';
import { passQualityGate } from './quality-pass.ts';
import { isAbortError } from '../shared/abort-error.ts';
import { isCapacityError, rateWaitMessage, waitForCapacity, type CapacitySettings } from './capacity-wait.ts';
import { capacityKeyOf } from './batch-capacity.ts';

const DEFAULT_CAPACITY = { capacityWaitMs: 86_400_000, retryMs: 30_000 };

/** A chat job's pages in the queue at once, per slot of PSEO_CONCURRENCY: enough that no slot waits for the next. */
const PAGES_QUEUED_PER_SLOT = 2;

export interface RunnerDeps {
	database: Knex;
	logger: Logger;
	worker: string;
	/** The provider, or the reason there is none (a missing OPENAI_API_KEY). */
	provider: GenerationProvider | ProviderUnavailable;
	queue: PQueue;
	signal: AbortSignal;
	/** Rewrites a post with a regenerated page, keeping the previous version as a revision. */
	revise?: PostReviser;
	/** The quality gate's thresholds. */
	quality: QualitySettings;
	/**
	 * How long a job may wait for its provider's capacity without progress, and when pages the provider kept
	 * answering 429 go again. Default: PSEO_PROVIDER_CAPACITY_WAIT_MS's and PSEO_BATCH_POLL_INTERVAL_MS's defaults.
	 */
	capacity?: CapacitySettings & { retryMs: number };
}

/**
 * Runs a job through chat completions, one call per page, bounded by the instance's queue. Each page is stored
 * (or failed and refunded) as soon as it is done, pages that finish while a write runs sharing the next
 * transaction, so a crash loses at most the pages in flight, and a resumed job skips every route already settled.
 */
export async function runPages(job: JobHead, deps: RunnerDeps): Promise<void> {
	const { database, logger, worker, queue, signal } = deps;
	if ('unavailable' in deps.provider) {
		await failJob(job, { ...deps, batchMode: false }, providerMissing(deps.provider, Date.now()));
		return;
	}
	const provider = deps.provider;
	// A job's routes are walked from its rows as the queue takes them (route-walk.ts), never held whole; a small job's
	// are read at once, for the plan catalog the instance shares between small jobs (job-context.ts).
	const small = job.route_count <= SHARED_CATALOG_ROUTES;
	const context = await loadJobContext(database, job, small ? await readJobRouteRange(database, job.id, 0, job.route_count) : undefined);

	const gate = createQualityGate(database, job.pseo_id, deps.quality, context);
	const store = coalesceWrites<PageOutcome>(async (outcomes) => {
		try {
			return await recordOutcomes(database, job, worker, outcomes, logger, deps.revise);
		} finally {
			gate.settle(outcomes.map((outcome) => outcome.route));
		}
	});
	let dropped = false;
	// Pages the provider kept answering 429 for: they wait for the job's next step, neither failed nor refunded.
	const waiting: { count: number; detail: string } = { count: 0, detail: '' };
	let stored = 0;
	const runPage = (item: PlanPage) =>
		queue
			.add(
				async (): Promise<PageOutcome | null> => {
					if (signal.aborted) return null;
					const usage: PageUsage = { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
					const onUsage = (reported: ReportedUsage) => {
						usage.prompt_tokens += reported.prompt_tokens;
						usage.completion_tokens += reported.completion_tokens;
						usage.requests++;
					};
					try {
						const call = { signal, onUsage, logContext: { jobId: job.id, route: item.route } };
						const draft = await generatePage(provider, context, item, call);
						const rewrite = (qualityIssues: readonly QualityIssue[]) => generatePage(provider, context, item, { ...call, qualityIssues });
						const content = await passQualityGate(draft, item, context.allowedRoutes, rewrite, { gate, logger, jobId: job.id, signal });
						return { route: item.route, content, language: context.language, usage };
					} catch (error) {
						// Shutting down: leave the page for whoever resumes the job.
						if (signal.aborted) return null;
						if (isCapacityError(error)) {
							waiting.count++;
							waiting.detail = errorMessage(error);
							return null;
						}
						const outcome = { route: item.route, error: errorMessage(error), usage };
						logger.warn({ jobId: job.id, route: item.route, error: outcome.error }, 'pseo page failed');
						return outcome;
					}
				},
				{ signal },
			)
			// Stored once the queue slot is free: PSEO_CONCURRENCY bounds provider calls, and a page waiting for the
			// database must not keep the next call from starting.
			.then(async (outcome) => {
				if (!outcome) return;
				await store(outcome);
				stored++;
			})
			.catch((error: unknown) => {
				// A write refused by the fence says more than the abort that may have come with it: the runtime logs it.
				if (error instanceof LeaseLostError) throw error;
				// Queued pages are dropped on shutdown (the queue is cleared): the job is handed back, not failed.
				if (signal.aborted || isAbortError(error)) {
					dropped = true;
					return;
				}
				throw error;
			});
	// The job's pages go to the instance's queue a few at a time, not all at once: the queue is shared, first in first
	// out, so a 10,000-page job queued whole kept every other job's pages (another user's one page included) waiting
	// behind all of it, and held a closure and two promises per page.
	const limit = Math.max(1, queue.concurrency) * PAGES_QUEUED_PER_SLOT;
	const inFlight = new Set<Promise<void>>();
	let failure: { error: unknown } | undefined;
	try {
		for await (const item of unsettledRoutes(database, job)) {
			if (failure || signal.aborted) break;
			const tracked: Promise<void> = runPage(item)
				.then(
					() => {},
					(error: unknown) => {
						failure ??= { error };
					},
				)
				.finally(() => inFlight.delete(tracked));
			inFlight.add(tracked);
			while (inFlight.size >= limit) await Promise.race(inFlight);
		}
	} catch (error) {
		// A failed read of the next routes: the pages already started finish and are stored before the step fails.
		failure ??= { error };
	}
	await Promise.all(inFlight);
	if (failure) throw failure.error;
	if (signal.aborted || dropped) return;
	if (waiting.count > 0) {
		const capacity = deps.capacity ?? DEFAULT_CAPACITY;
		const message = rateWaitMessage(capacityKeyOf(job), waiting.count, waiting.detail);
		await waitForCapacity(job, { ...deps, batchMode: false }, capacity, message, stored > 0, { waitingFor: null, pollAt: Date.now() + capacity.retryMs });
		return;
	}
	await finishJob(database, job.id, worker);
}

/**
 * Serialises calls of `write` and merges the items that arrive while one runs into the next call (at most `max`
 * per call), so a burst of finished pages costs one transaction instead of one each. The promise of each item
 * settles with the call that carried it.
 */
export function coalesceWrites<T>(write: (items: T[]) => Promise<unknown>, max = 250): (item: T) => Promise<void> {
	if (!Number.isInteger(max) || max < 1) throw new TypeError(`Expected \`max\` to be a positive integer, got ${String(max)}`);
	const waiting: { item: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
	let running = false;
	const run = async () => {
		running = true;
		while (waiting.length > 0) {
			const batch = waiting.splice(0, max);
			try {
				await write(batch.map((entry) => entry.item));
				for (const entry of batch) entry.resolve();
			} catch (error) {
				for (const entry of batch) entry.reject(error);
			}
		}
		running = false;
	};
	return (item) =>
		new Promise<void>((resolve, reject) => {
			waiting.push({ item, resolve, reject });
			if (!running) void run();
		});
}

export function errorMessage(error: unknown): string {
	const message = error instanceof Error ? error.message : String(error);
	return message.length > 500 ? `${message.slice(0, 497)}...` : message;
}

