import type { Accountability, SchemaOverview } from '@directus/types';
import type { Knex } from 'knex';
import { InvalidPayloadError } from '../errors/index.ts';
import type { DirectusServices } from '../shared/services.ts';
import { MAX_IMPORT_ROWS, type NumberedRow } from './import-source.ts';

/*
 * The rows of a plan import read from a Directus collection (`collection`, and an optional `filter` as the items API
 * takes it), through Directus's ItemsService with the caller's accountability: a collection the caller cannot read is
 * Directus's own 403, a field they cannot read too, and an item they may not see is simply not read. A row is an item
 * with each field the template names at its path, as Directus writes it (`name`, `country.name`): placeholders and
 * facts name fields of many-to-one related items that way, and a fact's name is its path.
 *
 * Items are read in pages of 1,000 by their primary key (keyset, not offset: each page costs the same however deep
 * the import is), so a collection of 100,000 items never sits in memory at once. The reads run on the import's
 * transaction, so the rows are the ones the import's own snapshot sees, and SQLite's single connection is not asked
 * for twice.
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
}

/** A collection checked against the schema: its primary key, and the fields to read. */
export interface CollectionSource extends CollectionQuery {
	primaryKey: string;
	/** The template's paths: each a field of the collection or of a many-to-one related item. A row has these columns. */
	paths: readonly string[];
	/** The related collections the paths go through, each with the fields of it they name. */
	related: ReadonlyMap<string, readonly string[]>;
}

const bad = (reason: string) => new InvalidPayloadError({ reason });

/**
 * Checks `query` and the template's field paths against the schema: an unknown collection, a system collection, a
 * path that names no field, or a path through a field that is not a many-to-one relation is a 400 naming it (a
 * template with a typo would otherwise skip every item).
 */
export function collectionSource(schema: SchemaOverview, query: CollectionQuery, paths: readonly string[]): CollectionSource {
	const overview = schema.collections[query.collection];
	if (!overview || query.collection.startsWith('directus_')) {
		throw bad(`"collection": there is no collection "${query.collection}" to import from (the name is the collection's, as in /items/${query.collection}).`);
	}
	const unknown: string[] = [];
	const related = new Map<string, string[]>();
	for (const path of paths) {
		const found = followPath(schema, query.collection, path);
		if (typeof found === 'string') unknown.push(`"${path}" (${found})`);
		else if (found.collection !== query.collection) related.set(found.collection, [...(related.get(found.collection) ?? []), found.field]);
	}
	if (unknown.length > 0) {
		const fields = Object.keys(overview.fields);
		const listed = fields.slice(0, LISTED_FIELDS).join(', ');
		const more = fields.length > LISTED_FIELDS ? `, and ${fields.length - LISTED_FIELDS} more` : '';
		throw bad(
			`The template names ${unknown.length === 1 ? 'a field' : 'fields'} that collection "${query.collection}" cannot give: ${unknown.join(', ')}. Its fields are: ${listed}${more}.`,
		);
	}
	return { ...query, primaryKey: overview.primary, paths, related };
}

/** The collection and field whose value `path` names from one item of `collection`, or why it names none. */
function followPath(schema: SchemaOverview, collection: string, path: string): { collection: string; field: string } | string {
	const segments = path.split('.');
	let current = collection;
	for (const [index, segment] of segments.entries()) {
		const field = schema.collections[current]?.fields[segment];
		if (!field) return index === 0 ? 'no such field' : `"${current}" has no field "${segment}"`;
		if (index === segments.length - 1) return field.alias ? 'a list of related items, not a value' : { collection: current, field: segment };
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
	probe(source: CollectionSource): Promise<void>;
	/** The rows, numbered, in the order of their primary key, read on `knex` (the import's transaction). */
	rows(source: CollectionSource, knex: Knex): AsyncGenerator<NumberedRow>;
}

/**
 * A reader of collections with `accountability` (a request's: never null here, which would read everything), against
 * `schema` (the request's), probing on `database`.
 */
export function collectionReader(
	services: DirectusServices,
	accountability: Accountability,
	options: { database: Knex; schema: () => Promise<SchemaOverview> },
): CollectionReader {
	const itemsOf = async (collection: string, knex: Knex) =>
		new services.services.ItemsService(collection, { schema: await options.schema(), accountability, knex });
	/** The fields read: the primary key (a page records its item's) and the template's paths. */
	const fieldsOf = (source: CollectionSource) => [...new Set([source.primaryKey, ...source.paths])];
	return {
		async probe(source) {
			const items = await itemsOf(source.collection, options.database);
			await items.readByQuery({ fields: fieldsOf(source), ...(source.filter ? { filter: source.filter } : {}), limit: 1 });
			for (const [collection, fields] of source.related) {
				await (await itemsOf(collection, options.database)).readByQuery({ fields: [...new Set(fields)], limit: 1 });
			}
		},
		async *rows(source, knex) {
			const items = await itemsOf(source.collection, knex);
			const key = source.primaryKey;
			let number = 0;
			let after: unknown = undefined;
			for (;;) {
				const page = after === undefined ? null : { [key]: { _gt: after } };
				const filter = source.filter && page ? { _and: [source.filter, page] } : (source.filter ?? page);
				const found = (await items.readByQuery({ fields: fieldsOf(source), ...(filter ? { filter } : {}), sort: [key], limit: PAGE })) as Record<string, unknown>[];
				for (const item of found) {
					if (++number > MAX_IMPORT_ROWS) throw bad(`The collection gives more than ${MAX_IMPORT_ROWS} items; at most ${MAX_IMPORT_ROWS} are allowed in one import (narrow it with "filter").`);
					yield { number, row: rowOf(item, source.paths), columns: source.paths, item: itemKeyOf(item, key) };
				}
				if (found.length < PAGE) return;
				after = found.at(-1)![key];
			}
		},
	};
}

/**
 * An item as a row: each path's value, found through the related items (null where a relation is empty). A value
 * that is itself an object or a list (a JSON field) is kept as its JSON text: a row's values are flat.
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

/** An item's primary key as its page records it (`source_item`), or null. */
function itemKeyOf(item: Record<string, unknown>, primaryKey: string): string | null {
	const key = item[primaryKey];
	return key === null || key === undefined ? null : String(key);
}
