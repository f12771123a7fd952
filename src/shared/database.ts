import type { Knex } from 'knex';

export type DatabaseVendor = 'sqlite' | 'postgres' | 'mysql' | 'other';

/** Which SQL dialect a Knex instance (or transaction) speaks. */
export function vendorOf(knex: Knex): DatabaseVendor {
	const client = String((knex.client as { config?: { client?: unknown } }).config?.client ?? '');
	if (client.includes('sqlite')) return 'sqlite';
	if (client === 'pg' || client === 'postgres' || client === 'postgresql' || client === 'cockroachdb') return 'postgres';
	if (client.includes('mysql')) return 'mysql';
	return 'other';
}

/**
 * A timestamp value as Directus itself stores it for a `timestamp` field: epoch milliseconds on SQLite (read
 * back through the `cast-timestamp` special), a Date elsewhere.
 */
export function dbTimestamp(knex: Knex, date: Date = new Date()): Date | number {
	return vendorOf(knex) === 'sqlite' ? date.getTime() : date;
}

/** Reads a timestamp column written by Directus or by `dbTimestamp`, as an ISO string. */
export function isoFromDb(value: unknown): string | null {
	if (value === null || value === undefined) return null;
	if (value instanceof Date) return value.toISOString();
	if (typeof value === 'number') return new Date(value).toISOString();
	if (typeof value === 'string' && /^\d+$/.test(value)) return new Date(Number(value)).toISOString();
	const parsed = new Date(String(value));
	return Number.isNaN(parsed.getTime()) ? null : parsed.toISOString();
}

/** A JSON column's value: PostgreSQL returns it parsed, SQLite as text. */
export function jsonFromDb<T>(value: unknown, fallback: T): T {
	if (value === null || value === undefined) return fallback;
	if (typeof value === 'string') {
		try {
			return JSON.parse(value) as T;
		} catch {
			return fallback;
		}
	}
	return value as T;
}

/** True when a write failed on a unique index, on SQLite, PostgreSQL or MySQL. */
export function isUniqueViolation(error: unknown): boolean {
	if (typeof error !== 'object' || error === null) return false;
	const { code, errno, message } = error as { code?: unknown; errno?: unknown; message?: unknown };
	if (code === '23505') return true; // PostgreSQL unique_violation
	if (code === 'ER_DUP_ENTRY' || errno === 1062) return true; // MySQL
	if (code === 'SQLITE_CONSTRAINT' || code === 'SQLITE_CONSTRAINT_UNIQUE') {
		return typeof message === 'string' ? /UNIQUE/i.test(message) : true;
	}
	return false;
}

/** The id a Knex insert returned, across dialects (`[5]` on SQLite, `[{ id: 5 }]` with RETURNING). */
export function insertedId(rows: unknown[]): number {
	const first = rows[0];
	const id = typeof first === 'object' && first !== null ? (first as { id: unknown }).id : first;
	return Number(id);
}

/** Routes a PostgreSQL probe statement takes at once: one array parameter, well within a statement's size. */
const ROUTES_PER_PROBE = 10_000;

/**
 * Which of `routes` a website has rows for in `table`, keyed by (pseo_id, route) under a unique index. On
 * PostgreSQL one statement per 10,000 routes, each an index probe whatever the statistics say (a LATERAL subquery,
 * kept apart by OFFSET 0, can only be a nested loop; `route IN (...)` in slices of 500 took 200 statements for a
 * 100,000-page trigger); elsewhere `whereIn` in slices under every database's bound-variable limit.
 */
export async function existingRoutes(knex: Knex, table: string, pseoId: number, routes: readonly string[], slice = 500): Promise<Set<string>> {
	const found = new Set<string>();
	if (vendorOf(knex) === 'postgres') {
		for (let i = 0; i < routes.length; i += ROUTES_PER_PROBE) {
			const result = (await knex.raw('SELECT t.route FROM unnest(?::text[]) AS r(route) CROSS JOIN LATERAL (SELECT ?? AS route FROM ?? WHERE ?? = ? AND ?? = r.route OFFSET 0) AS t', [
				routes.slice(i, i + ROUTES_PER_PROBE),
				'route',
				table,
				'pseo_id',
				pseoId,
				'route',
			])) as { rows: { route: string }[] };
			for (const row of result.rows) found.add(row.route);
		}
		return found;
	}
	for (let i = 0; i < routes.length; i += slice) {
		const rows = (await knex(table).where('pseo_id', pseoId).whereIn('route', routes.slice(i, i + slice)).select('route')) as { route: string }[];
		for (const row of rows) found.add(row.route);
	}
	return found;
}
