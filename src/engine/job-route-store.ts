import type { Knex } from 'knex';
import type { PlanPage } from '../plan/plan-page.ts';
import { arrayLiteral, dbTimestamp, jsonFromDb, vendorOf } from '../shared/database.ts';
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

/**
 * Rows per INSERT: 7 bound values a row keep one statement under SQLite's historical limit of 999 bound values
 * (PostgreSQL and MySQL take 65,535, so they get more rows a statement).
 */
const ROWS_PER_INSERT = { sqlite: 140, other: 1400 };
/** Rows per INSERT ... SELECT unnest on PostgreSQL, whose array parameters have no such limit. */
const ARRAY_ROWS_PER_INSERT = 20_000;
const COLUMNS = ['generation_id', 'position', 'route', 'title', 'page', 'state', 'date_updated'] as const;
/** Routes per `whereIn`, under every database's bound-variable limit. */
const ROUTES_PER_QUERY = 500;

/** Writes a job's routes, `queued`, inside the transaction that inserts the job. */
export async function insertJobRoutes(trx: Knex.Transaction, jobId: number, routes: readonly PlanPage[]): Promise<void> {
	const now = dbTimestamp(trx);
	const vendor = vendorOf(trx);
	if (vendor === 'postgres') {
		// One statement per 20,000 rows with four array parameters: the trigger's 202 waits on this insert, and
		// 100,000 rows as VALUES lists of 1,400 took 72 statements and 700,000 bound parameters to parse.
		for (let start = 0; start < routes.length; start += ARRAY_ROWS_PER_INSERT) {
			const rows = routes.slice(start, start + ARRAY_ROWS_PER_INSERT);
			await trx.raw(
				`INSERT INTO ?? (${COLUMNS.map(() => '??').join(', ')}) SELECT ?, u.position, u.route, u.title, u.page::json, 'queued', ? FROM unnest(?::int[], ?::text[], ?::text[], ?::text[]) AS u(position, route, title, page)`,
				[
					JOB_ROUTES,
					...COLUMNS,
					jobId,
					now,
					arrayLiteral(rows.map((_, offset) => start + offset)),
					arrayLiteral(rows.map((page) => page.route)),
					arrayLiteral(rows.map((page) => page.title)),
					arrayLiteral(rows.map((page) => JSON.stringify(extraOf(page)))),
				],
			);
		}
		return;
	}
	const size = vendor === 'sqlite' ? ROWS_PER_INSERT.sqlite : ROWS_PER_INSERT.other;
	for (let start = 0; start < routes.length; start += size) {
		const rows = routes.slice(start, start + size);
		// One plain multi-row VALUES list: Knex writes SQLite's multi-row inserts as a UNION ALL of SELECTs, which
		// SQLite caps at 500 terms (shared with quality/similarity-index.ts's reasoning).
		const values = rows.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ');
		const bindings = rows.flatMap((page, offset) => [jobId, start + offset, page.route, page.title, JSON.stringify(extraOf(page)), 'queued', now]);
		await trx.raw(`INSERT INTO ?? (${COLUMNS.map(() => '??').join(', ')}) VALUES ${values}`, [JOB_ROUTES, ...COLUMNS, ...bindings]);
	}
}

/** The plan metadata a route keeps besides its route and title, for the page prompt. */
function extraOf(page: PlanPage): Record<string, unknown> {
	const { route: _route, title: _title, ...rest } = page;
	return rest;
}

/** A job's routes in its order, and those that failed with their errors: one read of its rows. */
export async function readJobRoutes(knex: Knex, jobId: number): Promise<{ routes: PlanPage[]; failed: FailedRoute[] }> {
	const rows = (await knex(JOB_ROUTES).where('generation_id', jobId).orderBy('position').select('route', 'title', 'page', 'state', 'error')) as Record<string, unknown>[];
	const routes: PlanPage[] = [];
	const failed: FailedRoute[] = [];
	for (const row of rows) {
		const page = planPageOf(row);
		routes.push(page);
		if (row['state'] === 'failed') failed.push({ route: page.route, error: (row['error'] as string | null) ?? 'Generation failed.' });
	}
	return { routes, failed };
}

/** A job's routes at positions `[start, end)`, in its order, each with its position. */
export async function readJobRouteRange(knex: Knex, jobId: number, start: number, end: number): Promise<(PlanPage & { position: number })[]> {
	const rows = (await knex(JOB_ROUTES)
		.where('generation_id', jobId)
		.andWhere('position', '>=', start)
		.andWhere('position', '<', end)
		.orderBy('position')
		.select('position', 'route', 'title', 'page')) as Record<string, unknown>[];
	return rows.map((row) => ({ ...planPageOf(row), position: Number(row['position']) }));
}

/** How many routes a job has: its last position plus one, read from the (generation_id, position) index. */
export async function countJobRoutes(knex: Knex, jobId: number): Promise<number> {
	const row = (await knex(JOB_ROUTES).where('generation_id', jobId).max('position as last').first()) as { last: number | string | null } | undefined;
	return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1;
}

/** The route of every page of a job, in no particular order: the links a page of it may make. */
export async function readJobRouteNames(knex: Knex, jobId: number): Promise<string[]> {
	const rows = (await knex(JOB_ROUTES).where('generation_id', jobId).select('route')) as { route: string }[];
	return rows.map((row) => row.route);
}

function planPageOf(row: Record<string, unknown>): PlanPage {
	const extra = jsonFromDb<Partial<PlanPage>>(row['page'], {});
	const route = String(row['route']);
	return { ...extra, route, title: String(row['title'] ?? route), priority: Number(extra.priority ?? 0) };
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
	for (const failure of failed) {
		const routes = byError.get(failure.error);
		if (routes) routes.push(failure.route);
		else byError.set(failure.error, [failure.route]);
	}
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

/**
 * Gives the routes a refused part held back to the job, inside the transaction that marks the part refused: they
 * are sent again by a later part, as routes no part holds.
 */
export async function releasePart(trx: Knex.Transaction, jobId: number, part: number): Promise<void> {
	await trx(JOB_ROUTES).where({ generation_id: jobId, part, state: 'in_part' }).update({ state: 'queued', part: null, date_updated: dbTimestamp(trx) });
}

/**
 * Jobs stored before routes were rows carry them as JSON arrays (`routes`, `failed_routes`): gives each such job
 * its rows, once, on start-up, with their states from what is stored (a post of the job's website, a recorded
 * failure). The arrays are left in place. Safe on several instances at once: a job's rows are written in one
 * transaction that first checks none exist, and the (generation_id, position) key refuses a twin.
 */
export async function migrateJobRoutes(knex: Knex, logger: Logger, readLegacy: LegacyRouteReader): Promise<void> {
	let migrated = 0;
	for (const jobId of await readLegacy.jobsWithoutRows(knex)) {
		if (await migrateJob(knex, jobId, readLegacy)) migrated++;
	}
	if (migrated > 0) logger.info({ jobs: migrated }, 'pseo: jobs stored with their routes as JSON have their routes as rows');
}

/**
 * Gives one job stored the old way its rows, unless it has some already; true when it wrote them. Also run when such
 * a job is read for work (an instance of the previous version stored it after this one started).
 */
export async function migrateJob(knex: Knex, jobId: number, readLegacy: LegacyRouteReader): Promise<boolean> {
	const legacy = await readLegacy.routesOf(knex, jobId);
	if (!legacy) return false;
	try {
		return await knex.transaction(async (trx) => {
			if (await trx(JOB_ROUTES).where('generation_id', jobId).first('id')) return false;
			await insertJobRoutes(trx, jobId, legacy.routes);
			await settleJobRoutes(trx, jobId, legacy.posted, legacy.failed);
			return true;
		});
	} catch (error) {
		// A twin instance migrating the same job wins on the unique key; its rows are the same.
		if (await knex(JOB_ROUTES).where('generation_id', jobId).first('id')) return false;
		throw error;
	}
}

/** What the migration reads of a job stored the old way (job-store.ts supplies it). */
export interface LegacyRouteReader {
	jobsWithoutRows(knex: Knex): Promise<number[]>;
	routesOf(knex: Knex, jobId: number): Promise<{ routes: PlanPage[]; posted: string[]; failed: FailedRoute[] } | null>;
}
