import type { Knex } from 'knex';
import { vendorOf } from './database.ts';
import type { Logger } from './logger.ts';

/*
 * Planner statistics for tables a bulk job grows. A bulk ingest adds hundreds of thousands of rows to the posts,
 * their band rows and the job's route rows within seconds; autovacuum only analyzes a table a minute or more
 * later. Until then PostgreSQL believes the website has a few hundred rows, and plans `pseo_id = ? AND band_key
 * IN (...)` as a scan of every row of the website through the `pseo_id` index, so each chunk's lookup grows with
 * the website: measured at 20,000 pages, 24 ms per lookup against 1.5 ms with fresh statistics. InnoDB (MySQL,
 * MariaDB) recalculates a table's statistics in the background once a tenth of it changed, and its ANALYZE TABLE
 * takes a flush lock that queues every other query of the table behind the running ones, so it is left to that.
 * SQLite without statistics assumes every index is selective, which is what these queries want.
 */

/** A table and the columns its queries filter on: the only ones worth statistics. */
export interface StatisticsTarget {
	table: string;
	columns: readonly string[];
}

/**
 * Refreshes PostgreSQL's planner statistics of these columns; elsewhere nothing. Only the named columns: analyzing
 * every column read each sampled post's body out of its TOAST table for statistics no query uses: a refresh of
 * the four tables an ingest grows took 600 ms at 100,000 posts, 320 ms with the filtered columns only. Failing
 * (not the tables' owner, say) costs only speed: logged, not thrown.
 */
export async function refreshStatistics(knex: Knex, targets: readonly StatisticsTarget[], logger: Logger): Promise<void> {
	if (targets.length === 0 || vendorOf(knex) !== 'postgres') return;
	const sql = targets.map(({ columns }) => `?? (${columns.map(() => '??').join(', ')})`).join(', ');
	try {
		await knex.raw(`ANALYZE ${sql}`, targets.flatMap(({ table, columns }) => [table, ...columns]));
	} catch (error) {
		logger.warn({ tables: targets.map(({ table }) => table), err: error }, 'pseo could not refresh table statistics; queries may plan slower until autovacuum does');
	}
}

export interface StatisticsSchedule {
	/** Counts rows added; true when statistics are due. */
	add(rows: number): boolean;
}

/**
 * When a run that keeps adding rows should refresh statistics: after `first` rows, then each time the rows added
 * since the last refresh reach the rows added before it (doubling), so a run of n rows refreshes about log2(n / first)
 * times and the planner's idea of a table is never off by more than half. A run that goes on from `before` rows
 * (a job's later parts) refreshes next at twice that.
 */
export function createStatisticsSchedule(first = 5000, before = 0): StatisticsSchedule {
	let added = before;
	let next = Math.max(first, before * 2);
	return {
		add(rows) {
			added += rows;
			if (added < next) return false;
			next = added * 2;
			return true;
		},
	};
}
