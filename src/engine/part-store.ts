import type { Knex } from 'knex';
import { dbTimestamp } from '../shared/database.ts';
import { assignPart, releasePart } from './job-route-store.ts';
import { lockLeasedJob, setJobBatch } from './job-store.ts';

/** The owner of `pseo_generation_parts`: the provider batches of bulk jobs, one row per part. */
export const PARTS = 'pseo_generation_parts';

/** Metadata key that names the part a provider batch runs, `<job id>:<part>`: the adopt lookup of one part. */
export const BATCH_PART_KEY = 'pseo_generation_part';

/**
 * - `running`: the batch is at the provider;
 * - `ingested`: its results are stored (or its lines failed and were refunded), or, for a job that ended while it
 *   ran, its batch has stopped and what it billed is in the job's usage (stray-batches.ts);
 * - `expired`: the provider let it expire with lines unanswered, which one resubmission sends again;
 * - `refused`: the provider's batch queue was full (OpenAI failed it with `token_limit_exceeded`): nothing ran, its
 *   routes went back to the job, and later parts send them when there is room.
 */
export type PartStatus = 'running' | 'ingested' | 'expired' | 'refused';

/** A part of a bulk job: the job's routes `[route_start, route_end)` and the provider batch that runs them. */
export interface JobPart {
	part: number;
	route_start: number;
	route_end: number;
	batch_id: string;
	input_file_id: string | null;
	/** The expired part this one sends again; null for a first submission. */
	resubmit_of: number | null;
	status: PartStatus;
	/** Its input tokens as estimated when it was built (batch-capacity.ts); null for a part stored before they were. */
	estimated_tokens: number | null;
	/** The provider whose batch queue it counts in; null for a part stored before parts said. */
	capacity_key: string | null;
}

/** The parts of a job, in the order they were submitted. */
export async function readParts(knex: Knex, jobId: number): Promise<JobPart[]> {
	const rows = (await knex(PARTS)
		.where('generation_id', jobId)
		.orderBy('part')
		.select('part', 'route_start', 'route_end', 'batch_id', 'input_file_id', 'resubmit_of', 'status', 'estimated_tokens', 'capacity_key')) as Record<string, unknown>[];
	return rows.map((row) => ({
		part: Number(row['part']),
		route_start: Number(row['route_start']),
		route_end: Number(row['route_end']),
		batch_id: String(row['batch_id']),
		input_file_id: (row['input_file_id'] as string | null) ?? null,
		resubmit_of: row['resubmit_of'] === null || row['resubmit_of'] === undefined ? null : Number(row['resubmit_of']),
		status: row['status'] as PartStatus,
		estimated_tokens: row['estimated_tokens'] === null || row['estimated_tokens'] === undefined ? null : Number(row['estimated_tokens']),
		capacity_key: (row['capacity_key'] as string | null) ?? null,
	}));
}

/**
 * Stores a submitted (or adopted) part, fenced by the job's lease, and marks its unsettled routes `in_part` in the
 * same transaction. A resubmission closes the expired part it
 * repeats in the same transaction, so the expired part is resubmitted at most once. Part 0's batch is also the
 * job's `batch_id`, which jobs of one part have always carried.
 */
export type NewPart = Omit<JobPart, 'status' | 'estimated_tokens' | 'capacity_key'> & Partial<Pick<JobPart, 'estimated_tokens' | 'capacity_key'>>;

export async function savePart(knex: Knex, jobId: number, worker: string, part: NewPart): Promise<void> {
	await knex.transaction(async (trx) => {
		await lockLeasedJob(trx, jobId, worker);
		await trx(PARTS).insert({ generation_id: jobId, ...part, status: 'running', date_created: dbTimestamp(trx) });
		await assignPart(trx, jobId, part.route_start, part.route_end, part.part);
		if (part.resubmit_of !== null) await trx(PARTS).where({ generation_id: jobId, part: part.resubmit_of }).update({ status: 'ingested' });
		if (part.part === 0) await setJobBatch(trx, jobId, part.batch_id, part.input_file_id);
	});
}

/** Moves a part on (`ingested` or `expired`), fenced by the job's lease. */
export async function setPartStatus(knex: Knex, jobId: number, worker: string, part: number, status: PartStatus): Promise<void> {
	await knex.transaction(async (trx) => {
		await lockLeasedJob(trx, jobId, worker);
		await trx(PARTS).where({ generation_id: jobId, part }).update({ status });
	});
}

/**
 * Marks a part refused for its provider's capacity, fenced by the job's lease, and gives its routes back to the job
 * in the same transaction: nothing of it ran, and the routes go again in a later part.
 */
export async function refusePart(knex: Knex, jobId: number, worker: string, part: number): Promise<void> {
	await knex.transaction(async (trx) => {
		await lockLeasedJob(trx, jobId, worker);
		await trx(PARTS).where({ generation_id: jobId, part }).update({ status: 'refused' });
		await releasePart(trx, jobId, part);
	});
}

/** The input tokens every running part of a provider holds of its batch queue, across the cluster. */
export async function enqueuedTokens(knex: Knex, capacityKey: string): Promise<number> {
	const row = (await knex(PARTS).where({ capacity_key: capacityKey, status: 'running' }).sum({ n: 'estimated_tokens' }).first()) as { n: number | string | null } | undefined;
	return Number(row?.n ?? 0);
}

/**
 * How many parts each of these jobs has sent that the provider took (running, or run): the turns each has had at its
 * provider's batch queue (absent: none).
 */
export async function partsTaken(knex: Knex, jobIds: readonly number[]): Promise<Map<number, number>> {
	if (jobIds.length === 0) return new Map();
	const rows = (await knex(PARTS).whereIn('generation_id', jobIds).andWhereNot('status', 'refused').groupBy('generation_id').select('generation_id').count({ n: '*' })) as {
		generation_id: number;
		n: number | string;
	}[];
	return new Map(rows.map((row) => [Number(row.generation_id), Number(row.n)]));
}

/** The input tokens the running parts hold, by the provider whose batch queue they are in. */
export async function enqueuedByProvider(knex: Knex): Promise<Map<string, number>> {
	const rows = (await knex(PARTS).where('status', 'running').whereNotNull('capacity_key').groupBy('capacity_key').select('capacity_key').sum({ n: 'estimated_tokens' })) as {
		capacity_key: string;
		n: number | string | null;
	}[];
	return new Map(rows.map((row) => [row.capacity_key, Number(row.n ?? 0)]));
}
