/*
 * A Directus item as a plan import's row, on the server (collection-rows.ts) and in the app's preview alike.
 */

/**
 * An item as a row: each path's value (`name`, `country.name`), found through the related items (null where a
 * relation is empty). A value that is itself an object or a list (a JSON field) is kept as its JSON text: a row's
 * values are flat.
 */
export function rowOf(item: Record<string, unknown>, paths: readonly string[]): Record<string, unknown> {
	const row: Record<string, unknown> = {};
	for (const path of paths) {
		let value: unknown = item;
		for (const segment of path.split('.')) value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[segment] : null;
		row[path] = value !== null && typeof value === 'object' ? JSON.stringify(value) : (value ?? null);
	}
	return row;
}
