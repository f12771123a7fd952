import type { Knex } from 'knex';
import type { JobHead } from './job-types.ts';
import { jobsWaitingFor, waitingJobCounts } from './job-store.ts';
import { enqueuedByProvider, enqueuedTokens, partsTaken } from './part-store.ts';

/*
 * The batch queue of each provider, shared by the cluster. A provider lets an account hold only so many input tokens
 * in running batches (OpenAI: 2,000,000 for a small model on a first tier; Google per model; Anthropic by requests),
 * and a part beyond it fails (OpenAI: `token_limit_exceeded` at validation) or its create is refused (429). So parts
 * are submitted as the queue has room, not all at once:
 * - what is enqueued is the sum of the estimated tokens of the running parts of that provider (each request's as the
 *   pacer estimates it: pacing/input-tokens.ts), read from the database, so every instance counts every instance's
 *   parts;
 * - the limit is PSEO_BATCH_MAX_ENQUEUED_TOKENS for the provider, else the one learnt from its last refusal (kept an
 *   hour, so that a raised limit is found again), else there is none and parts go as they come, as they always did;
 * - one instance at a time submits against a limited queue (a lease on the provider's row), so two instances never
 *   both fill the same room;
 * - bulk jobs waiting for the queue take turns: the job that has had the fewest parts taken goes first, the oldest on
 *   a tie, so a small job gets its part in between the parts of a huge one, and two huge ones alternate.
 */

/** The owner of `pseo_batch_capacity`: one row per provider. */
const CAPACITY = 'pseo_batch_capacity';

/** A learnt limit is forgotten after this: the provider may have raised it (a tier upgrade). */
const LEARNT_FOR_MS = 3_600_000;

/**
 * How long one instance may hold a provider's submissions. A submission uploads its part first, which takes
 * minutes for the largest parts; a holder that died lets the others in after this.
 */
const SUBMIT_HOLD_MS = 10 * 60_000;

/** The provider whose batch queue a job's parts count in: the one it was accepted with (OpenAI for jobs from before jobs named it). */
export function capacityKeyOf(job: Pick<JobHead, 'provider'>): string {
	return job.provider ?? 'openai';
}

/** Why a job's next part waits. */
export type CapacityWait =
	| { reason: 'full' | 'refused'; enqueued: number; limit: number }
	| { reason: 'turn'; ahead: number; enqueued: number; limit: number }
	| { reason: 'busy'; limit: number };

export interface CapacityRequest {
	/** The provider whose queue the part goes to. */
	key: string;
	jobId: number;
	worker: string;
	/** PSEO_BATCH_MAX_ENQUEUED_TOKENS for that provider, if set. */
	configured: number | null;
	/**
	 * The least room worth a part: about one line of the job. Less room beside other running parts counts as full,
	 * without building a part that could not take a line (a step that finds the queue full costs a poll, not a walk
	 * of the job's routes and a lookup at the provider).
	 */
	minimum?: number;
}

/**
 * Runs `submit` when the job may send a part now, with the tokens the part may hold (`budget`, null when the
 * provider's queue has no known limit); otherwise says why the part waits. While `submit` runs, no other instance
 * submits to that provider's limited queue.
 */
export async function withBatchCapacity<T>(
	knex: Knex,
	request: CapacityRequest,
	submit: (budget: number | null, enqueued: number) => Promise<T>,
): Promise<{ ran: true; value: T } | { ran: false; wait: CapacityWait }> {
	const limit = limitInForce(request.configured, await learntLimit(knex, request.key));
	if (limit === null) return { ran: true, value: await submit(null, 0) };
	if (!(await takeSubmissions(knex, request.key, request.worker))) return { ran: false, wait: { reason: 'busy', limit } };
	try {
		const ahead = await jobsAhead(knex, request.key, request.jobId);
		const enqueued = await enqueuedTokens(knex, request.key);
		if (ahead > 0) return { ran: false, wait: { reason: 'turn', ahead, enqueued, limit } };
		if (enqueued >= limit || (enqueued > 0 && limit - enqueued < (request.minimum ?? 0))) return { ran: false, wait: { reason: 'full', enqueued, limit } };
		return { ran: true, value: await submit(limit - enqueued, enqueued) };
	} finally {
		await knex(CAPACITY).where({ provider: request.key, submit_owner: request.worker }).update({ submit_owner: null, submit_until: null });
	}
}

/**
 * Learns a provider's queue limit from a refusal: what was enqueued when the provider refused a part is what it
 * accepts; when nothing else was enqueued, the part alone was too big, and half of it is tried (so it is split). A
 * smaller limit learnt within the hour stands. Resolves to the limit now in force.
 */
export async function learnLimit(knex: Knex, key: string, enqueuedBesides: number, refusedTokens: number | null): Promise<number> {
	const tokens = Math.max(1, enqueuedBesides > 0 ? enqueuedBesides : Math.floor((refusedTokens ?? 2) / 2));
	await ensureRow(knex, key);
	const now = Date.now();
	await knex(CAPACITY)
		.where('provider', key)
		.andWhere((q) => q.whereNull('learnt_tokens').orWhere('learnt_tokens', '>', tokens).orWhere('learnt_at', '<', now - LEARNT_FOR_MS))
		.update({ learnt_tokens: tokens, learnt_at: now });
	return (await learntLimit(knex, key)) ?? tokens;
}

/** The limit learnt from the provider's latest refusal, while it is fresh; null when none is known. */
async function learntLimit(knex: Knex, key: string): Promise<number | null> {
	return (await learntLimits(knex, key)).get(key) ?? null;
}

/** The fresh learnt limits, by provider: of one provider, or of all of them in one read. */
async function learntLimits(knex: Knex, key?: string): Promise<Map<string, number>> {
	let query = knex(CAPACITY).whereNotNull('learnt_tokens').andWhere('learnt_at', '>=', Date.now() - LEARNT_FOR_MS);
	if (key !== undefined) query = query.andWhere('provider', key);
	const rows = (await query.select('provider', 'learnt_tokens')) as { provider: string; learnt_tokens: number | string }[];
	return new Map(rows.map((row) => [row.provider, Number(row.learnt_tokens)]));
}

/** The limit a queue keeps to: the configured one, the learnt one, or the smaller of the two when both are known. */
function limitInForce(configured: number | null, learnt: number | null): number | null {
	return configured === null ? learnt : learnt === null ? configured : Math.min(configured, learnt);
}

async function ensureRow(knex: Knex, key: string): Promise<void> {
	await knex(CAPACITY).insert({ provider: key }).onConflict('provider').ignore();
}

/** Takes the provider's submissions for this worker, with one conditional UPDATE; false when another worker holds them. */
async function takeSubmissions(knex: Knex, key: string, worker: string): Promise<boolean> {
	await ensureRow(knex, key);
	const now = Date.now();
	const updated = await knex(CAPACITY)
		.where('provider', key)
		.andWhere((q) => q.whereNull('submit_owner').orWhere('submit_until', '<', now).orWhere('submit_owner', worker))
		.update({ submit_owner: worker, submit_until: now + SUBMIT_HOLD_MS });
	return updated === 1;
}

/** How many jobs of the provider's queue go before this one: fewer parts taken first, then the oldest. */
async function jobsAhead(knex: Knex, key: string, jobId: number): Promise<number> {
	const queue = await jobsWaitingFor(knex, key);
	if (queue.length === 0 || (queue.length === 1 && queue[0] === jobId)) return 0;
	const ids = queue.includes(jobId) ? queue : [...queue, jobId];
	const taken = await partsTaken(knex, ids);
	const order = [...ids].sort((a, b) => (taken.get(a) ?? 0) - (taken.get(b) ?? 0) || a - b);
	return order.indexOf(jobId);
}

/** A provider's batch queue as the cluster sees it: its limit and where it comes from, what is enqueued, who waits. */
export interface BatchQueueFigures {
	limit_tokens: number | null;
	/** `configured`: PSEO_BATCH_MAX_ENQUEUED_TOKENS; `learnt`: from the provider's latest refusal; null: none known. */
	limit_source: 'configured' | 'learnt' | null;
	enqueued_tokens: number;
	/** Bulk jobs whose next part waits for room in this queue. */
	jobs_waiting: number;
}

/** Every provider's batch queue, by provider; `configured` is PSEO_BATCH_MAX_ENQUEUED_TOKENS. */
export async function batchQueues(knex: Knex, configured: Partial<Record<string, number>>, providers: readonly string[]): Promise<Map<string, BatchQueueFigures>> {
	const [enqueued, waiting, learnt] = await Promise.all([enqueuedByProvider(knex), waitingJobCounts(knex), learntLimits(knex)]);
	const out = new Map<string, BatchQueueFigures>();
	for (const provider of new Set([...providers, ...enqueued.keys(), ...waiting.keys()])) {
		const set = configured[provider] ?? null;
		const limit = limitInForce(set, learnt.get(provider) ?? null);
		out.set(provider, {
			limit_tokens: limit,
			limit_source: limit === null ? null : limit === set ? 'configured' : 'learnt',
			enqueued_tokens: enqueued.get(provider) ?? 0,
			jobs_waiting: waiting.get(provider) ?? 0,
		});
	}
	return out;
}
