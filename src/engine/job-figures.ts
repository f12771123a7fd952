import type { Knex } from 'knex';
import type { DatabaseFigures } from '../metrics/metrics.ts';
import { countJobsNeedingAttention, JOBS } from './job-store.ts';
import { PARTS } from './part-store.ts';
import { batchQueues } from './batch-capacity.ts';

/** The gauges of the metrics, read from the jobs and parts every instance shares. */
export function jobFigures(knex: Knex, configured: Partial<Record<string, number>> = {}): DatabaseFigures {
	return {
		async jobsByStatus() {
			const rows = (await knex(JOBS).whereIn('status', ['pending', 'running']).groupBy('mode', 'status').select('mode', 'status').count({ n: '*' })) as {
				mode: string;
				status: string;
				n: number | string;
			}[];
			return rows.map((row) => ({ mode: row.mode, status: row.status, count: Number(row.n) }));
		},
		jobsNeedingAttention: () => countJobsNeedingAttention(knex),
		async partsRunning() {
			const row = (await knex(PARTS).where('status', 'running').count({ n: '*' }).first()) as { n: number | string } | undefined;
			return Number(row?.n ?? 0);
		},
		async batchQueues() {
			const queues = await batchQueues(knex, configured, []);
			return [...queues].map(([provider, queue]) => ({ provider, enqueued: queue.enqueued_tokens, waiting: queue.jobs_waiting }));
		},
	};
}
