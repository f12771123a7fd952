/*
 * A provider's lookups of its batches (by the engine's tag) page through the vendor's list lazily; these take what
 * the caller needs of them.
 */

/** The first item of a lookup, or null: the lookups page lazily, so the rest is never fetched. */
export async function firstOf<T>(items: AsyncIterable<T>): Promise<T | null> {
	for await (const item of items) return item;
	return null;
}

/** Every item of a lookup. */
export async function allOf<T>(items: AsyncIterable<T>): Promise<T[]> {
	const found: T[] = [];
	for await (const item of items) found.push(item);
	return found;
}
