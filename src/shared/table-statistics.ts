import type { Knex } from 'knex';
import { vendorOf } from './database.ts';
import type { Logger } from './logger.ts';

/*
 * Planner statistics for tables a bulk job grows. A bulk ingest adds hundreds of thousands of rows to the posts,
 * their band rows and the job's route rows within seconds; autovacuum only analyzes a table a minute or more
 * later. Until then PostgreSQL believes the website has a few hundred rows, and plans `pseo_id = ? AND band_key
 * IN (...)` as a scan of every row of the website through the `pseo_id` index, so each chunk's lookup grows with
 * the website: measured at 20,000 pages, 24 ms per lookup against 1.5 ms with fresh statistics. MySQL and MariaDB
 * keep persistent statistics that lag the same way. SQLite without statistics assumes every index is selective,
 * which is what these queries want, so it is left alone.
 */

/** Refreshes the planner's statistics of `tables`. Failing (no privilege, say) costs only speed: logged, not thrown. */
export async function refreshStatistics(knex: Knex, tables: readonly string[], logger: Logger): Promise<void> {
	const vendor = vendorOf(knex);
	if (tables.length === 0 || (vendor !== 'postgres' && vendor !== 'mysql')) return;
	const list = tables.map(() => '??').join(', ');
	try {
		await knex.raw(vendor === 'postgres' ? `ANALYZE ${list}` : `ANALYZE TABLE ${list}`, [...tables]);
	} catch (error) {
		logger.warn({ tables, err: error }, 'pseo could not refresh table statistics; queries may plan slower until autovacuum does');
	}
}

/**
 * When a run that keeps adding rows should refresh statistics: after `first` rows, then each time the rows added
 * since the last refresh reach the rows added before it (doubling), so a run of n rows refreshes about log2(n / first)
 * times and the planner's idea of a table is never off by more than half.
 */
export function createStatisticsSchedule(first = 5000): { add(rows: number): boolean } {
	let added = 0;
	let next = first;
	return {
		add(rows) {
			added += rows;
			if (added < next) return false;
			next = added * 2;
			return true;
		},
	};
}
