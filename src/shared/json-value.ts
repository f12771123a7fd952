/**
 * A JSON column's value as the database gives it back: text on SQLite and MySQL (parsed here), the value itself on
 * PostgreSQL. Text that is not JSON reads as undefined, so a damaged value is treated as missing, never thrown.
 */
export function jsonValue(value: unknown): unknown {
	if (typeof value !== 'string') return value;
	try {
		return JSON.parse(value) as unknown;
	} catch {
		return undefined;
	}
}
