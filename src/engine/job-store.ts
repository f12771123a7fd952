import type { Knex } from 'knex';
import { refundTokens } from '../ledger/token-ledger.ts';
import { dbTimestamp, isUniqueViolation, jsonFromDb, vendorOf } from '../shared/database.ts';
import type { FailedRoute, JobRecord, JobRoute } from './job-types.ts';

/*
 * The engine's writes to jobs, posts and counters. They use Knex directly because each is an atomic conditional
 * statement or a multi-table transaction (post + counters + refund) that the items services cannot express.
 * Every write is fenced by the lease: it only applies while `lease_owner` is this worker, so a worker that lost
 * its lease (paused, partitioned, presumed dead) can never write after another one took the job over.
 */

export const JOBS = 'pseo_generations';
export const POSTS = 'pseo_posts';

export interface PageContent {
	title: string;
	meta_title: string | null;
	meta_description: string | null;
	h1: string | null;
	body: string;
	faq: unknown;
	internal_links: unknown;
}

/** The lease lost: another worker owns the job now, so this one must stop touching it. */
export class LeaseLostError extends Error {
	constructor(jobId: number) {
		super(`lease on generation ${jobId} was lost`);
		this.name = 'LeaseLostError';
	}
}

/** Ids of jobs that may be claimed now: pending ones, and running ones whose lease lapsed and that are due. */
export async function findClaimable(knex: Knex, now: number, limit: number): Promise<number[]> {
	const rows = (await knex(JOBS)
		.where('status', 'pending')
		.orWhere((q) =>
			q
				.where('status', 'running')
				.andWhere((l) => l.whereNull('lease_expires_at').orWhere('lease_expires_at', '<', now))
				.andWhere((p) => p.whereNull('next_poll_at').orWhere('next_poll_at', '<=', now)),
		)
		.orderBy('id')
		.limit(limit)
		.select('id')) as { id: number }[];
	return rows.map((row) => Number(row.id));
}

/**
 * Claims a job with one conditional UPDATE: only one worker can move it from claimable to leased, whatever the
 * number of instances. Returns false when another worker got there first.
 */
export async function claimJob(knex: Knex, jobId: number, worker: string, leaseMs: number): Promise<boolean> {
	const now = Date.now();
	const updated = await knex(JOBS)
		.where('id', jobId)
		.andWhere((q) =>
			q
				.where('status', 'pending')
				.orWhere((r) =>
					r
						.where('status', 'running')
						.andWhere((l) => l.whereNull('lease_expires_at').orWhere('lease_expires_at', '<', now))
						.andWhere((p) => p.whereNull('next_poll_at').orWhere('next_poll_at', '<=', now)),
				),
		)
		.update({
			status: 'running',
			lease_owner: worker,
			lease_expires_at: now + leaseMs,
			next_poll_at: null,
			attempts: knex.raw('attempts + 1'),
			date_updated: dbTimestamp(knex),
		});
	return updated === 1;
}

/** Extends the lease; false when it was lost. */
export async function renewLease(knex: Knex, jobId: number, worker: string, leaseMs: number): Promise<boolean> {
	const updated = await knex(JOBS)
		.where({ id: jobId, lease_owner: worker, status: 'running' })
		.update({ lease_expires_at: Date.now() + leaseMs });
	return updated === 1;
}

/**
 * Hands a running job back: with `pollAt`, it is due again then (a batch waiting on the provider); without, it is
 * claimable at once (shutdown).
 */
export async function releaseJob(knex: Knex, jobId: number, worker: string, pollAt: number | null = null): Promise<void> {
	await knex(JOBS)
		.where({ id: jobId, lease_owner: worker, status: 'running' })
		.update({ lease_owner: null, lease_expires_at: null, next_poll_at: pollAt });
}

export async function readJob(knex: Knex, jobId: number): Promise<JobRecord | null> {
	const row = (await knex(JOBS).where('id', jobId).first()) as Record<string, unknown> | undefined;
	if (!row) return null;
	return {
		id: Number(row['id']),
		pseo_id: Number(row['pseo_id']),
		user_id: String(row['user_id']),
		mode: row['mode'] as JobRecord['mode'],
		status: row['status'] as JobRecord['status'],
		requested_count: Number(row['requested_count']),
		created_count: Number(row['created_count']),
		failed_count: Number(row['failed_count']),
		failed_routes: jsonFromDb<FailedRoute[]>(row['failed_routes'], []),
		routes: jsonFromDb<JobRoute[]>(row['routes'], []),
		token_rate: Number(row['token_rate']),
		main_json_id: row['main_json_id'] === null ? null : Number(row['main_json_id']),
		batch_id: (row['batch_id'] as string | null) ?? null,
		batch_input_file_id: (row['batch_input_file_id'] as string | null) ?? null,
		lease_owner: (row['lease_owner'] as string | null) ?? null,
		attempts: Number(row['attempts'] ?? 0),
	};
}

/** Routes of the job that already have a post or a recorded failure: they are done and never redone. */
export async function settledRoutes(knex: Knex, job: JobRecord): Promise<Set<string>> {
	const done = new Set(job.failed_routes.map((failure) => failure.route));
	const routes = job.routes.map((item) => item.route);
	for (let i = 0; i < routes.length; i += 500) {
		const rows = (await knex(POSTS)
			.where('pseo_id', job.pseo_id)
			.whereIn('route', routes.slice(i, i + 500))
			.select('route')) as { route: string }[];
		for (const row of rows) done.add(row.route);
	}
	return done;
}

export interface PageOutcome {
	route: string;
	content?: PageContent;
	error?: string;
	language?: string | null;
}

/**
 * Records a chunk of finished pages in one transaction: posts for the successes, `failed_routes` entries and
 * refunds for the failures, and the counters of the job and the website. A route that meanwhile got a post
 * (a retried chunk, a resumed job) is skipped, so nothing is stored or counted twice.
 */
export async function recordOutcomes(
	knex: Knex,
	job: JobRecord,
	worker: string,
	outcomes: PageOutcome[],
): Promise<{ created: number; failed: number }> {
	if (outcomes.length === 0) return { created: 0, failed: 0 };
	return knex.transaction(async (trx) => {
		let lockQuery = trx(JOBS).where({ id: job.id, lease_owner: worker, status: 'running' });
		if (vendorOf(trx) === 'postgres') lockQuery = lockQuery.forUpdate();
		const current = (await lockQuery.first('failed_routes')) as { failed_routes: unknown } | undefined;
		if (!current) throw new LeaseLostError(job.id);
		const failedRoutes = jsonFromDb<FailedRoute[]>(current.failed_routes, []);
		const routes = outcomes.map((outcome) => outcome.route);
		const existing = (await trx(POSTS).where('pseo_id', job.pseo_id).whereIn('route', routes).select('route')) as { route: string }[];

		// The first outcome for a route counts; later ones, and routes already posted or failed, are skipped.
		const taken = new Set([...failedRoutes.map((failure) => failure.route), ...existing.map((row) => row.route)]);
		const fresh: PageOutcome[] = [];
		for (const outcome of outcomes) {
			if (taken.has(outcome.route)) continue;
			taken.add(outcome.route);
			fresh.push(outcome);
		}

		const now = dbTimestamp(trx);
		const duplicates = await insertPosts(
			trx,
			fresh.filter((outcome) => outcome.content),
			(outcome) => postRow(job, outcome, now),
		);
		let created = 0;
		let failed = 0;
		for (const outcome of fresh) {
			if (outcome.content && !duplicates.has(outcome.route)) {
				created++;
				continue;
			}
			if (outcome.content) outcome.error = 'A post for this route already exists.';
			failedRoutes.push({ route: outcome.route, error: outcome.error ?? 'Generation failed.' });
			failed++;
			await refundTokens(trx, job.user_id, job.token_rate, {
				generationId: job.id,
				route: outcome.route,
				note: 'page failed',
				idempotencyKey: `refund:generation:${job.id}:${outcome.route}`,
			});
		}

		if (created > 0 || failed > 0) {
			await trx(JOBS)
				.where({ id: job.id })
				.update({
					created_count: trx.raw('created_count + ?', [created]),
					failed_count: trx.raw('failed_count + ?', [failed]),
					failed_routes: JSON.stringify(failedRoutes),
					date_updated: now,
				});
		}
		if (created > 0) {
			await trx('pseo').where('id', job.pseo_id).update({ post_counts_total: trx.raw('post_counts_total + ?', [created]) });
		}
		return { created, failed };
	});
}

/** Posts per INSERT statement: 15 columns a row stays under SQLite's historical limit of 999 bound values. */
const POSTS_PER_INSERT = 60;

/**
 * Inserts the posts with multi-row statements (one statement per row made ingesting a big batch slow). A statement
 * that hits the (pseo_id, route) key, because another writer stored one of its routes first, is undone and its
 * rows are inserted one by one. Returns the routes that already had a post.
 */
async function insertPosts(
	trx: Knex.Transaction,
	outcomes: PageOutcome[],
	toRow: (outcome: PageOutcome) => Record<string, unknown>,
): Promise<Set<string>> {
	const duplicates = new Set<string>();
	for (let i = 0; i < outcomes.length; i += POSTS_PER_INSERT) {
		const slice = outcomes.slice(i, i + POSTS_PER_INSERT);
		try {
			await insertAtomically(trx, slice.map(toRow));
			continue;
		} catch (error) {
			if (!isUniqueViolation(error)) throw error;
		}
		for (const outcome of slice) {
			try {
				await insertAtomically(trx, [toRow(outcome)]);
			} catch (error) {
				if (!isUniqueViolation(error)) throw error;
				duplicates.add(outcome.route);
			}
		}
	}
	return duplicates;
}

/**
 * One INSERT that applies whole or not at all and leaves the transaction usable. SQLite undoes just the failed
 * statement; PostgreSQL aborts the whole transaction on an error, so there it runs inside a savepoint.
 */
async function insertAtomically(trx: Knex.Transaction, rows: Record<string, unknown>[]): Promise<void> {
	if (vendorOf(trx) === 'sqlite') await trx(POSTS).insert(rows);
	else await trx.transaction((savepoint) => savepoint(POSTS).insert(rows));
}

function postRow(job: JobRecord, outcome: PageOutcome, now: Date | number) {
	const content = outcome.content!;
	return {
		pseo_id: job.pseo_id,
		generation_id: job.id,
		user_id: job.user_id,
		status: 'draft',
		route: outcome.route,
		language: outcome.language ?? null,
		title: content.title,
		meta_title: content.meta_title,
		meta_description: content.meta_description,
		h1: content.h1,
		body: content.body,
		faq: JSON.stringify(content.faq ?? []),
		internal_links: JSON.stringify(content.internal_links ?? []),
		date_created: now,
		date_updated: now,
	};
}

/**
 * Ends the job: `completed` when every requested page was created, else `failed` (operating contract section 4).
 * Clearing `active_pseo_id` frees the website for its next job in the same statement.
 */
export async function finishJob(knex: Knex, jobId: number, worker: string, error: string | null = null): Promise<JobRecord['status']> {
	const row = (await knex(JOBS).where({ id: jobId, lease_owner: worker }).first('created_count', 'requested_count')) as
		| { created_count: number; requested_count: number }
		| undefined;
	if (!row) throw new LeaseLostError(jobId);
	const status = Number(row.created_count) === Number(row.requested_count) ? 'completed' : 'failed';
	const now = dbTimestamp(knex);
	const updated = await knex(JOBS)
		.where({ id: jobId, lease_owner: worker, status: 'running' })
		.update({
			status,
			active_pseo_id: null,
			lease_owner: null,
			lease_expires_at: null,
			next_poll_at: null,
			error,
			date_completed: now,
			date_updated: now,
		});
	if (updated !== 1) throw new LeaseLostError(jobId);
	return status;
}

/** Stores the provider batch of a job, so that any worker can resume it by id. */
export async function saveBatch(knex: Knex, jobId: number, worker: string, batchId: string, inputFileId: string | null): Promise<void> {
	const updated = await knex(JOBS)
		.where({ id: jobId, lease_owner: worker, status: 'running' })
		.update({ batch_id: batchId, batch_input_file_id: inputFileId, date_updated: dbTimestamp(knex) });
	if (updated !== 1) throw new LeaseLostError(jobId);
}
