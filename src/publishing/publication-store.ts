import type { Knex } from 'knex';
import { dbTimestamp, insertedId, jsonFromDb } from '../shared/database.ts';
import type { Logger } from '../shared/logger.ts';
import { itemsChanged } from '../shared/item-events.ts';
import { afterCommit, retryConflicts } from '../shared/transaction.ts';
import { publicationDeliveries } from '../metrics/metrics.ts';
import { storedStepError, TROUBLE_FIELDS, type StoredStepError } from '../engine/step-failure.ts';

/*
 * The owner of `pseo_publications`: durable publishing jobs, claimed and leased like generations so that one
 * worker across all instances runs each, and resumed where they stopped after a crash. Progress is a cursor over
 * the frozen list of post ids; each post's outcome and the cursor move in one transaction with the post's own
 * publishing state, fenced by the lease, so a count can neither be lost nor counted twice. `active_pseo_id`
 * (unique) admits one active publication per website: two at once could both create the same post.
 */

export const PUBLICATIONS = 'pseo_publications';

type PublicationStatus = 'pending' | 'running' | 'completed' | 'failed';
/** `publish`, then `links` (WordPress); a takedown of retired pages has the one phase `takedown`. */
type PublicationPhase = 'publish' | 'links' | 'takedown';
export type PostOutcome = 'created' | 'updated' | 'unchanged' | 'failed';

interface FailedPost {
	post_id: number;
	route: string;
	error: string;
}

export interface Schedule {
	/** ISO 8601, UTC. */
	start: string;
	per_day: number;
}

export interface PublicationRecord {
	id: number;
	pseoId: number;
	userId: string | null;
	status: PublicationStatus;
	target: string;
	publishStatus: string | null;
	schedule: Schedule | null;
	postIds: number[];
	cursor: number;
	phase: PublicationPhase;
	failedPosts: FailedPost[];
	/** What the publication tells its owner, each once (structured data it had to leave out). */
	notices: string[];
	/** The failures of its latest steps in a row (engine/step-failure.ts); null when its last step went well. */
	lastError: StoredStepError | null;
}

export interface NewPublication {
	pseoId: number;
	userId: string;
	target: string;
	publishStatus: string | null;
	schedule: Schedule | null;
	postIds: readonly number[];
	/**
	 * `takedown`: the posts are taken down (retired pages), not published. A takedown is queued by a sync, whatever
	 * else the website runs, so it holds no `active_pseo_id` (a publication skips retired posts).
	 */
	phase?: 'publish' | 'takedown';
}

/** The lease lost: another worker runs the publication now. */
export class PublicationLeaseLostError extends Error {
	constructor(id: number) {
		super(`lease on publication ${id} was lost`);
		this.name = 'PublicationLeaseLostError';
	}
}

export async function insertPublication(knex: Knex, publication: NewPublication): Promise<number> {
	const takedown = publication.phase === 'takedown';
	const now = dbTimestamp(knex);
	const rows = await knex(PUBLICATIONS).insert(
		{
			pseo_id: publication.pseoId,
			user_id: publication.userId,
			status: 'pending',
			target: publication.target,
			publish_status: publication.publishStatus,
			schedule: publication.schedule ? JSON.stringify(publication.schedule) : null,
			post_ids: JSON.stringify(publication.postIds),
			next_index: 0,
			phase: takedown ? 'takedown' : 'publish',
			requested_count: publication.postIds.length,
			created_count: 0,
			updated_count: 0,
			unchanged_count: 0,
			failed_count: 0,
			failed_posts: JSON.stringify([]),
			active_pseo_id: takedown ? null : publication.pseoId,
			attempts: 0,
			date_created: now,
			date_updated: now,
		},
		['id'],
	);
	const id = insertedId(rows);
	afterCommit(knex, () => itemsChanged(PUBLICATIONS, [id]));
	return id;
}

export async function hasActivePublication(knex: Knex, pseoId: number): Promise<boolean> {
	return !!(await knex(PUBLICATIONS).where('active_pseo_id', pseoId).first('id'));
}

/** Who a publication belongs to, read raw; null when it does not exist. */
export async function readPublicationOwner(knex: Knex, id: number): Promise<{ userId: string | null; pseoId: number } | null> {
	const row = (await knex(PUBLICATIONS).where('id', id).first('user_id', 'pseo_id')) as { user_id: string | null; pseo_id: number } | undefined;
	return row ? { userId: row.user_id ?? null, pseoId: Number(row.pseo_id) } : null;
}

export async function readPublication(knex: Knex, id: number): Promise<PublicationRecord | null> {
	const row = (await knex(PUBLICATIONS).where('id', id).first()) as Record<string, unknown> | undefined;
	if (!row) return null;
	return {
		id: Number(row['id']),
		pseoId: Number(row['pseo_id']),
		userId: (row['user_id'] as string | null) ?? null,
		status: row['status'] as PublicationStatus,
		target: String(row['target']),
		publishStatus: (row['publish_status'] as string | null) ?? null,
		schedule: jsonFromDb<Schedule | null>(row['schedule'], null),
		postIds: jsonFromDb<number[]>(row['post_ids'], []).map(Number),
		cursor: Number(row['next_index']),
		phase: (row['phase'] as PublicationPhase) ?? 'publish',
		failedPosts: jsonFromDb<FailedPost[]>(row['failed_posts'], []),
		notices: jsonFromDb<string[]>(row['notices'], []),
		lastError: storedStepError(row['last_error']),
	};
}

/** Publications that may be claimed now: pending ones, and running ones whose lease lapsed. */
export async function findClaimablePublications(knex: Knex, now: number, limit: number): Promise<number[]> {
	const rows = (await knex(PUBLICATIONS)
		.where('status', 'pending')
		.orWhere((q) => q.where('status', 'running').andWhere((l) => l.whereNull('lease_expires_at').orWhere('lease_expires_at', '<', now)))
		.orderBy('id')
		.limit(limit)
		.select('id')) as { id: number }[];
	return rows.map((row) => Number(row.id));
}

/** One conditional UPDATE: only one worker moves a publication from claimable to leased. */
export async function claimPublication(knex: Knex, id: number, worker: string, leaseMs: number, logger: Logger): Promise<boolean> {
	const claimed = await retryConflicts(
		async () => {
			const now = Date.now();
			const updated = await knex(PUBLICATIONS)
				.where('id', id)
				.andWhere((q) =>
					q.where('status', 'pending').orWhere((r) => r.where('status', 'running').andWhere((l) => l.whereNull('lease_expires_at').orWhere('lease_expires_at', '<', now))),
				)
				.update({ status: 'running', lease_owner: worker, lease_expires_at: now + leaseMs, attempts: knex.raw('attempts + 1'), date_updated: dbTimestamp(knex) });
			return updated === 1;
		},
		{ logger, what: 'publication claim', context: { publicationId: id, worker } },
	);
	if (claimed) itemsChanged(PUBLICATIONS, [id]);
	return claimed;
}

export async function renewPublicationLease(knex: Knex, id: number, worker: string, leaseMs: number): Promise<boolean> {
	const updated = await knex(PUBLICATIONS).where({ id, lease_owner: worker, status: 'running' }).update({ lease_expires_at: Date.now() + leaseMs });
	return updated === 1;
}

/** Hands a publication back (shutdown, a transient fault) so that any worker resumes it at once. */
export async function releasePublication(knex: Knex, id: number, worker: string): Promise<void> {
	await knex(PUBLICATIONS).where({ id, lease_owner: worker, status: 'running' }).update({ lease_owner: null, lease_expires_at: null });
}

/**
 * Records a failed step on the publication, with `attention` on, and hands it back to be resumed at `retryAt` (epoch
 * ms): a running publication without an owner whose lease lapses then, so that no sweep claims it before (a target
 * that is down is not called at every sweep).
 */
export async function recordPublicationFailure(knex: Knex, id: number, worker: string, record: StoredStepError, retryAt: number): Promise<void> {
	const updated = await knex(PUBLICATIONS)
		.where({ id, lease_owner: worker, status: 'running' })
		.update({ last_error: JSON.stringify(record), attention: true, lease_owner: null, lease_expires_at: retryAt, date_updated: dbTimestamp(knex) });
	if (updated === 1) itemsChanged(PUBLICATIONS, [id]);
}

/** What one post's outcome adds to the publication, written in the caller's transaction. */
export interface PostStep {
	/** The cursor before this post; the write applies only if it is still there (and the lease is held). */
	cursor: number;
	outcome: PostOutcome | null;
	failed?: FailedPost;
}

const COUNTER: Record<PostOutcome, string> = { created: 'created_count', updated: 'updated_count', unchanged: 'unchanged_count', failed: 'failed_count' };

/** Moves the cursor past one post and counts its outcome; PublicationLeaseLostError when this worker no longer holds it. */
export async function recordPostStep(trx: Knex.Transaction, publication: PublicationRecord, worker: string, step: PostStep): Promise<void> {
	const changes: Record<string, unknown> = { next_index: step.cursor + 1, date_updated: dbTimestamp(trx) };
	// A step that went well ends the streak of failed ones: the next failure waits the shortest delay again.
	if (publication.lastError) Object.assign(changes, { last_error: null, attention: false });
	if (step.outcome) changes[COUNTER[step.outcome]] = trx.raw('?? + 1', [COUNTER[step.outcome]]);
	if (step.failed) {
		publication.failedPosts = [...publication.failedPosts, step.failed];
		changes['failed_posts'] = JSON.stringify(publication.failedPosts);
	}
	const updated = await trx(PUBLICATIONS)
		.where({ id: publication.id, lease_owner: worker, status: 'running', next_index: step.cursor, phase: publication.phase })
		.update(changes);
	if (updated !== 1) throw new PublicationLeaseLostError(publication.id);
	publication.lastError = null;
	const { outcome } = step;
	if (outcome) afterCommit(trx, () => publicationDeliveries.inc({ target: publication.target, outcome }));
	publication.cursor = step.cursor + 1;
}

/** Tells the publication's owner `notice`, once: a notice it holds already is not added again. */
export async function addNotice(knex: Knex, publication: PublicationRecord, worker: string, notice: string): Promise<void> {
	if (publication.notices.includes(notice)) return;
	const notices = [...publication.notices, notice];
	const updated = await knex(PUBLICATIONS)
		.where({ id: publication.id, lease_owner: worker, status: 'running' })
		.update({ notices: JSON.stringify(notices), date_updated: dbTimestamp(knex) });
	if (updated !== 1) throw new PublicationLeaseLostError(publication.id);
	publication.notices = notices;
	itemsChanged(PUBLICATIONS, [publication.id]);
}

/** Announces a publication's progress to Directus once its step's transaction has committed (shared/item-events.ts). */
export function publicationProgressed(id: number): void {
	itemsChanged(PUBLICATIONS, [id]);
}

/** Starts the links phase from the first post. */
export async function enterLinksPhase(knex: Knex, publication: PublicationRecord, worker: string): Promise<void> {
	const updated = await knex(PUBLICATIONS)
		.where({ id: publication.id, lease_owner: worker, status: 'running', phase: 'publish' })
		.update({ phase: 'links', next_index: 0, date_updated: dbTimestamp(knex) });
	if (updated !== 1) throw new PublicationLeaseLostError(publication.id);
	publication.phase = 'links';
	publication.cursor = 0;
}

/**
 * Ends the publication: completed, or failed with a reason; the website may take another one. An ended publication
 * needs nobody's attention; one that completed is well, so its last error goes too.
 */
export async function finishPublication(knex: Knex, id: number, worker: string, status: 'completed' | 'failed', error: string | null): Promise<void> {
	const now = dbTimestamp(knex);
	const trouble = status === 'completed' ? { attention: false, last_error: null } : { attention: false };
	const updated = await knex(PUBLICATIONS)
		.where({ id, lease_owner: worker, status: 'running' })
		.update({ status, error, active_pseo_id: null, lease_owner: null, lease_expires_at: null, date_completed: now, date_updated: now, ...trouble });
	if (updated !== 1) throw new PublicationLeaseLostError(id);
	itemsChanged(PUBLICATIONS, [id]);
}

/** The fields of the interface's publication record. */
export const PUBLICATIONS_VIEW_FIELDS = [
	'id',
	'pseo_id',
	'status',
	'target',
	'requested_count',
	'created_count',
	'updated_count',
	'unchanged_count',
	'failed_count',
	'failed_posts',
	'notices',
	'date_created',
	'date_completed',
	...TROUBLE_FIELDS,
];


/**
 * The WordPress status the website's newest publication of posts (not a takedown) gave them: what a republish of
 * refreshed posts keeps, so that a live post stays live and a draft stays a draft. A scheduled publication's posts
 * are `publish`: their dates have come, or WordPress publishes them when they do. Null when it set none: the
 * target's default then, as it was for that publication.
 */
export async function lastPublishStatus(knex: Knex, pseoId: number): Promise<string | null> {
	const row = (await knex(PUBLICATIONS).where('pseo_id', pseoId).whereNot('phase', 'takedown').orderBy('id', 'desc').first('publish_status', 'schedule')) as
		| { publish_status: string | null; schedule: unknown }
		| undefined;
	if (!row) return null;
	if (row.schedule !== null && row.schedule !== undefined) return 'publish';
	return row.publish_status ?? null;
}
