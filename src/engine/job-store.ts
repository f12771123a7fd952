import type { Knex } from 'knex';
import { lockPayer, refundTokens } from '../ledger/token-ledger.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { insertPosts, postIdsByRoute, postedRoutes, rewrittenBy, type NewPost, type PageContent } from '../posts/post-store.ts';
import type { PostReviser, RevisePost } from '../posts/post-revisions.ts';
import { dbTimestamp, insertedId, jsonFromDb, vendorOf } from '../shared/database.ts';
import { itemsChanged } from '../shared/item-events.ts';
import { countJobRoutes, failedAmong, insertJobRoutes, JOB_ROUTES, migrateJob, readJobRoutes, settleJobRoutes, type LegacyRouteReader } from './job-route-store.ts';
import type { Logger } from '../shared/logger.ts';
import { retryConflicts, transact } from '../shared/transaction.ts';
import { addPostCount } from '../websites/website-store.ts';
import { indexPages } from '../quality/similarity-index.ts';
import { markPosted } from '../plan/plan-page-store.ts';
import { kindOf, rewritesPosts, type FailedRoute, type JobHead, type JobKind, type JobMode, type JobRecord } from './job-types.ts';
import { storedStepError, type StoredStepError } from './step-failure.ts';
import { jobsFinished, pagesStored } from '../metrics/metrics.ts';

/*
 * The engine's writes to jobs, posts and counters. They use Knex directly because each is an atomic conditional
 * statement or a multi-table transaction (post + counters + refund) that the items services cannot express.
 * Every write is fenced by the lease: it only applies while `lease_owner` is this worker, so a worker that lost
 * its lease (paused, partitioned, presumed dead) can never write after another one took the job over.
 */

/** The owner of `pseo_generations`: every other module reaches jobs through this one. */
export const JOBS = 'pseo_generations';

/** A job as the trigger inserts it, `pending`. */
export interface NewJob {
	pseoId: number;
	userId: string;
	mode: JobMode;
	/** What started it (job-types.ts); a refresh rewrites the posts of its routes, as a regeneration rewrites its one post. */
	kind: JobKind;
	routes: readonly PlanPage[];
	rate: number;
	planId: number | null;
	/** A regeneration: the post its one route rewrites, and the owner's instructions. */
	regeneratePostId?: number | null;
	instructions?: string | null;
	/** The provider and model it runs with; null leaves them to the instance's default at each step. */
	provider?: JobProvider | null;
	/** A refresh: its published posts are published again once it ends (publishing/republish.ts). */
	republish?: boolean;
}

/** The provider and model a job runs with. */
export interface JobProvider {
	kind: string;
	model: string;
}

/**
 * Inserts a job `pending` with `active_pseo_id = pseo_id`, and its routes as rows (job-route-store.ts), inside the
 * caller's transaction (which also charges for it). The unique index on `active_pseo_id` admits one active job per
 * website across every instance: a concurrent twin fails here on that index.
 */
export async function insertJob(trx: Knex.Transaction, job: NewJob): Promise<number> {
	const now = dbTimestamp(trx);
	const rows = await trx(JOBS).insert(
		{
			pseo_id: job.pseoId,
			user_id: job.userId,
			mode: job.mode,
			kind: job.kind,
			status: 'pending',
			requested_count: job.routes.length,
			created_count: 0,
			failed_count: 0,
			// Both live in pseo_generation_routes now; the columns stay for jobs stored before (migrateJobRoutes).
			failed_routes: null,
			routes: null,
			token_rate: job.rate,
			main_json_id: job.planId,
			active_pseo_id: job.pseoId,
			attempts: 0,
			regenerate_post_id: job.regeneratePostId ?? null,
			instructions: job.instructions ?? null,
			provider: job.provider?.kind ?? null,
			model: job.provider?.model ?? null,
			republish_pending: job.republish ?? false,
			date_created: now,
			date_updated: now,
		},
		['id'],
	);
	const id = insertedId(rows);
	await insertJobRoutes(trx, id, job.routes);
	return id;
}

/** Announces a new job to Directus once the caller's transaction has committed (shared/item-events.ts). */
export function announceJob(jobId: number): void {
	itemsChanged(JOBS, [jobId]);
}

/** Whether the website has a job pending or running. */
export async function hasActiveJob(knex: Knex, pseoId: number): Promise<boolean> {
	return !!(await knex(JOBS).where('active_pseo_id', pseoId).first('id'));
}

/** Who a job belongs to, read raw (the caller's permissions may hide it); null when it does not exist. */
export async function readJobOwner(knex: Knex, jobId: number): Promise<{ userId: string | null; pseoId: number } | null> {
	const row = (await knex(JOBS).where('id', jobId).first('user_id', 'pseo_id')) as { user_id: string | null; pseo_id: number } | undefined;
	return row ? { userId: row.user_id ?? null, pseoId: Number(row.pseo_id) } : null;
}

/** The lease lost: another worker owns the job now, so this one must stop touching it. */
export class LeaseLostError extends Error {
	constructor(jobId: number) {
		super(`lease on generation ${jobId} was lost`);
		this.name = 'LeaseLostError';
	}
}

/** A job that may be claimed now; `takeover` when another worker held it and let its lease lapse. */
export interface ClaimableJob {
	id: number;
	takeover: boolean;
}

/** Jobs that may be claimed now: pending ones, and running ones whose lease lapsed and that are due. */
export async function findClaimable(knex: Knex, now: number, limit: number): Promise<ClaimableJob[]> {
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
		.select('id', 'status', 'lease_owner')) as { id: number; status: string; lease_owner: string | null }[];
	return rows.map((row) => ({ id: Number(row.id), takeover: row.status === 'running' && row.lease_owner !== null }));
}

/**
 * Claims a job with one conditional UPDATE: only one worker can move it from claimable to leased, whatever the
 * number of instances. Returns false when another worker got there first.
 */
export async function claimJob(knex: Knex, jobId: number, worker: string, leaseMs: number, logger: Logger): Promise<boolean> {
	const claimed = await retryConflicts(() => tryClaim(knex, jobId, worker, leaseMs), { logger, what: 'job claim', context: { jobId, worker } });
	if (claimed) itemsChanged(JOBS, [jobId]);
	return claimed;
}

async function tryClaim(knex: Knex, jobId: number, worker: string, leaseMs: number): Promise<boolean> {
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

/**
 * Marks a pending or running job cancelled and takes its lease for `owner` in one statement, whoever held it:
 * from then on the previous holder's writes are refused by the fence, and the cancel itself is stored, so that if
 * `owner` dies before it finishes, the next worker to claim the job finishes the cancel. False when the job has
 * already finished.
 */
export async function markCancelled(knex: Knex, jobId: number, owner: string, leaseMs: number): Promise<boolean> {
	const now = dbTimestamp(knex);
	const updated = await knex(JOBS)
		.where('id', jobId)
		.whereIn('status', ['pending', 'running'])
		.update({
			status: 'running',
			cancelled_at: now,
			lease_owner: owner,
			lease_expires_at: Date.now() + leaseMs,
			next_poll_at: null,
			date_updated: now,
		});
	if (updated === 1) itemsChanged(JOBS, [jobId]);
	return updated === 1;
}

/** Extends the lease; false when it was lost. */
export async function renewLease(knex: Knex, jobId: number, worker: string, leaseMs: number): Promise<boolean> {
	const updated = await leasedBy(knex, jobId, worker).update({ lease_expires_at: Date.now() + leaseMs });
	return updated === 1;
}

/** True while `worker` holds the running job's lease (a cancel takes the lease over). */
export async function holdsLease(knex: Knex, jobId: number, worker: string): Promise<boolean> {
	return (await leasedBy(knex, jobId, worker).first('id')) !== undefined;
}

/** The job's row while `worker` holds its lease (and it runs): what every fenced read and write of it filters on. */
function leasedBy(knex: Knex, jobId: number, worker: string) {
	return knex(JOBS).where({ id: jobId, lease_owner: worker, status: 'running' });
}

/**
 * Hands a running job back: with `pollAt`, it is due again then (a batch waiting on the provider); without, it is
 * claimable at once (shutdown). `stepWentWell` clears the job's trouble (step-failure.ts) in the same fenced write,
 * so that it never wipes a failure another worker recorded after this one let go.
 */
export async function releaseJob(knex: Knex, jobId: number, worker: string, pollAt: number | null = null, stepWentWell = false): Promise<void> {
	const trouble = stepWentWell ? { last_error: null, attention: false } : {};
	const updated = await leasedBy(knex, jobId, worker).update({ lease_owner: null, lease_expires_at: null, next_poll_at: pollAt, ...trouble });
	if (stepWentWell && updated === 1) itemsChanged(JOBS, [jobId]);
}

/**
 * Records a failed step on the job and hands it back, due again at `pollAt`: `attention` is set while its steps keep
 * failing. With `pollAt` null the job is kept (its holder fails it next), with `attention` off.
 */
export async function recordStepFailure(knex: Knex, jobId: number, worker: string, record: StoredStepError, pollAt: number | null): Promise<void> {
	const release = pollAt === null ? {} : { lease_owner: null, lease_expires_at: null, next_poll_at: pollAt };
	const updated = await leasedBy(knex, jobId, worker).update({
		last_error: JSON.stringify(record),
		attention: pollAt !== null,
		date_updated: dbTimestamp(knex),
		...release,
	});
	if (updated !== 1) throw new LeaseLostError(jobId);
	itemsChanged(JOBS, [jobId]);
}

/**
 * Hands a job back while it waits for its provider's capacity (capacity-wait.ts): the wait is on its record as
 * `last_error`, with `attention` off, since nothing is wrong; it is due again at `pollAt`. `waitingFor` keeps the job
 * in its provider's queue of bulk jobs, where jobs take turns for the batch capacity (batch-capacity.ts).
 */
export async function recordCapacityWait(knex: Knex, jobId: number, worker: string, record: StoredStepError, waitingFor: string | null, pollAt: number): Promise<void> {
	const updated = await leasedBy(knex, jobId, worker).update({
		last_error: JSON.stringify(record),
		attention: false,
		waiting_for: waitingFor,
		date_updated: dbTimestamp(knex),
		lease_owner: null,
		lease_expires_at: null,
		next_poll_at: pollAt,
	});
	if (updated !== 1) throw new LeaseLostError(jobId);
	itemsChanged(JOBS, [jobId]);
}

/** Puts a job in its provider's queue for batch capacity (`provider`), or takes it out (null), fenced by its lease. */
export async function setWaitingFor(knex: Knex, jobId: number, worker: string, provider: string | null): Promise<void> {
	const updated = await leasedBy(knex, jobId, worker).update({ waiting_for: provider });
	if (updated !== 1) throw new LeaseLostError(jobId);
}

/** Unfinished jobs in a provider's queue for batch capacity, oldest first. */
export async function jobsWaitingFor(knex: Knex, provider: string): Promise<number[]> {
	const rows = (await knex(JOBS).where('waiting_for', provider).whereIn('status', ['pending', 'running']).orderBy('id').select('id')) as { id: number }[];
	return rows.map((row) => Number(row.id));
}

/** Unfinished jobs waiting for batch capacity, by the provider they wait for. */
export async function waitingJobCounts(knex: Knex): Promise<Map<string, number>> {
	const rows = (await knex(JOBS).whereNotNull('waiting_for').whereIn('status', ['pending', 'running']).groupBy('waiting_for').select('waiting_for').count({ n: '*' })) as {
		waiting_for: string;
		n: number | string;
	}[];
	return new Map(rows.map((row) => [row.waiting_for, Number(row.n)]));
}

/** Makes the jobs in a provider's queue due now, when a part of that provider ended and freed some of its capacity. */
export async function wakeJobsWaitingFor(knex: Knex, provider: string, except: number): Promise<void> {
	await knex(JOBS).where('waiting_for', provider).andWhere('status', 'running').andWhereNot('id', except).whereNull('lease_owner').update({ next_poll_at: Date.now() });
}

/** Unfinished jobs whose steps keep failing (step-failure.ts), across every user: for the admins' health check. */
export async function countJobsNeedingAttention(knex: Knex): Promise<number> {
	const row = (await knex(JOBS).where('attention', true).whereIn('status', ['pending', 'running']).count({ n: '*' }).first()) as { n: number | string } | undefined;
	return Number(row?.n ?? 0);
}

/** A job with its routes and failed routes: for the runners that walk every route, and for retries. */
export async function readJob(knex: Knex, jobId: number): Promise<JobRecord | null> {
	const head = await readJobHead(knex, jobId);
	if (!head) return null;
	const { routes, failed } = await readJobRoutes(knex, head.id);
	return { ...head, routes, failed_routes: failed };
}

/** A job's record without its routes, with their number. */
export async function readJobHead(knex: Knex, jobId: number): Promise<JobHead | null> {
	const row = (await knex(JOBS).where('id', jobId).first()) as Record<string, unknown> | undefined;
	if (!row) return null;
	let routeCount = await countJobRoutes(knex, jobId);
	// A job stored with its routes as JSON after this instance started (by an instance of the previous version). The
	// rows are counted again whoever wrote them: another instance migrating the same job makes this one's attempt
	// return false, once that instance's rows are in.
	if (routeCount === 0 && row['routes'] !== null && row['routes'] !== undefined) {
		await migrateJob(knex, jobId, legacyJobRoutes);
		routeCount = await countJobRoutes(knex, jobId);
	}
	return {
		id: Number(row['id']),
		pseo_id: Number(row['pseo_id']),
		user_id: String(row['user_id']),
		mode: row['mode'] as JobRecord['mode'],
		kind: kindOf(row),
		status: row['status'] as JobRecord['status'],
		requested_count: Number(row['requested_count']),
		created_count: Number(row['created_count']),
		failed_count: Number(row['failed_count']),
		route_count: routeCount,
		token_rate: Number(row['token_rate']),
		main_json_id: row['main_json_id'] === null ? null : Number(row['main_json_id']),
		batch_id: (row['batch_id'] as string | null) ?? null,
		batch_input_file_id: (row['batch_input_file_id'] as string | null) ?? null,
		lease_owner: (row['lease_owner'] as string | null) ?? null,
		attempts: Number(row['attempts'] ?? 0),
		cancelled: row['cancelled_at'] !== null && row['cancelled_at'] !== undefined,
		regenerate_post_id: row['regenerate_post_id'] === null || row['regenerate_post_id'] === undefined ? null : Number(row['regenerate_post_id']),
		instructions: (row['instructions'] as string | null) ?? null,
		provider: (row['provider'] as string | null) ?? null,
		model: (row['model'] as string | null) ?? null,
		last_error: storedStepError(row['last_error']),
	};
}

/** Which of `routes` the job has settled: posted (see doneRoutes), or failed. */
export async function settledAmong(knex: Knex, job: JobHead, routes: readonly string[]): Promise<Set<string>> {
	const done = await doneRoutes(knex, job, routes);
	for (const route of await failedAmong(knex, job.id, routes)) done.add(route);
	return done;
}

/**
 * Routes of the job that already have their post: any post for a job of new pages; for a job that rewrites posts
 * (a regeneration, a refresh), only a post this very job rewrote (the posts it rewrites exist from the start).
 */
async function doneRoutes(knex: Knex, job: JobHead, routes: readonly string[]): Promise<Set<string>> {
	if (!rewritesPosts(job.kind)) return postedRoutes(knex, job.pseo_id, routes);
	const posts = await postsToRewrite(knex, job, routes);
	const rewritten = await rewrittenBy(knex, [...posts.values()], job.id);
	return new Set([...posts].filter(([, postId]) => rewritten.has(postId)).map(([route]) => route));
}

/**
 * The post each of these routes of a rewriting job rewrites: a regeneration's one post, or the website's post of the
 * route for a refresh. A route whose post was deleted meanwhile is absent: nothing is left to rewrite.
 */
async function postsToRewrite(knex: Knex, job: JobHead, routes: readonly string[]): Promise<Map<string, number>> {
	if (job.regenerate_post_id !== null) return new Map(routes.map((route) => [route, job.regenerate_post_id!]));
	return postIdsByRoute(knex, job.pseo_id, routes);
}

export interface PageOutcome {
	route: string;
	content?: PageContent;
	error?: string;
	language?: string | null;
	/** What producing this page cost at the provider, every attempt included. */
	usage?: PageUsage;
}

/** Tokens a page cost at the provider, and the answers they came in. */
export interface PageUsage {
	prompt_tokens: number;
	completion_tokens: number;
	requests: number;
}

/**
 * Records a chunk of finished pages in one transaction: posts for the successes, `failed_routes` entries and
 * refunds for the failures, and the counters of the job and the website. A route that meanwhile got a post
 * (a retried chunk, a resumed job) is skipped, so nothing is stored or counted twice. The payer's row is locked
 * first, as in every transaction that moves money (ledger/token-ledger.ts `lockPayer`).
 */
export async function recordOutcomes(
	knex: Knex,
	job: JobHead,
	worker: string,
	outcomes: PageOutcome[],
	logger: Logger,
	revise?: PostReviser,
): Promise<{ created: number; failed: number }> {
	if (outcomes.length === 0) return { created: 0, failed: 0 };
	// Made ready before the transaction: it reads Directus's schema (posts/post-revisions.ts).
	const revisePost = revise && rewritesPosts(job.kind) ? await revise() : undefined;
	const recorded = await transact(knex, (trx) => recordInTransaction(trx, job, worker, outcomes, revisePost), {
		logger,
		what: 'page results',
		context: { jobId: job.id, worker },
	});
	if (recorded.created > 0 || recorded.failed > 0) itemsChanged(JOBS, [job.id]);
	pagesStored.inc({ outcome: rewritesPosts(job.kind) ? 'regenerated' : 'created' }, recorded.created);
	pagesStored.inc({ outcome: 'failed' }, recorded.failed);
	return recorded;
}

async function recordInTransaction(
	trx: Knex.Transaction,
	job: JobHead,
	worker: string,
	outcomes: PageOutcome[],
	revise: RevisePost | undefined,
): Promise<{ created: number; failed: number }> {
	await lockPayer(trx, job.user_id);
	await lockLeasedJob(trx, job.id, worker);
	const routes = outcomes.map((outcome) => outcome.route);
	const existing = await doneRoutes(trx, job, routes);

	// The first outcome for a route counts; later ones, and routes already posted or failed, are skipped.
	const taken = new Set([...(await failedAmong(trx, job.id, routes)), ...existing]);
	const failedRoutes: FailedRoute[] = [];
	const fresh: PageOutcome[] = [];
	for (const outcome of outcomes) {
		if (taken.has(outcome.route)) continue;
		taken.add(outcome.route);
		fresh.push(outcome);
	}

	const now = dbTimestamp(trx);
	const rewriting = rewritesPosts(job.kind);
	// Routes whose page could not be stored: a post another writer stored first, or the post to rewrite deleted meanwhile.
	const duplicates = rewriting ? await rewritePosts(trx, job, fresh, revise) : await insertPosts(trx, newPosts(job, fresh), now);
	let created = 0;
	let failed = 0;
	for (const outcome of fresh) {
		if (outcome.content && !duplicates.has(outcome.route)) {
			created++;
			continue;
		}
		if (outcome.content) outcome.error = rewriting ? 'The post of this route no longer exists.' : 'A post for this route already exists.';
		failedRoutes.push({ route: outcome.route, error: outcome.error ?? 'Generation failed.' });
		failed++;
		await refundTokens(trx, job.user_id, job.token_rate, {
			pseoId: job.pseo_id,
			generationId: job.id,
			route: outcome.route,
			note: 'page failed',
			idempotencyKey: `refund:generation:${job.id}:${outcome.route}`,
		});
	}

	await settleJobRoutes(
		trx,
		job.id,
		fresh.filter((outcome) => outcome.content && !duplicates.has(outcome.route)).map((outcome) => outcome.route),
		failedRoutes,
	);
	if (created > 0 || failed > 0) {
		// Usage counts once per page, with the outcome that is stored: a retried chunk adds nothing.
		const usage = sumUsage(fresh);
		await trx(JOBS)
			.where({ id: job.id })
			.update({
				created_count: trx.raw('created_count + ?', [created]),
				failed_count: trx.raw('failed_count + ?', [failed]),
				...usageIncrement(trx, usage),
				date_updated: now,
			});
	}
	// A regeneration or a refresh rewrites posts the website already counts.
	if (created > 0 && !rewriting) {
		await addPostCount(trx, job.pseo_id, created);
		await markPosted(
			trx,
			job.pseo_id,
			fresh.filter((outcome) => outcome.content && !duplicates.has(outcome.route)).map((outcome) => outcome.route),
		);
	}
	// The near-duplicate index learns the stored pages in the same transaction, so it never names a page that is not stored.
	const stored = fresh.filter((outcome) => outcome.content?.quality && !duplicates.has(outcome.route));
	await indexPages(
		trx,
		job.pseo_id,
		stored.map((outcome) => ({ route: outcome.route, signature: outcome.content?.quality?.signature ?? null })),
	);
	return { created, failed };
}

/**
 * A rewriting job's pages replace their posts, each keeping its previous version as a revision (posts/post-revisions.ts);
 * returns the routes whose post no longer exists, which fail like a duplicate does for new pages.
 */
async function rewritePosts(trx: Knex.Transaction, job: JobHead, outcomes: readonly PageOutcome[], revise: RevisePost | undefined): Promise<Set<string>> {
	const written = outcomes.filter((outcome) => outcome.content);
	if (written.length === 0) return new Set();
	if (!revise) throw new Error(`Generation ${job.id} rewrites posts, and this worker cannot record post revisions.`);
	const posts = await postsToRewrite(
		trx,
		job,
		written.map((outcome) => outcome.route),
	);
	const gone = new Set<string>();
	for (const outcome of written) {
		const postId = posts.get(outcome.route);
		if (postId === undefined) gone.add(outcome.route);
		else await revise(trx, { postId, userId: job.user_id, generationId: job.id }, outcome.content!);
	}
	return gone;
}

function newPosts(job: JobHead, outcomes: readonly PageOutcome[]): NewPost[] {
	return outcomes.flatMap((outcome) =>
		outcome.content
			? [{ pseo_id: job.pseo_id, generation_id: job.id, user_id: job.user_id, route: outcome.route, language: outcome.language ?? null, content: outcome.content }]
			: [],
	);
}

/** The update that adds `usage` to a job's usage columns. */
export function usageIncrement(trx: Knex, usage: PageUsage): Record<string, Knex.Raw> {
	return {
		usage_prompt_tokens: trx.raw('coalesce(usage_prompt_tokens, 0) + ?', [usage.prompt_tokens]),
		usage_completion_tokens: trx.raw('coalesce(usage_completion_tokens, 0) + ?', [usage.completion_tokens]),
		usage_requests: trx.raw('coalesce(usage_requests, 0) + ?', [usage.requests]),
	};
}

function sumUsage(outcomes: readonly PageOutcome[]): PageUsage {
	const total: PageUsage = { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
	for (const { usage } of outcomes) {
		if (!usage) continue;
		total.prompt_tokens += usage.prompt_tokens;
		total.completion_tokens += usage.completion_tokens;
		total.requests += usage.requests;
	}
	return total;
}

/**
 * Ends the job: `completed` when every requested page was created, else `failed` (operating contract section 4).
 * Clearing `active_pseo_id` frees the website for its next job in the same statement. `last_error` is cleared too,
 * unless `keepLastError`: the failure, or the cancel, that ended a job in trouble leaves its last error readable.
 */
export async function finishJob(
	knex: Knex,
	jobId: number,
	worker: string,
	error: string | null = null,
	{ keepLastError = false }: { keepLastError?: boolean } = {},
): Promise<JobRecord['status']> {
	const row = (await knex(JOBS).where({ id: jobId, lease_owner: worker }).first('created_count', 'requested_count', 'mode')) as
		| { created_count: number; requested_count: number; mode: string }
		| undefined;
	if (!row) throw new LeaseLostError(jobId);
	const status = Number(row.created_count) === Number(row.requested_count) ? 'completed' : 'failed';
	const now = dbTimestamp(knex);
	const updated = await leasedBy(knex, jobId, worker)
		.update({
			status,
			active_pseo_id: null,
			lease_owner: null,
			lease_expires_at: null,
			next_poll_at: null,
			error,
			// An ended job needs nobody's attention; the trouble that ended it (or that a cancel cut short) stays readable.
			attention: false,
			...(keepLastError ? {} : { last_error: null }),
			// An ended job waits for no provider capacity: other jobs no longer take turns with it.
			waiting_for: null,
			date_completed: now,
			date_updated: now,
		});
	if (updated !== 1) throw new LeaseLostError(jobId);
	itemsChanged(JOBS, [jobId]);
	jobsFinished.inc({ mode: row.mode, status });
	return status;
}

/**
 * Locks the job's row inside a transaction while `worker` holds its lease: the fence of every multi-table write
 * (the parts of a bulk job). Throws {@link LeaseLostError} when another worker owns the job now.
 */
export async function lockLeasedJob(trx: Knex.Transaction, jobId: number, worker: string): Promise<void> {
	let query = leasedBy(trx, jobId, worker);
	if (vendorOf(trx) !== 'sqlite') query = query.forUpdate();
	if (!(await query.first('id'))) throw new LeaseLostError(jobId);
}

/** The job's first provider batch, on the job itself (part-store.ts `savePart` calls it, fenced). */
export async function setJobBatch(trx: Knex.Transaction, jobId: number, batchId: string, inputFileId: string | null): Promise<void> {
	await trx(JOBS).where('id', jobId).update({ batch_id: batchId, batch_input_file_id: inputFileId, date_updated: dbTimestamp(trx) });
}

/** A finished job whose rewritten posts are to be published again (a refresh's republish), and its website and owner. */
export interface OwedRepublish {
	jobId: number;
	pseoId: number;
	userId: string;
}

/** Finished jobs owing a republish, oldest first. */
export async function jobsOwingRepublish(knex: Knex, limit: number): Promise<OwedRepublish[]> {
	const rows = (await knex(JOBS)
		.where('republish_pending', true)
		.whereIn('status', ['completed', 'failed'])
		.orderBy('id')
		.limit(limit)
		.select('id', 'pseo_id', 'user_id')) as { id: number; pseo_id: number; user_id: string }[];
	return rows.map((row) => ({ jobId: Number(row.id), pseoId: Number(row.pseo_id), userId: String(row.user_id) }));
}

/**
 * Clears a job's owed republish, in the transaction that creates its publication (or finds nothing to publish);
 * false when another worker cleared it first, whose transaction then has the publication.
 */
export async function settleRepublish(trx: Knex.Transaction, jobId: number): Promise<boolean> {
	return (await trx(JOBS).where({ id: jobId, republish_pending: true }).update({ republish_pending: false })) === 1;
}

/** Jobs stored with their routes as JSON arrays, for the start-up migration to rows (job-route-store.ts). */
export const legacyJobRoutes: LegacyRouteReader = {
	async jobsWithoutRows(knex) {
		const rows = (await knex(JOBS)
			.whereNotNull('routes')
			.whereNotExists((q) => q.select(knex.raw('1')).from(JOB_ROUTES).whereRaw('?? = ??', [`${JOB_ROUTES}.generation_id`, `${JOBS}.id`]))
			.orderBy('id')
			.select('id')) as { id: number }[];
		return rows.map((row) => Number(row.id));
	},
	async routesOf(knex, jobId) {
		const row = (await knex(JOBS).where('id', jobId).first('pseo_id', 'routes', 'failed_routes')) as Record<string, unknown> | undefined;
		const routes = jsonFromDb<PlanPage[]>(row?.['routes'], []);
		if (!row || routes.length === 0) return null;
		const failed = jsonFromDb<FailedRoute[]>(row['failed_routes'], []);
		const failedSet = new Set(failed.map((failure) => failure.route));
		const posted = await postedRoutes(knex, Number(row['pseo_id']), routes.map((page) => page.route));
		return { routes, failed, posted: [...posted].filter((route) => !failedSet.has(route)) };
	},
};
