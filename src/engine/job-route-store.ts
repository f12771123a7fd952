import type { Knex } from 'knex';
import type { PlanPage } from '../plan/plan-page.ts';
import { dbTimestamp, jsonFromDb } from '../shared/database.ts';
import type { Logger } from '../shared/logger.ts';
import type { FailedRoute } from './job-types.ts';

/*
 * The owner of `pseo_generation_routes`: a job's routes as rows, one per page it was asked for, in the job's order
 * (`position`), each with its stored state:
 * - `queued`: waiting for a chat worker or for its part to be submitted;
 * - `in_part`: sent to the provider in bulk part `part`;
 * - `created`: its post is stored;
 * - `failed`: no post, with its `error`, and refunded.
 * The rows are written with the job in the trigger's transaction, and every state change in the transaction that
 * stores what caused it (the part, the post, the refund), so the state can never disagree with the money. A job's
 * `failed_routes` are the rows in `failed`; a job record no longer carries its routes as one JSON array.
 */

export const JOB_ROUTES = 'pseo_generation_routes';

export type RouteState = 'queued' | 'in_part' | 'created' | 'failed';

/**
 * Rows per INSERT: 7 bound values a row keep one statement under the bound-variable limit of every database
 * (SQLite's 32,766), so a job of 100,000 routes is 72 statements.
 */
const ROWS_PER_INSERT = 1400;
/** Routes per `whereIn`, under every database's bound-variable limit. */
const ROUTES_PER_QUERY = 500;

/** Writes a job's routes, `queued`, inside the transaction that inserts the job. */
export async function insertJobRoutes(trx: Knex.Transaction, jobId: number, routes: readonly PlanPage[]): Promise<void> {
	const now = dbTimestamp(trx);
	for (let start = 0; start < routes.length; start += ROWS_PER_INSERT) {
		const rows = routes.slice(start, start + ROWS_PER_INSERT).map((page, offset) => ({
			generation_id: jobId,
			position: start + offset,
			route: page.route,
			title: page.title,
			page: JSON.stringify(extraOf(page)),
			state: 'queued',
			date_updated: now,
		}));
		await trx(JOB_ROUTES).insert(rows);
	}
}

/** The plan metadata a route keeps besides its route and title, for the page prompt. */
function extraOf(page: PlanPage): Record<string, unknown> {
	const { route: _route, title: _title, ...rest } = page;
	return rest;
}

/** A job's routes in its order. */
export async function readJobRoutes(knex: Knex, jobId: number): Promise<PlanPage[]> {
	const rows = (await knex(JOB_ROUTES).where('generation_id', jobId).orderBy('position').select('route', 'title', 'page')) as Record<string, unknown>[];
	return rows.map((row) => {
		const extra = jsonFromDb<Partial<PlanPage>>(row['page'], {});
		return { ...extra, route: String(row['route']), title: String(row['title'] ?? row['route']), priority: Number(extra.priority ?? 0) };
	});
}

/** The failed routes of each job, in the job's order. */
export async function failedRoutesOf(knex: Knex, jobIds: readonly number[]): Promise<Map<number, FailedRoute[]>> {
	const failed = new Map<number, FailedRoute[]>(jobIds.map((id) => [id, []]));
	for (let i = 0; i < jobIds.length; i += ROUTES_PER_QUERY) {
		const rows = (await knex(JOB_ROUTES)
			.whereIn('generation_id', jobIds.slice(i, i + ROUTES_PER_QUERY))
			.andWhere('state', 'failed')
			.orderBy(['generation_id', 'position'])
			.select('generation_id', 'route', 'error')) as { generation_id: number; route: string; error: string | null }[];
		for (const row of rows) failed.get(Number(row.generation_id))?.push({ route: row.route, error: row.error ?? 'Generation failed.' });
	}
	return failed;
}

/** Which of these routes of a job have failed already. */
export async function failedAmong(trx: Knex | Knex.Transaction, jobId: number, routes: readonly string[]): Promise<Set<string>> {
	const found = new Set<string>();
	for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
		const rows = (await trx(JOB_ROUTES)
			.where({ generation_id: jobId, state: 'failed' })
			.whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY))
			.select('route')) as { route: string }[];
		for (const row of rows) found.add(row.route);
	}
	return found;
}

/** Records pages' outcomes on their rows, inside the transaction that stores the posts and refunds the failures. */
export async function settleJobRoutes(trx: Knex.Transaction, jobId: number, created: readonly string[], failed: readonly FailedRoute[]): Promise<void> {
	const now = dbTimestamp(trx);
	for (let i = 0; i < created.length; i += ROUTES_PER_QUERY) {
		await trx(JOB_ROUTES)
			.where('generation_id', jobId)
			.whereIn('route', created.slice(i, i + ROUTES_PER_QUERY))
			.update({ state: 'created', error: null, date_updated: now });
	}
	// Failures mostly share their reason (a batch's expiry, a cancel): one statement per reason.
	const byError = new Map<string, string[]>();
	for (const failure of failed) byError.set(failure.error, [...(byError.get(failure.error) ?? []), failure.route]);
	for (const [error, routes] of byError) {
		for (let i = 0; i < routes.length; i += ROUTES_PER_QUERY) {
			await trx(JOB_ROUTES)
				.where('generation_id', jobId)
				.whereIn('route', routes.slice(i, i + ROUTES_PER_QUERY))
				.update({ state: 'failed', error, date_updated: now });
		}
	}
}

/** Marks the unsettled routes at positions `[start, end)` as sent in `part`, inside the transaction that stores the part. */
export async function assignPart(trx: Knex.Transaction, jobId: number, start: number, end: number, part: number): Promise<void> {
	await trx(JOB_ROUTES)
		.where('generation_id', jobId)
		.andWhere('position', '>=', start)
		.andWhere('position', '<', end)
		.whereIn('state', ['queued', 'in_part'])
		.update({ state: 'in_part', part, date_updated: dbTimestamp(trx) });
}

/** How many routes of a job are in each state. */
export async function countRouteStates(knex: Knex, jobId: number): Promise<Record<RouteState, number>> {
	const counts: Record<RouteState, number> = { queued: 0, in_part: 0, created: 0, failed: 0 };
	const rows = (await knex(JOB_ROUTES).where('generation_id', jobId).groupBy('state').select('state').count({ n: '*' })) as { state: RouteState; n: number | string }[];
	for (const row of rows) counts[row.state] = Number(row.n);
	return counts;
}

/**
 * Jobs stored before routes were rows carry them as JSON arrays (`routes`, `failed_routes`): gives each such job
 * its rows, once, on start-up, with their states from what is stored (a post of the job's website, a recorded
 * failure). The arrays are left in place. Safe on several instances at once: a job's rows are written in one
 * transaction that first checks none exist, and the (generation_id, position) key refuses a twin.
 */
export async function migrateJobRoutes(knex: Knex, logger: Logger, readLegacy: LegacyRouteReader): Promise<void> {
	const pending = await readLegacy.jobsWithoutRows(knex);
	let migrated = 0;
	for (const jobId of pending) {
		const legacy = await readLegacy.routesOf(knex, jobId);
		if (!legacy) continue;
		try {
			await knex.transaction(async (trx) => {
				if (await trx(JOB_ROUTES).where('generation_id', jobId).first('id')) return;
				await insertJobRoutes(trx, jobId, legacy.routes);
				await settleJobRoutes(trx, jobId, legacy.posted, legacy.failed);
				migrated++;
			});
		} catch (error) {
			// A twin instance migrating the same job wins on the unique key; its rows are the same.
			if (await knex(JOB_ROUTES).where('generation_id', jobId).first('id')) continue;
			throw error;
		}
	}
	if (migrated > 0) logger.info({ jobs: migrated }, 'pseo: jobs stored with their routes as JSON have their routes as rows');
}

/** What the migration reads of a job stored the old way (job-store.ts supplies it). */
export interface LegacyRouteReader {
	jobsWithoutRows(knex: Knex): Promise<number[]>;
	routesOf(knex: Knex, jobId: number): Promise<{ routes: PlanPage[]; posted: string[]; failed: FailedRoute[] } | null>;
}
