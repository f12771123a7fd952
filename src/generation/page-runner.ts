import type { Knex } from 'knex';
import type PQueue from 'p-queue';
import type { Logger } from '../shared/logger.ts';
import type { GenerationProvider } from './generation-provider.ts';
import { loadJobContext } from './job-context.ts';
import { finishJob, recordOutcomes, settledRoutes, type PageOutcome } from './job-store.ts';
import type { JobRecord } from './job-types.ts';
import { generatePage } from './page-request.ts';

export interface RunnerDeps {
	database: Knex;
	logger: Logger;
	worker: string;
	/** The provider, or the reason there is none (a missing OPENAI_API_KEY). */
	provider: GenerationProvider | { unavailable: string };
	queue: PQueue;
	signal: AbortSignal;
}

/**
 * Runs a job through chat completions, one call per page, bounded by the instance's queue. Each page is stored
 * (or failed and refunded) in its own transaction as soon as it is done, so a crash loses at most the pages in
 * flight, and a resumed job skips every route already settled.
 */
export async function runPages(job: JobRecord, deps: RunnerDeps): Promise<void> {
	const { database, logger, worker, queue, signal } = deps;
	const settled = await settledRoutes(database, job);
	const remaining = job.routes.filter((item) => !settled.has(item.route));

	if ('unavailable' in deps.provider) {
		const reason = deps.provider.unavailable;
		await recordOutcomes(database, job, worker, remaining.map((item) => ({ route: item.route, error: reason })));
		await finishJob(database, job.id, worker, reason);
		return;
	}
	const provider = deps.provider;
	const context = await loadJobContext(database, job);

	const tasks = remaining.map((item) =>
		queue
			.add(
				async () => {
					if (signal.aborted) return;
					let outcome: PageOutcome;
					try {
						const content = await generatePage(provider, context, item, { signal, logContext: { jobId: job.id, route: item.route } });
						outcome = { route: item.route, content, language: context.language };
					} catch (error) {
						// Shutting down: leave the page for whoever resumes the job.
						if (signal.aborted) return;
						outcome = { route: item.route, error: errorMessage(error) };
						logger.warn({ jobId: job.id, route: item.route, error: outcome.error }, 'pseo page failed');
					}
					await recordOutcomes(database, job, worker, [outcome]);
				},
				{ signal },
			)
			.catch((error: unknown) => {
				if (signal.aborted) return;
				throw error;
			}),
	);
	await Promise.all(tasks);
	if (signal.aborted) return;
	await finishJob(database, job.id, worker);
}

export function errorMessage(error: unknown): string {
	const message = error instanceof Error ? error.message : String(error);
	return message.length > 500 ? `${message.slice(0, 497)}...` : message;
}
