/**
 * The most sessions PostgreSQL had open at once during a run, against its `max_connections`: the global set-up
 * samples `pg_stat_activity` once a second, and the reporter (suite-progress.ts) prints the peak at the end. Every
 * instance of the run shares the one server, and a parked instance keeps the connections it held; when they ran
 * out, a suite failed on "sorry, too many clients already" (POOL_ENV in instance.ts). The peak shows the next leak
 * before that. Vitest-free.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CACHE_DIR } from './paths.ts';
import { pgAdmin } from './postgres.ts';

const PEAK_FILE = path.join(CACHE_DIR, 'pg-connections.json');

interface ConnectionPeak {
	/** The most sessions open at once in a sample. */
	peak: number;
	/** PostgreSQL's `max_connections`. */
	max: number;
	/** Samples whose own connection PostgreSQL refused: it was full then. */
	refused: number;
}

/** Starts sampling (forgetting the last run's peak); returns the function that stops it. */
export function watchConnections(): () => void {
	rmSync(PEAK_FILE, { force: true });
	const seen: ConnectionPeak = { peak: 0, max: 0, refused: 0 };
	let sampling = false;
	const save = () => {
		mkdirSync(CACHE_DIR, { recursive: true });
		writeFileSync(PEAK_FILE, JSON.stringify(seen));
	};
	const sample = async () => {
		if (sampling) return;
		sampling = true;
		try {
			const [row] = await pgAdmin<{ open: number; max: number }>(
				"SELECT count(*)::int AS open, current_setting('max_connections')::int AS max FROM pg_stat_activity WHERE backend_type = 'client backend'",
			);
			if (row && row.open > seen.peak) {
				Object.assign(seen, { peak: row.open, max: row.max });
				save();
			}
		} catch (error) {
			if (error instanceof Error && error.message.includes('too many clients')) {
				seen.refused += 1;
				save();
			}
			// Otherwise PostgreSQL was slow to answer: the next sample tries again.
		} finally {
			sampling = false;
		}
	};
	const timer = setInterval(() => void sample(), 1000);
	timer.unref();
	return () => clearInterval(timer);
}

/** The run's line about PostgreSQL's connections, or nothing when it was not watched. */
export function connectionSummary(): string {
	let seen: ConnectionPeak;
	try {
		seen = JSON.parse(readFileSync(PEAK_FILE, 'utf8')) as ConnectionPeak;
	} catch {
		return '';
	}
	const refused = seen.refused > 0 ? `; it refused ${seen.refused} of the samples' own connections, being full` : '';
	return `\nPostgreSQL: at most ${seen.peak} client connections open at once, of its ${seen.max}${refused}.\n`;
}
