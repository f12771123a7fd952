import type { Knex } from 'knex';
import { jsonFromDb, jsonParameter, vendorOf } from '../shared/database.ts';
import { WEBSITES } from '../websites/website-store.ts';
import type { ImportTemplate } from './import-template.ts';

/*
 * A website's followed collection (`pseo.data_source`) and the state of its following (`pseo.data_source_state`),
 * with the three hidden columns that make a noticed change durable and shared by every instance:
 *
 * - `source_sync_due`: epoch ms at which the gathered changes are synced. The first change noticed sets it to
 *   now + PSEO_SOURCE_SYNC_DELAY_MS and the later ones keep it, so a burst of changes is one sync.
 * - `source_sync_seq`: a counter every noticed change raises. A sync clears `due` only if the counter is the one it
 *   read when it began; a change noticed during the sync leaves `due` set, and the next sweep syncs again.
 * - `source_sync_lease`: epoch ms until which one instance holds the website's sync (claimed by a conditional
 *   UPDATE, as jobs are), so that each change is applied once however many instances noticed it.
 */

/** What a website follows: a collection import that its changes run again. */
export interface DataSource {
	collection: string;
	filter: Record<string, unknown> | null;
	template: ImportTemplate;
	source: string;
	language_code: string;
	/** The related collections the template's paths go through, with the fields of each it names. */
	related: Record<string, string[]>;
}

/** What one sync of a followed collection did. */
export interface SourceSyncSummary {
	/** `import`: a POST /plan/import with `follow: true`; `follow`: a sync the collection's changes started. */
	trigger: 'import' | 'follow';
	added: number;
	updated: number;
	unchanged: number;
	retired: number;
	/** New items whose pages the owner's balance or caps did not cover: added at a later sync. */
	waiting: number;
}

/** `pseo.data_source_state`, readable through the items API and shown in the app. */
export interface DataSourceState {
	status: 'following' | 'stopped';
	collection: string;
	/** When the import that began the following began (ISO): a write since may not have been read by it. */
	since: string;
	syncs: number;
	last_sync_at: string | null;
	last_sync: SourceSyncSummary | null;
	/** New items waiting for the owner's balance or caps, as of the last sync. */
	waiting: number;
	/** Why the following stopped, or the last sync failed (it is tried again); null when all is well. */
	last_error: string | null;
	stopped_at: string | null;
}

/** The stored `data_source`, or null when the website follows nothing (or the value is not one). */
function dataSourceOf(value: unknown): DataSource | null {
	const source = jsonFromDb<Partial<DataSource> | null>(value, null);
	if (!source || typeof source !== 'object' || typeof source.collection !== 'string' || typeof source.source !== 'string') return null;
	if (!source.template || typeof source.template !== 'object' || typeof source.language_code !== 'string') return null;
	return { filter: null, related: {}, ...source } as DataSource;
}

/** What a website follows now, and the state of its following. */
async function readFollowing(knex: Knex, pseoId: number): Promise<{ source: DataSource | null; state: DataSourceState | null }> {
	const row = (await knex(WEBSITES).where('id', pseoId).first('data_source', 'data_source_state')) as { data_source: unknown; data_source_state: unknown } | undefined;
	return { source: dataSourceOf(row?.data_source), state: jsonFromDb<DataSourceState | null>(row?.data_source_state, null) };
}

/** The columns of a sync waiting or running, cleared when a following stops. */
const NO_SYNC = { source_sync_due: null, source_sync_lease: null, source_sync_keys: null };

/** A following's state once it stopped, `reason` being why (null: someone stopped it). */
const stopped = (state: DataSourceState, reason: string | null): DataSourceState => ({ ...state, status: 'stopped', last_error: reason, stopped_at: new Date().toISOString() });

/**
 * In an import's transaction: the import was a sync of `source` with `follow: true` (a new following, or a sync of
 * one): `data_source` is set and the state counts the sync. A sync the following started itself records nothing when
 * the following was stopped while it ran (`data_source` cleared through the items API): a stop is not undone by it.
 */
export async function recordSourceSync(trx: Knex.Transaction, pseoId: number, source: DataSource, summary: SourceSyncSummary, startedAt: string): Promise<void> {
	const now = new Date().toISOString();
	const { source: current, state: previous } = await readFollowing(trx, pseoId);
	if (summary.trigger === 'follow' && !current) return;
	const continuing = previous?.status === 'following' && previous.collection === source.collection;
	const state: DataSourceState = {
		status: 'following',
		collection: source.collection,
		since: continuing ? previous.since : startedAt,
		syncs: (continuing ? previous.syncs : 0) + 1,
		last_sync_at: now,
		last_sync: summary,
		waiting: summary.waiting,
		last_error: null,
		stopped_at: null,
	};
	await trx(WEBSITES)
		.where('id', pseoId)
		.update({ data_source: jsonParameter(source), data_source_state: jsonParameter(state) });
}

/**
 * Stops a website's following, with why (`reason`), in `knex` (a transaction or not): `data_source` is cleared and
 * any change waiting to be synced is dropped; the state keeps what was followed and the reason. A website that
 * follows nothing is left alone.
 */
export async function stopFollowing(knex: Knex, pseoId: number, reason: string | null): Promise<void> {
	const { state } = await readFollowing(knex, pseoId);
	await knex(WEBSITES)
		.where('id', pseoId)
		.whereNotNull('data_source')
		.update({ data_source: null, data_source_state: state ? jsonParameter(stopped(state, reason)) : null, ...NO_SYNC });
}

/**
 * After `data_source` was cleared through the items API: the state says the following stopped (by whom is in
 * Directus's activity), and no sync waits any more.
 */
export async function followingCleared(knex: Knex, pseoIds: readonly number[]): Promise<void> {
	for (const pseoId of pseoIds) {
		const { state } = await readFollowing(knex, pseoId);
		const now = state?.status === 'following' ? stopped(state, null) : state;
		await knex(WEBSITES)
			.where('id', pseoId)
			.whereNull('data_source')
			.update({ data_source_state: now ? jsonParameter(now) : null, ...NO_SYNC });
	}
}

/** Records on the following's state an error that did not stop it (the sync is tried again). */
export async function recordSourceError(knex: Knex, pseoId: number, error: string): Promise<void> {
	const { state } = await readFollowing(knex, pseoId);
	if (!state) return;
	await knex(WEBSITES).where('id', pseoId).update({ data_source_state: jsonParameter({ ...state, last_error: error }) });
}

/** A website that follows a collection: what it follows, and since when (epoch ms). */
export interface Following {
	pseoId: number;
	ownerId: string;
	source: DataSource;
	since: number;
}

/** The websites that follow a collection. */
export async function readFollowings(knex: Knex): Promise<Following[]> {
	const rows = (await knex(WEBSITES).whereNotNull('data_source').select('id', 'backend_user_id', 'data_source', 'data_source_state')) as {
		id: number;
		backend_user_id: string;
		data_source: unknown;
		data_source_state: unknown;
	}[];
	return rows.flatMap((row) => {
		const source = dataSourceOf(row.data_source);
		const since = Date.parse(jsonFromDb<Partial<DataSourceState> | null>(row.data_source_state, null)?.since ?? '');
		return source ? [{ pseoId: Number(row.id), ownerId: row.backend_user_id, source, since: Number.isFinite(since) ? since : 0 }] : [];
	});
}

/**
 * What a sync must read again: the items whose keys changed, or everything (`full`: a related item changed, a
 * following arrived, or too many keys gathered for a list to be cheaper than the whole).
 */
interface ChangedItems {
	full: boolean;
	items: string[];
}

/** Changed keys kept at most per website; beyond them the next sync reads the whole collection. */
const MAX_CHANGED_KEYS = 5000;

/** A website's noted changes. */
export interface SourceChange {
	pseoId: number;
	full: boolean;
	items: readonly string[];
}

function changedItemsOf(value: unknown): ChangedItems | null {
	const keys = jsonFromDb<Partial<ChangedItems> | null>(value, null);
	if (!keys || typeof keys !== 'object') return null;
	return { full: keys.full === true, items: Array.isArray(keys.items) ? keys.items.map(String) : [] };
}

/**
 * Notes changes of the data of websites: each website's changed keys are merged into those waiting, its counter
 * raised, and its due time set unless one is set already (the changes gather until then), in one transaction per
 * website. Websites that no longer follow anything are left alone.
 */
export async function markSourcesDue(knex: Knex, changes: readonly SourceChange[], delayMs: number): Promise<void> {
	for (const change of changes) {
		await knex.transaction(async (trx) => {
			// FOR NO KEY UPDATE on PostgreSQL: a running sync's page inserts hold key-share locks on the website's row
			// (their foreign key), which FOR UPDATE would wait for until the sync commits.
			const locked = trx(WEBSITES).where('id', change.pseoId).whereNotNull('data_source');
			const row = (await (vendorOf(trx) === 'postgres' ? locked.forNoKeyUpdate() : locked.forUpdate()).first('source_sync_keys')) as { source_sync_keys: unknown } | undefined;
			if (!row) return;
			const waiting = changedItemsOf(row.source_sync_keys) ?? { full: false, items: [] };
			const items = new Set([...waiting.items, ...change.items]);
			const full = waiting.full || change.full || items.size > MAX_CHANGED_KEYS;
			await trx(WEBSITES)
				.where('id', change.pseoId)
				.update({
					source_sync_keys: jsonParameter({ full, items: full ? [] : [...items] }),
					source_sync_seq: trx.raw('coalesce(source_sync_seq, 0) + 1'),
					source_sync_due: trx.raw('coalesce(source_sync_due, ?)', [Date.now() + delayMs]),
				});
		});
	}
}

/** The websites of these users that follow a collection with new items waiting for their balance. */
export async function followingsWaitingFor(knex: Knex, userIds: readonly string[]): Promise<number[]> {
	if (userIds.length === 0) return [];
	const rows = (await knex(WEBSITES).whereIn('backend_user_id', userIds).whereNotNull('data_source').select('id', 'data_source_state')) as { id: number; data_source_state: unknown }[];
	return rows.filter((row) => (jsonFromDb<Partial<DataSourceState> | null>(row.data_source_state, null)?.waiting ?? 0) > 0).map((row) => Number(row.id));
}

/** Websites whose gathered changes are due and that no instance holds, the longest waiting first. */
export async function findDueSources(knex: Knex, now: number, limit: number): Promise<number[]> {
	const rows = (await knex(WEBSITES)
		.where('source_sync_due', '<=', now)
		.andWhere((query) => query.whereNull('source_sync_lease').orWhere('source_sync_lease', '<', now))
		.orderBy('source_sync_due')
		.limit(limit)
		.select('id')) as { id: number }[];
	return rows.map((row) => Number(row.id));
}

/** A claimed website's sync: what to sync, for whom, and the counter it began at. */
export interface ClaimedSourceSync {
	pseoId: number;
	/** The lease's value as this claim last set it: renewals and the release touch the row only while it holds. */
	lease: number;
	ownerId: string;
	seq: number;
	source: DataSource | null;
	/** What to read again. */
	changed: ChangedItems;
}

/** Claims the due sync of `pseoId` for `leaseMs`; null when it is not due or another instance holds it. */
export async function claimSourceSync(knex: Knex, pseoId: number, leaseMs: number): Promise<ClaimedSourceSync | null> {
	const now = Date.now();
	const lease = now + leaseMs;
	const claimed = await knex(WEBSITES)
		.where('id', pseoId)
		.andWhere('source_sync_due', '<=', now)
		.andWhere((query) => query.whereNull('source_sync_lease').orWhere('source_sync_lease', '<', now))
		.update({ source_sync_lease: lease });
	if (claimed !== 1) return null;
	const row = (await knex(WEBSITES).where('id', pseoId).first('backend_user_id', 'source_sync_seq', 'data_source', 'source_sync_keys', 'data_source_state')) as
		| { backend_user_id: string; source_sync_seq: unknown; data_source: unknown; source_sync_keys: unknown; data_source_state: unknown }
		| undefined;
	if (!row) return null;
	// Due without a record of what changed (a retry): all of it. Items waiting for the owner's balance are among
	// no changed keys: while some wait, each sync reads everything, so that it finds them.
	const waiting = jsonFromDb<Partial<DataSourceState> | null>(row.data_source_state, null)?.waiting ?? 0;
	const changed = waiting > 0 ? { full: true, items: [] } : (changedItemsOf(row.source_sync_keys) ?? { full: true, items: [] });
	return { pseoId, lease, ownerId: row.backend_user_id, seq: Number(row.source_sync_seq ?? 0), source: dataSourceOf(row.data_source), changed };
}

/** Keeps a long sync's lease; false when it is no longer this claim's (it lapsed and was taken, or was cleared). */
export async function renewSourceLease(knex: Knex, claim: ClaimedSourceSync, leaseMs: number): Promise<boolean> {
	const lease = Math.max(Date.now() + leaseMs, claim.lease + 1);
	const held = (await knex(WEBSITES).where({ id: claim.pseoId, source_sync_lease: claim.lease }).update({ source_sync_lease: lease })) === 1;
	if (held) claim.lease = lease;
	return held;
}

/**
 * Ends a claimed sync: `due` is cleared when no change came in since it began (the counter is `seq`), else kept,
 * and the next sweep syncs again. `retryInMs` instead puts the sync off (a failure that may pass).
 */
export async function releaseSourceSync(knex: Knex, claim: ClaimedSourceSync, retryInMs: number | null = null): Promise<void> {
	const held = { id: claim.pseoId, source_sync_lease: claim.lease };
	if (retryInMs !== null) {
		await knex(WEBSITES).where(held).update({ source_sync_due: Date.now() + retryInMs, source_sync_lease: null });
		return;
	}
	const cleared = await knex(WEBSITES).where({ ...held, source_sync_seq: claim.seq }).update({ source_sync_due: null, source_sync_lease: null, source_sync_keys: null });
	if (cleared === 0) await knex(WEBSITES).where(held).update({ source_sync_lease: null });
}
