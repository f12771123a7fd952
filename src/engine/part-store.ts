import type { Knex } from 'knex';
import { dbTimestamp } from '../shared/database.ts';
import { assignPart } from './job-route-store.ts';
import { lockLeasedJob, setJobBatch } from './job-store.ts';

/** The owner of `pseo_generation_parts`: the provider batches of bulk jobs, one row per part. */
export const PARTS = 'pseo_generation_parts';

/** Metadata key that names the part a provider batch runs, `<job id>:<part>`: the adopt lookup of one part. */
export const BATCH_PART_KEY = 'pseo_generation_part';

/**
 * - `running`: the batch is at the provider;
 * - `ingested`: its results are stored (or its lines failed and were refunded), or, for a job that ended while it
 *   ran, its batch has stopped and what it billed is in the job's usage (stray-batches.ts);
 * - `expired`: the provider let it expire with lines unanswered, which one resubmission sends again.
 */
export type PartStatus = 'running' | 'ingested' | 'expired';

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
}

/** The parts of a job, in the order they were submitted. */
export async function readParts(knex: Knex, jobId: number): Promise<JobPart[]> {
	const rows = (await knex(PARTS)
		.where('generation_id', jobId)
		.orderBy('part')
		.select('part', 'route_start', 'route_end', 'batch_id', 'input_file_id', 'resubmit_of', 'status')) as Record<string, unknown>[];
	return rows.map((row) => ({
		part: Number(row['part']),
		route_start: Number(row['route_start']),
		route_end: Number(row['route_end']),
		batch_id: String(row['batch_id']),
		input_file_id: (row['input_file_id'] as string | null) ?? null,
		resubmit_of: row['resubmit_of'] === null || row['resubmit_of'] === undefined ? null : Number(row['resubmit_of']),
		status: row['status'] as PartStatus,
	}));
}

/**
 * Stores a submitted (or adopted) part, fenced by the job's lease, and marks its unsettled routes `in_part` in the
 * same transaction. A resubmission closes the expired part it
 * repeats in the same transaction, so the expired part is resubmitted at most once. Part 0's batch is also the
 * job's `batch_id`, which jobs of one part have always carried.
 */
export async function savePart(knex: Knex, jobId: number, worker: string, part: Omit<JobPart, 'status'>): Promise<void> {
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
