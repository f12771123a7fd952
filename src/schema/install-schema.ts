import type { Knex } from 'knex';
import snapshot from '../../snapshots/pseo-schema.json' with { type: 'json' };
import type { ServiceContext } from '../shared/services.ts';
import type { Logger } from '../shared/logger.ts';
import { arrayLiteral, vendorOf } from '../shared/database.ts';
import { systemServiceOptions } from '../shared/system-context.ts';
import { JOBS } from '../engine/job-store.ts';
import { POSTS } from '../posts/post-store.ts';
import { BANDS_TABLE } from '../quality/similarity-index.ts';
import { PLAN_PAGES } from '../plan/plan-page-store.ts';
import { PARTS } from '../engine/part-store.ts';
import { JOB_ROUTES } from '../engine/job-route-store.ts';
import { PUBLICATIONS } from '../publishing/publication-store.ts';
import { IDEMPOTENCY_KEYS } from '../idempotency/idempotency-store.ts';
import { snapshotForHost } from '../shared/host-compat.ts';
import { schemaFingerprint, storedFingerprint, storeFingerprint } from './schema-fingerprint.ts';

interface DiffEntry {
	collection: string;
	field?: string;
	diff: { kind: string; path?: (string | number)[] }[];
}

interface SnapshotDiff {
	collections: DiffEntry[];
	fields: DiffEntry[];
	systemFields?: DiffEntry[];
	relations: DiffEntry[];
}

export interface InstallReport {
	created: string[];
	refreshed: string[];
	skipped: string[];
	/** True when the schema's fingerprint matched the last completed install's, and Directus's snapshot was not read. */
	unchanged: boolean;
}

/**
 * Applies snapshots/pseo-schema.json to the running Directus, additively: it creates missing collections,
 * fields and relations and refreshes their presentation (meta), but never deletes anything and never alters
 * an existing column, so it is safe on a customer's database with other collections, on any vendor, and on
 * every start. Column-level differences (a vendor's data_type spelling, say) are reported, not applied.
 */
export async function installSchema(context: ServiceContext): Promise<InstallReport> {
	const { database, logger } = context;
	// Most starts find the schema as the last one left it: its fingerprint says so without Directus's snapshot. A
	// fingerprint that cannot be read is no reason to stop a start: the whole check runs instead.
	const before = await schemaFingerprint(database, snapshot).catch((error: unknown) => {
		logger.debug({ err: error }, 'pseo schema: no fingerprint of the schema; checking all of it');
		return null;
	});
	if (before !== null && before === (await storedFingerprint(database))) return { created: [], refreshed: [], skipped: [], unchanged: true };
	const report = await applySnapshot(context);
	// Read again after the apply: the fingerprint is that of the schema the install left, which the next start compares.
	await storeFingerprint(database, await schemaFingerprint(database, snapshot)).catch((error: unknown) =>
		logger.warn({ err: error }, 'pseo schema: the install\'s fingerprint could not be stored; the next start checks the whole schema again'),
	);
	return report;
}

/** Diffs the extension's snapshot against Directus's own snapshot of the database and applies what is additive. */
async function applySnapshot(context: ServiceContext): Promise<InstallReport> {
	const { services, database, logger } = context;
	// Installing a schema needs admin rights; no user is involved at start-up (see system-context.ts).
	const service = new services.SchemaService(systemServiceOptions(database, undefined, { admin: true }));
	const current = await service.snapshot();
	const desired = snapshotForHost(snapshot, (current as { directus: string }).directus);
	const diff = (await service.diff(desired, { currentSnapshot: current, force: true, mode: 'merge' })) as SnapshotDiff | null;
	const report: InstallReport = { created: [], refreshed: [], skipped: [], unchanged: false };
	if (!diff) return report;

	// New entities are created whole; for existing ones only presentation (meta) changes are kept.
	const additive = (entries: DiffEntry[]): DiffEntry[] =>
		entries.flatMap((entry) => {
			const name = entry.field ? `${entry.collection}.${entry.field}` : entry.collection;
			const first = entry.diff[0];
			if (first?.kind === 'N' && !first.path) {
				report.created.push(name);
				return [entry];
			}
			// Only edits of existing meta keys: Directus's applyDiff reads an entry whose first change is a deletion
			// (even of a nested meta key) as "delete this collection/field/relation", and one whose first change
			// is an addition as "create it".
			const meta = entry.diff.filter((change) => change.path?.[0] === 'meta' && (change.kind === 'E' || change.kind === 'A'));
			if (meta.length < entry.diff.length) report.skipped.push(name);
			if (meta.length === 0) return [];
			report.refreshed.push(name);
			return [{ ...entry, diff: meta }];
		});
	const filtered: SnapshotDiff = {
		collections: additive(diff.collections),
		fields: additive(diff.fields),
		systemFields: [],
		relations: additive(diff.relations),
	};
	if (filtered.collections.length + filtered.fields.length + filtered.relations.length > 0) {
		const hash = service.getHashedSnapshot(current).hash;
		await service.apply({ hash, diff: filtered });
	}
	if (report.skipped.length > 0) {
		logger.debug({ skipped: report.skipped }, 'pseo schema: column-level differences left as they are');
	}
	return report;
}

/** The job routes' index by state, superseded on PostgreSQL by a partial index of the failed ones (ensureIndexes). */
const JOB_ROUTES_BY_STATE = 'pseo_generation_routes_state';

/** Single-column foreign-key indexes that a composite index below makes redundant (see ensureIndexes). */
const REDUNDANT_INDEXES = [
	`${BANDS_TABLE}_pseo_id_index`,
	`${POSTS}_pseo_id_index`,
	`${PLAN_PAGES}_pseo_id_index`,
	`${JOB_ROUTES}_generation_id_index`,
];

/**
 * Indexes a Directus snapshot cannot express. The unique (pseo_id, route) key makes storing a generated page
 * idempotent: a resumed or retried job can never write a second post for a route. The band indexes make the
 * quality gate's near-duplicate lookup, and the re-indexing of a rewritten post, index scans. One row per part
 * of a bulk job: two workers can never both store the same part. One row per Idempotency-Key of a user on a route:
 * a concurrent twin of a keyed request fails on it. One row per position of a job's routes, found by
 * route (an outcome), and the failed ones by route among them: a partial index, which the trigger's rows, all
 * `queued`, never write to. It replaced an index of (generation_id, state) that every route row wrote at the
 * trigger and again at each change of state (100,000 rows like the trigger's, inserted in psql into copies of the
 * table without its foreign key: 717 ms with it, 540 ms without). That is PostgreSQL's: MySQL has no partial
 * indexes, and SQLite's planner was not measured, so both keep the index of (generation_id, state).
 *
 * The single-column indexes Directus once made for four of these foreign keys are dropped: each is the prefix of
 * a composite index above, so it only costs writes, and it is a trap for PostgreSQL's planner. While a bulk job
 * outruns autovacuum, the planner takes `pseo_id = ? AND band_key IN (...)` through the `pseo_id` index alone and
 * filters every row of the website, which made each chunk's lookup grow with the website. The snapshot no longer
 * asks for them. MySQL keeps its own: a foreign key there needs an index, and it names it itself.
 */
export async function ensureIndexes(knex: Knex, logger?: Logger): Promise<void> {
	const vendor = vendorOf(knex);
	const indexes: IndexSpec[] = [
		{ name: 'pseo_posts_pseo_route_unique', unique: true, on: `${POSTS} (pseo_id, route)` },
		{ name: 'pseo_generations_status_lease', on: `${JOBS} (status, lease_expires_at)` },
		// The publication sweep looks for ended refresh jobs that owe a republish at every tick (publishing/republish.ts).
		{ name: 'pseo_generations_republish', on: `${JOBS} (republish_pending, status)` },
		{ name: 'pseo_plan_pages_pseo_route_unique', unique: true, on: `${PLAN_PAGES} (pseo_id, route)` },
		{ name: 'pseo_plan_pages_next', on: `${PLAN_PAGES} (pseo_id, has_post, priority)` },
		// A followed collection's sync finds the pages of its changed items by their key (following/source-follower.ts).
		{ name: 'pseo_plan_pages_source_item', on: `${PLAN_PAGES} (pseo_id, source_item)` },
		{ name: 'pseo_post_bands_lookup', on: `${BANDS_TABLE} (pseo_id, band_key)` },
		{ name: 'pseo_post_bands_route', on: `${BANDS_TABLE} (pseo_id, route)` },
		{ name: 'pseo_generation_parts_unique', unique: true, on: `${PARTS} (generation_id, part)` },
		{ name: 'pseo_generation_routes_position', unique: true, on: `${JOB_ROUTES} (generation_id, position)` },
		{ name: 'pseo_generation_routes_route', on: `${JOB_ROUTES} (generation_id, route)` },
		{ name: 'pseo_publications_status_lease', on: `${PUBLICATIONS} (status, lease_expires_at)` },
		{ name: 'pseo_idempotency_keys_unique', unique: true, on: `${IDEMPOTENCY_KEYS} (user_id, scope, idempotency_key)` },
		{ name: 'pseo_idempotency_keys_expiry', on: `${IDEMPOTENCY_KEYS} (expires_at)` },
		vendor === 'postgres'
			? { name: 'pseo_generation_routes_failed', on: `${JOB_ROUTES} (generation_id, route) WHERE state = 'failed'` }
			: { name: JOB_ROUTES_BY_STATE, on: `${JOB_ROUTES} (generation_id, state)` },
	];
	if (vendor === 'postgres' && (await hasIndexBuildProgress(knex))) return ensurePostgresIndexes(knex, indexes, logger);
	if (vendor === 'mysql') {
		// MySQL has no CREATE INDEX IF NOT EXISTS; a duplicate-key-name error means the index is there.
		for (const index of indexes) {
			await knex.raw(createIndexSql(index).replace(' IF NOT EXISTS', '')).catch((error: { errno?: number }) => {
				if (error.errno !== 1061) throw error;
			});
		}
		return;
	}
	// SQLite, and PostgreSQL before 12 or CockroachDB (which builds indexes online anyway): plain statements.
	for (const index of indexes) await knex.raw(createIndexSql(index));
	for (const name of vendor === 'postgres' ? [...REDUNDANT_INDEXES, JOB_ROUTES_BY_STATE] : REDUNDANT_INDEXES) await knex.raw(`DROP INDEX IF EXISTS ${name}`);
}

/** PostgreSQL 12 or later, not CockroachDB: REINDEX CONCURRENTLY and the view of index builds in progress exist. */
async function hasIndexBuildProgress(knex: Knex): Promise<boolean> {
	if (String((knex.client as { config?: { client?: unknown } }).config?.client) === 'cockroachdb') return false;
	return (await postgresVersion(knex)) >= 120000;
}

/** The PostgreSQL server's `server_version_num` (140005 for 14.5); CockroachDB reports one of its own. */
async function postgresVersion(knex: Knex): Promise<number> {
	const server = (await knex.raw(`SELECT current_setting('server_version_num')::int AS version`)) as { rows: { version: number }[] };
	return Number(server.rows[0]?.version ?? 0);
}

interface IndexSpec {
	name: string;
	unique?: boolean;
	/** The table, the columns and any predicate. */
	on: string;
}

function createIndexSql(index: IndexSpec, concurrently = false): string {
	return `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${index.name} ON ${index.on}`;
}

/**
 * PostgreSQL's indexes without blocking the tables' writers. A plain CREATE INDEX holds a SHARE lock on its table
 * while it builds, and even when the index exists (IF NOT EXISTS) it waits for that lock behind any open write:
 * an upgrade that adds an index to a table of millions of job routes would stop every instance's ingest for the
 * whole build. So the catalog is read first and only what is missing is built, CONCURRENTLY, which lets writes go
 * on. A concurrent build that died (a killed instance) leaves an invalid index, which is still written to but
 * never read: it is rebuilt with REINDEX CONCURRENTLY (PostgreSQL 12 and later, which Directus requires), which
 * swaps in the new index without a moment without one, unless another session is building it right now. Two
 * instances starting together may both try one build: the loser's error is retried by the caller, and then finds
 * the index.
 *
 * A REINDEX CONCURRENTLY that dies (a killed instance, a cancelled statement) leaves its own invalid index beside
 * the one it rebuilt, `<name>_ccnew` (or `_ccold`, when it died while swapping them), and the next one would leave
 * `<name>_ccnew1`: each is written to by every insert and read by nothing. Those of our indexes are dropped first,
 * unless a build runs on their table right now (it may be the one they belong to).
 */
async function ensurePostgresIndexes(knex: Knex, indexes: readonly IndexSpec[], logger?: Logger): Promise<void> {
	const names = [...indexes.map((index) => index.name), ...REDUNDANT_INDEXES, JOB_ROUTES_BY_STATE];
	const leftover = new RegExp(`^(${indexes.map((index) => index.name).join('|')})_cc(new|old)[0-9]*$`);
	const found = (await knex.raw(
		`SELECT c.relname AS name, i.indisvalid AS valid,
			EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.index_relid = c.oid) AS building,
			EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.relid = i.indrelid) AS table_building
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) AND (c.relname = ANY(?) OR c.relname LIKE 'pseo%\\_cc%')`,
		[arrayLiteral(names)],
	)) as { rows: { name: string; valid: boolean; building: boolean; table_building: boolean }[] };
	for (const row of found.rows) {
		if (!leftover.test(row.name) || row.valid || row.table_building) continue;
		logger?.info({ index: row.name }, 'pseo: dropping the invalid index an interrupted REINDEX CONCURRENTLY left');
		await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${row.name}`);
	}
	const present = new Map(found.rows.map((row) => [row.name, row]));
	for (const index of indexes) {
		const state = present.get(index.name);
		if (state && (state.valid || state.building)) continue;
		// A concurrent build first waits for every transaction open before it, anywhere in the database: say so, in
		// case start-up then waits on a session left open.
		logger?.info({ index: index.name }, 'pseo: building an index concurrently; start-up continues once transactions open before it end');
		await knex.raw(state ? `REINDEX INDEX CONCURRENTLY ${index.name}` : createIndexSql(index, true));
	}
	for (const name of [...REDUNDANT_INDEXES, JOB_ROUTES_BY_STATE]) {
		if (present.has(name)) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
	}
}

/**
 * PostgreSQL compresses a row's long values (once the row passes about 2 kB) as it stores them, with pglz unless
 * a column says otherwise. A bulk ingest stores a body for every page: 20,000 texts of 5 kB took 530 to 645 ms
 * with pglz and 205 to 220 ms with LZ4, which also reads back faster (timed in psql on one machine). New bodies are
 * written with LZ4 where the server was built with it (PostgreSQL 14 and later; Debian's packages are); bodies
 * already stored stay as they are and read the same.
 *
 * Best effort, and never in the way of start-up: the ALTER takes an ACCESS EXCLUSIVE lock on the posts table, so
 * it runs only while the column is not LZ4 yet, waits at most 2 s for that lock (a long export or another
 * instance's ingest holds it off until a later start-up), and any failure is a warning. Servers that report a
 * version before 14, as CockroachDB does, are left alone.
 */
export async function compressPostBodies(knex: Knex, logger: Logger): Promise<void> {
	if (vendorOf(knex) !== 'postgres') return;
	try {
		if ((await postgresVersion(knex)) < 140000) return;
		const setting = (await knex.raw(`SELECT 'lz4' = ANY(enumvals) AS available FROM pg_settings WHERE name = 'default_toast_compression'`)) as {
			rows: { available: boolean }[];
		};
		if (!setting.rows[0]?.available) return;
		const column = (await knex.raw(`SELECT attcompression AS compression FROM pg_attribute WHERE attrelid = ?::regclass AND attname = 'body'`, [POSTS])) as {
			rows: { compression: string }[];
		};
		if (column.rows[0]?.compression === 'l') return;
		await knex.transaction(async (trx) => {
			await trx.raw(`SET LOCAL lock_timeout = '2s'`);
			await trx.raw('ALTER TABLE ?? ALTER COLUMN ?? SET COMPRESSION lz4', [POSTS, 'body']);
		});
	} catch (error) {
		logger.warn({ err: error }, 'pseo: post bodies keep their compression for now (LZ4 not set); the next start-up tries again');
	}
}
