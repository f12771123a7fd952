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

/**
 * The largest id a row of ours can have: Directus makes integer primary keys 32-bit on PostgreSQL and MySQL, which
 * refuse a larger value in a query with an error (a 500) rather than finding nothing.
 */
export const MAX_ID = 2_147_483_647;

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

/** A surrogate without its pair, which JSON writes as an escape (a pair is written as it is). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/**
 * Characters JSON writes as escapes that a PostgreSQL array literal would read differently: control characters
 * (`\n` in JSON, a plain `n` in the literal) and lone surrogates.
 */
const JSON_ESCAPED = new RegExp(`[\\u0000-\\u001f]|${LONE_SURROGATE.source}`);

/**
 * `values` as a PostgreSQL array literal, for an array parameter (`?::text[]`, `?::int[]`). Given the array itself,
 * node-postgres serializes it element by element, with type checks and escaping per element: for the 100,000
 * routes, titles and page records a big trigger writes, that took 550 to 770 ms of the event loop, against 80 ms
 * here (`JSON.stringify` of the whole array; both timed in one script on the scale benchmark's 100,000 pages).
 * JSON quotes a string as the array literal does (`"`, with `\"` and `\\` inside), and `null` (also what it
 * makes of a missing value) is the literal's NULL. An array with text that JSON would escape otherwise, or with
 * anything but text, finite numbers and nulls, is quoted by hand, each element as text: slower, but exact.
 */
export function arrayLiteral(values: readonly (string | number | null | undefined)[]): string {
	const plain = values.every((value) => value === null || value === undefined || (typeof value === 'number' ? Number.isFinite(value) : typeof value === 'string' && !JSON_ESCAPED.test(value)));
	if (plain) return `{${JSON.stringify(values).slice(1, -1)}}`;
	const element = (value: unknown) => (value === null || value === undefined ? 'NULL' : `"${String(value).replace(/[\\"]/g, '\\$&')}"`);
	return `{${values.map(element).join(',')}}`;
}

/**
 * `value` as a JSON document for a `?::json` parameter. A lone surrogate becomes U+FFFD, as it does when
 * node-postgres encodes a bound string as UTF-8: JSON would write it as an escape that PostgreSQL's JSON parser
 * refuses, and one such character would fail every attempt to store the rows around it.
 */
export function jsonParameter(value: unknown): string {
	const json = JSON.stringify(value);
	// JSON writes a lone surrogate as the escape \udXXX; only when one may be there is the document written again
	// with a replacer, which costs a call for every value (a chunk of posts: as long as the plain write).
	if (!SURROGATE_ESCAPE.test(json)) return json;
	return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'string' && LONE_SURROGATE.test(item) ? item.replace(LONE_SURROGATES, '\ufffd') : item));
}

/** A surrogate's escape in JSON text; a text that spells one out (an escaped backslash before it) also matches, harmlessly. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * PostgreSQL: the rows of a website in `table` whose `column` is one of `values`, as one statement with an array
 * parameter that probes the (pseo_id, `column`) index once per value, whatever the statistics say. Written as
 * `column = ANY(...)`, the planner costs thousands of probes above one scan of the website's rows and filters every
 * row instead (the band lookup of a 250-page chunk: 15 ms at 4,000 posts, 70 ms at 20,000, growing with the
 * website); as a plain join it hashes the same scan. A LATERAL subquery that names the value, kept apart by
 * OFFSET 0 (the planner would pull it up into that join), can only be a nested loop of index probes.
 */
export function probeRows(knex: Knex, table: string, pseoId: number, column: string, values: readonly string[], select: readonly string[]): Knex.Raw {
	return knex.raw(
		`SELECT ${select.map(() => 't.??').join(', ')} FROM unnest(?::text[]) AS v(value) CROSS JOIN LATERAL (SELECT ${select.map(() => '??').join(', ')} FROM ?? WHERE ?? = ? AND ?? = v.value OFFSET 0) AS t`,
		[...select, arrayLiteral(values), ...select, table, 'pseo_id', pseoId, column],
	);
}

/** Routes one PostgreSQL probe statement takes: one array parameter, well within a statement's size. */
const ROUTES_PER_PROBE = 10_000;
/** Routes per `whereIn` elsewhere: under every database's bound-variable limit. */
const ROUTES_PER_QUERY = 500;

/**
 * Which of `routes` a website has rows for in `table`, keyed by (pseo_id, route) under a unique index: on
 * PostgreSQL one {@link probeRows} statement per 10,000 routes (`route IN (...)` in slices of 500 took 200
 * statements for a 100,000-page trigger), elsewhere `whereIn` in slices.
 */
export async function existingRoutes(knex: Knex, table: string, pseoId: number, routes: readonly string[]): Promise<Set<string>> {
	const found = new Set<string>();
	const postgres = vendorOf(knex) === 'postgres';
	const slice = postgres ? ROUTES_PER_PROBE : ROUTES_PER_QUERY;
	for (let i = 0; i < routes.length; i += slice) {
		const part = routes.slice(i, i + slice);
		const rows = postgres
			? ((await probeRows(knex, table, pseoId, 'route', part, ['route'])) as { rows: { route: string }[] }).rows
			: ((await knex(table).where('pseo_id', pseoId).whereIn('route', part).select('route')) as { route: string }[]);
		for (const row of rows) found.add(row.route);
	}
	return found;
}
