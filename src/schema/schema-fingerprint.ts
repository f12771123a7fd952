import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import manifest from '../../package.json' with { type: 'json' };
import { vendorOf } from '../shared/database.ts';

/** The hidden one-row collection that holds the fingerprint of the last completed schema install. */
export const SCHEMA_STATE = 'pseo_schema_state';
const ROW_ID = 'install';

/** What the fingerprint covers: the extension's snapshot, as far as the install reads it. */
export interface SnapshotScope {
	collections: { collection: string }[];
	fields: { collection: string; field: string }[];
}

/**
 * A digest of everything the schema install's outcome depends on, read with a handful of small queries instead of
 * Directus's whole-database snapshot (which reads every column of every table, then sorts it deeply: most of the
 * install's cost at each start, and more on a database with many collections of its own):
 * - the extension's version (a release may install differently) and its snapshot, and the database vendor;
 * - Directus's migrations, which stand for its version: an upgrade that changes the system tables migrates them;
 * - the rows of `directus_collections`, `directus_fields` and `directus_relations` that describe the extension's
 *   collections and fields (whatever an admin or another replica edited), the columns of those rows included;
 * - the columns of the extension's tables, and of its fields on system tables, as the database reports them.
 * An equal fingerprint means the schema is as the last completed install left it: nothing is missing, and the whole
 * check could only apply again what that install applied (Directus's diff does not always settle: on 12.4, a check
 * after the install that created the collections reported every collection's presentation again).
 */
export async function schemaFingerprint(database: Knex, snapshot: SnapshotScope): Promise<string> {
	const collections = [...new Set([...snapshot.collections.map((entry) => entry.collection), SCHEMA_STATE])].sort();
	const foreignFields = snapshot.fields.filter((entry) => !collections.includes(entry.collection));
	const [migrations, collectionRows, fieldRows, relationRows, columns, foreignColumns] = await Promise.all([
		database('directus_migrations').select('version').orderBy('version'),
		database('directus_collections').select('*').whereIn('collection', collections).orderBy('collection'),
		database('directus_fields')
			.select('*')
			.where((query) => {
				query.whereIn('collection', collections);
				for (const entry of foreignFields) query.orWhere({ collection: entry.collection, field: entry.field });
			})
			.orderBy(['collection', 'field']),
		database('directus_relations').select('*').whereIn('many_collection', collections).orWhereIn('one_collection', collections).orderBy('id'),
		Promise.all(collections.map(async (table) => [table, await columnsOf(database, table)] as const)),
		Promise.all(foreignFields.map(async (entry) => [`${entry.collection}.${entry.field}`, (await columnsOf(database, entry.collection))[entry.field] ?? null] as const)),
	]);
	return createHash('sha256')
		.update(JSON.stringify({ version: manifest.version, snapshot, vendor: vendorOf(database), migrations, collectionRows, fieldRows, relationRows, columns, foreignColumns }))
		.digest('hex');
}

/**
 * A table's columns as Knex reads them from the database's catalog, by name (the catalog's order is not promised);
 * none when the table is missing.
 */
async function columnsOf(database: Knex, table: string): Promise<Record<string, unknown>> {
	const columns = (await database(table).columnInfo()) as Record<string, unknown>;
	return Object.fromEntries(Object.entries(columns).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The fingerprint the last completed install stored, or null (a first start, or an install from before it was kept). */
export async function storedFingerprint(database: Knex): Promise<string | null> {
	try {
		const row = (await database(SCHEMA_STATE).select('fingerprint').where('id', ROW_ID).first()) as { fingerprint?: string } | undefined;
		return row?.fingerprint ?? null;
	} catch {
		// The collection is missing until the first install creates it.
		return null;
	}
}

/** Keeps `fingerprint` as that of the last completed install; replicas that finish together each write their own. */
export async function storeFingerprint(database: Knex, fingerprint: string): Promise<void> {
	await database(SCHEMA_STATE).insert({ id: ROW_ID, fingerprint }).onConflict('id').merge(['fingerprint']);
}
