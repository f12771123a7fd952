import type { Accountability, SchemaOverview } from '@directus/types';
import type { Knex } from 'knex';
import { InvalidPayloadError } from '../errors/index.ts';
import type { DirectusServices } from '../shared/services.ts';
import { MAX_IMPORT_ROWS, type NumberedRow } from './import-source.ts';
import { rowOf } from './item-row.ts';

/*
 * The rows of a plan import read from a Directus collection (`collection`, and an optional `filter` as the items API
 * takes it), through Directus's ItemsService with the caller's accountability: a collection the caller cannot read is
 * Directus's own 403, a field they cannot read too, and an item they may not see is simply not read. A row is an item
 * with each field the template names at its path, as Directus writes it (`name`, `country.name`): placeholders and
 * facts name fields of many-to-one related items that way, and a fact's name is its path.
 *
 * Items are read in pages of 1,000 by their primary key (keyset, not offset: each page costs the same however deep
 * the import is, and a concurrent write cannot make it skip an item), so a collection of 100,000 items never sits in
 * memory at once; a key Directus does not compare with `_gt` (a UUID, a string) is read as a list of keys first. The
 * reads run on the import's transaction, so SQLite's single connection is not asked for twice (on PostgreSQL each page
 * sees what has committed by then).
 */

/** Items read per query. */
const PAGE = 1_000;
/** Fields a 400 lists at most. */
const LISTED_FIELDS = 50;

/** What an import names to read a collection. */
export interface CollectionQuery {
	collection: string;
	/** A Directus filter object, as the items API takes it; none reads every item the caller may see. */
	filter: Record<string, unknown> | null;
	/** Only these items (primary keys, as pages record them): a followed collection's changed items. All when absent. */
	items?: readonly string[];
}

/** A collection checked against the schema: its primary key, and the fields to read. */
export interface CollectionSource extends Omit<CollectionQuery, 'items'> {
	/** The items to read, their keys as the collection compares them (numbers for a numeric key). */
	items?: readonly (string | number)[];
	primaryKey: string;
	/** The template's paths: each a field of the collection or of a many-to-one related item. A row has these columns. */
	paths: readonly string[];
	/** The related collections the paths go through, each with the fields of it they name. */
	related: ReadonlyMap<string, readonly string[]>;
	/** Whether the primary key orders with `_gt` (a number or a date); else the keys are read first. */
	keyset: boolean;
}

/** Key types compared as numbers (a bigInteger stays text: beyond 2^53 a number would name another item). */
const NUMERIC_KEYS = new Set(['integer']);
/** Field types whose values Directus filters with `_gt`: a key of these is paged by keyset. */
const KEYSET_TYPES = new Set(['integer', 'bigInteger', 'float', 'decimal', 'date', 'dateTime', 'timestamp']);

/** The first dynamic variable (`$CURRENT_USER`, `$NOW`) of a filter, which the items service would take literally. */
function dynamicVariable(filter: unknown): string | null {
	if (typeof filter === 'string') return filter.startsWith('$') ? filter.split(/[.(]/, 1)[0]! : null;
	if (filter === null || typeof filter !== 'object') return null;
	for (const value of Object.values(filter)) {
		const found = dynamicVariable(value);
		if (found) return found;
	}
	return null;
}

const bad = (reason: string) => new InvalidPayloadError({ reason });

/**
 * Checks `query` and the template's field paths against the schema: an unknown collection, a system collection, a
 * path that names no field, or a path through a field that is not a many-to-one relation is a 400 naming it (a
 * template with a typo would otherwise skip every item).
 */
export function collectionSource(schema: SchemaOverview, query: CollectionQuery, paths: readonly string[]): CollectionSource {
	// Own properties only: "constructor" or "toString" would otherwise find an Object.prototype member.
	const overview = Object.hasOwn(schema.collections, query.collection) ? schema.collections[query.collection] : undefined;
	if (!overview || query.collection.startsWith('directus_')) {
		throw bad(`"collection": there is no collection "${query.collection}" to import from (the name is the collection's, as in /items/${query.collection}).`);
	}
	const unknown: string[] = [];
	const related = new Map<string, string[]>();
	for (const path of paths) {
		const found = followPath(schema, query.collection, path);
		if (typeof found === 'string') unknown.push(`"${path}" (${found})`);
		else {
			// Every field the path reads beyond the collection itself: the relation fields it goes through and the value.
			for (const step of found) if (step.collection !== query.collection) related.set(step.collection, [...new Set([...(related.get(step.collection) ?? []), step.field])]);
		}
	}
	if (unknown.length > 0) {
		const fields = Object.keys(overview.fields);
		const listed = fields.slice(0, LISTED_FIELDS).join(', ');
		const more = fields.length > LISTED_FIELDS ? `, and ${fields.length - LISTED_FIELDS} more` : '';
		throw bad(
			`The template names ${unknown.length === 1 ? 'a field' : 'fields'} that collection "${query.collection}" cannot give: ${unknown.join(', ')}. Its fields are: ${listed}${more}.`,
		);
	}
	// A related field the filter names (`country.code`) decides which items are read: a change of it is a change too.
	for (const path of filterPaths(query.filter)) {
		const found = followPath(schema, query.collection, path);
		if (typeof found !== 'string') for (const step of found) if (step.collection !== query.collection) related.set(step.collection, [...new Set([...(related.get(step.collection) ?? []), step.field])]);
	}
	const dynamic = dynamicVariable(query.filter);
	if (dynamic) throw bad(`"filter": dynamic variables such as ${dynamic} are not taken in an import's filter; give the value itself.`);
	const keyType = String(overview.fields[overview.primary]?.type);
	// Keys come back as text (a page's `source_item`); a numeric key is compared as a number.
	// Keys as the items service compares them: a number for an integer key, a UUID in lower case (an event may carry
	// the key as a request wrote it; Directus stores and returns it in lower case), else the text.
	const items = query.items
		? NUMERIC_KEYS.has(keyType)
			? query.items.map(Number).filter(Number.isFinite)
			: keyType === 'uuid'
				? query.items.map((key) => key.toLowerCase())
				: [...query.items]
		: undefined;
	return { ...query, ...(items ? { items } : {}), primaryKey: overview.primary, keyset: KEYSET_TYPES.has(keyType), paths, related };
}

/** The field paths a filter names (`{"country": {"code": {"_eq": "ES"}}}` names `country.code`); operators are not fields. */
function filterPaths(filter: unknown, prefix = ''): string[] {
	if (filter === null || typeof filter !== 'object') return [];
	if (Array.isArray(filter)) return filter.flatMap((item) => filterPaths(item, prefix));
	return Object.entries(filter).flatMap(([key, value]) => {
		if (key.startsWith('_')) return filterPaths(value, prefix);
		const path = prefix ? `${prefix}.${key}` : key;
		const deeper = filterPaths(value, path);
		return deeper.length > 0 ? deeper : [path];
	});
}

/**
 * The collections and fields `path` reads from one item of `collection`, one per segment (the last is the value's),
 * or why it names none.
 */
function followPath(schema: SchemaOverview, collection: string, path: string): { collection: string; field: string }[] | string {
	const segments = path.split('.');
	const steps: { collection: string; field: string }[] = [];
	let current = collection;
	for (const [index, segment] of segments.entries()) {
		const fields = Object.hasOwn(schema.collections, current) ? schema.collections[current]!.fields : {};
		const field = Object.hasOwn(fields, segment) ? fields[segment] : undefined;
		if (!field) return index === 0 ? 'no such field' : `"${current}" has no field "${segment}"`;
		steps.push({ collection: current, field: segment });
		if (index === segments.length - 1) return field.alias ? 'a list of related items, not a value' : steps;
		const relation = schema.relations.find((candidate) => candidate.collection === current && candidate.field === segment && candidate.related_collection);
		if (!relation) return `"${segment}" is not a relation to one item`;
		current = relation.related_collection!;
	}
	return 'no such field';
}

/** Reads items of a checked collection source as the caller. */
export interface CollectionReader {
	/**
	 * One item of the collection and of each related collection the paths go through, to find out before anything is
	 * stored whether the caller may read what the import names: Directus's 403 if not. (A read of the collection alone
	 * would not tell: Directus leaves out a related item the caller may not read, and every row would be skipped.)
	 */
	probe(source: CollectionSource, schema: SchemaOverview): Promise<void>;
	/**
	 * The rows, numbered, in the order of their primary key, read on `knex` (the import's transaction). `schema` is the
	 * one the source was checked against, read before the transaction opened: a transaction that waits for Directus's
	 * schema can hold the connection its rebuild needs (SQLite has one; posts/post-revisions.ts).
	 */
	rows(source: CollectionSource, knex: Knex, schema: SchemaOverview): AsyncGenerator<NumberedRow>;
}

/**
 * A reader of collections with `accountability` (a request's: never null here, which would read everything), probing
 * on `database`.
 */
export function collectionReader(services: DirectusServices, accountability: Accountability, database: Knex): CollectionReader {
	const itemsOf = (collection: string, knex: Knex, schema: SchemaOverview) => new services.services.ItemsService(collection, { schema, accountability, knex });
	/** The fields read: the primary key (a page records its item's) and the template's paths. */
	const fieldsOf = (source: CollectionSource) => [...new Set([source.primaryKey, ...source.paths])];
	return {
		async probe(source, schema) {
			await readable(source.filter, async () => {
				const items = itemsOf(source.collection, database, schema);
				await items.readByQuery({ fields: fieldsOf(source), ...(source.filter ? { filter: source.filter } : {}), limit: 1 });
				for (const [collection, fields] of source.related) {
					await itemsOf(collection, database, schema).readByQuery({ fields: [...new Set(fields)], limit: 1 });
				}
			});
		},
		async *rows(source, knex, schema) {
			const items = itemsOf(source.collection, knex, schema);
			const key = source.primaryKey;
			const read = (filter: unknown, fields: string[], limit: number) =>
				readable(source.filter, async () => (await items.readByQuery({ fields, ...(filter ? { filter } : {}), sort: [key], limit })) as Record<string, unknown>[]);
			// A sync of some items reads only those (as the caller sees them): the filter, the keys and the page together.
			const narrowed = source.items ? { _and: [...(source.filter ? [source.filter] : []), { [key]: { _in: source.items } }] } : source.filter;
			const within = (page: Record<string, unknown> | null) => (narrowed && page ? { _and: [narrowed, page] } : (narrowed ?? page));
			const tooMany = () => bad(`The collection gives more than ${MAX_IMPORT_ROWS} items; at most ${MAX_IMPORT_ROWS} are allowed in one import (narrow it with "filter").`);
			let number = 0;
			const numbered = function* (found: readonly Record<string, unknown>[]) {
				for (const item of found) {
					if (++number > MAX_IMPORT_ROWS) throw tooMany();
					yield { number, row: rowOf(item, source.paths), columns: source.paths, item: itemKeyOf(item, key) };
				}
			};
			if (!source.keyset) {
				// A key Directus does not filter with `_gt` (a UUID, a string): the keys first, as the caller sees them, then
				// their items a page at a time. Offset paging could skip an item that a concurrent write moved, and a sync would
				// retire its page.
				const keys = (await read(narrowed, [key], MAX_IMPORT_ROWS + 1)).map((item) => item[key]);
				if (keys.length > MAX_IMPORT_ROWS) throw tooMany();
				for (let i = 0; i < keys.length; i += PAGE) yield* numbered(await read(within({ [key]: { _in: keys.slice(i, i + PAGE) } }), fieldsOf(source), PAGE));
				return;
			}
			for (let after: unknown = undefined; ; ) {
				const found = await read(within(after === undefined ? null : { [key]: { _gt: after } }), fieldsOf(source), PAGE);
				yield* numbered(found);
				if (found.length < PAGE) return;
				after = found.at(-1)![key];
			}
		},
	};
}

/**
 * Runs a read of the items service with the caller's filter, turning what is not an HTTP error of Directus's into a
 * 400 that names the filter: the service runs a filter as it is given, without the checks of the REST API's query
 * parser (`{"_in": 5}` fails in its SQL builder, a text against a UUID column in PostgreSQL).
 */
async function readable<T>(filter: Record<string, unknown> | null, read: () => Promise<T>): Promise<T> {
	try {
		return await read();
	} catch (error) {
		const status = (error as { status?: unknown } | null)?.status;
		// Without a filter of the caller's, a failure is the server's own (the database down, say): left as it is.
		if (!filter || (typeof status === 'number' && status >= 400 && status < 500)) throw error;
		throw bad(`"filter" could not be applied to the collection: ${error instanceof Error ? error.message : String(error)}`);
	}
}

/** An item's primary key as its page records it (`source_item`), or null. */
function itemKeyOf(item: Record<string, unknown>, primaryKey: string): string | null {
	const key = item[primaryKey];
	return key === null || key === undefined ? null : String(key);
}
