import type { Knex } from 'knex';
import type { PlanPage } from '../plan/plan-page.ts';
import type { Logger } from '../shared/logger.ts';
import { readJobRouteRange } from './job-route-store.ts';
import { recordOutcomes, settledAmong } from './job-store.ts';
import type { JobHead } from './job-types.ts';

/*
 * A job's routes walked from its rows a page at a time, never read whole: the chat runner, a bulk part's input, a
 * cancel and a job without a provider each go through a job of any size in flat memory (operating contract: bulk
 * jobs of any size).
 */

/** Routes read per query. */
const ROUTES_PER_READ = 1000;
/** Failures recorded per transaction: a large job is failed in bounded steps. */
const FAILURES_PER_WRITE = 250;

/** One page of a job's routes, in position order, and those of them already settled (posted, or failed). */
export interface RoutePage {
	routes: (PlanPage & { position: number })[];
	settled: Set<string>;
}

/** The job's routes at positions `from` (inclusive) to `to` (exclusive; the job's end by default), page by page. */
export async function* walkJobRoutes(knex: Knex, job: JobHead, from = 0, to = job.route_count): AsyncGenerator<RoutePage> {
	for (let start = from; start < to; start += ROUTES_PER_READ) {
		const routes = await readJobRouteRange(knex, job.id, start, Math.min(start + ROUTES_PER_READ, to));
		const settled = await settledAmong(
			knex,
			job,
			routes.map((item) => item.route),
		);
		yield { routes, settled };
	}
}

/** The job's routes not settled yet, in position order. */
export async function* unsettledRoutes(knex: Knex, job: JobHead): AsyncGenerator<PlanPage> {
	for await (const { routes, settled } of walkJobRoutes(knex, job)) {
		for (const { position: _position, ...item } of routes) if (!settled.has(item.route)) yield item;
	}
}

/**
 * Fails every route of the job not settled yet with `error`, refunding each in the transaction that records it;
 * returns how many. Safe to run again: settled routes are skipped, refunds carry idempotency keys.
 */
export async function failUnsettled(knex: Knex, job: JobHead, worker: string, error: string, logger: Logger): Promise<number> {
	let failed = 0;
	for await (const { routes, settled } of walkJobRoutes(knex, job)) {
		const remaining = routes.filter((item) => !settled.has(item.route));
		for (let i = 0; i < remaining.length; i += FAILURES_PER_WRITE) {
			const chunk = remaining.slice(i, i + FAILURES_PER_WRITE).map((item) => ({ route: item.route, error }));
			await recordOutcomes(knex, job, worker, chunk, logger);
		}
		failed += remaining.length;
	}
	return failed;
}
