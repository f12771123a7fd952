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
