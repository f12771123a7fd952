import type { PseoConfig } from '../config/config.ts';
import { ownerAccountability, OwnerUnavailableError } from '../access/owner-accountability.ts';
import { collectionReader } from '../plan/collection-rows.ts';
import {
	claimSourceSync,
	findDueSources,
	followingsWaitingFor,
	markSourcesDue,
	readFollowings,
	recordSourceError,
	releaseSourceSync,
	renewSourceLease,
	stopFollowing,
	type ClaimedSourceSync,
	type DataSource,
} from '../plan/data-source-store.ts';
import { importPlan, type ImportDeps } from '../plan/import-plan.ts';
import type { RetiredPages } from '../plan/plan-sync.ts';
import type { ServiceContext } from '../shared/services.ts';
import { retryConflicts } from '../shared/transaction.ts';
import { FollowedCollections, type ItemWrite } from './followed-collections.ts';
import { notifyOwner } from './owner-notice.ts';

/*
 * Follows the collections websites import from (`POST /plan/import` with `follow: true`), on every instance:
 *
 * 1. Directus announces each write of items (`items.create/update/delete` actions, on the instance that wrote). The
 *    websites a write concerns are found in memory (followed-collections.ts), gathered for a moment and noted in
 *    ONE update (data-source-store.ts `markSourcesDue`), so that the change is durable and every instance sees it.
 * 2. Each instance looks for due websites at least every second, claims one with a lease, and runs the import again
 *    as a `sync` with the owner's accountability: the same code, the same transaction, charge and retirements as an
 *    import a user asks for, except that new pages the owner's balance or caps do not cover wait for a later sync.
 * 3. What cannot be read any more (the owner lost access, the collection or a field is gone) stops the following,
 *    with the reason on the website and a notification to the owner; anything else is tried again later.
 *
 * A change is applied once: the sync that runs clears the due time only when no change came in meanwhile.
 * An action Directus fires inside a write's transaction (an array PATCH, a file import) is noted before that write
 * commits; the delay gives it time to, and a change noted during a sync makes the next sweep sync again.
 */

/**
 * Writes gathered this long before they are noted: the actions of one request (an array POST fires one per item)
 * come within it, and are one transaction per website.
 */
const GATHER_MS = 5;
/** Due websites claimed per sweep by one instance; the others are left to the next sweep or to other instances. */
const CLAIM_BATCH = 4;
/**
 * How often an instance looks for due syncs and followings started elsewhere: every second, whatever the jobs' sweep
 * interval (a due sync of this instance's own changes is looked for at once, see #flush).
 */
const TICK_MS = 1000;
/** Changes that could not be noted are noted again after this. */
const RETRY_NOTE_MS = 1000;
/** A sync that failed for a reason that may pass (a plan lock held, a database hiccup) is tried again after this. */
const RETRY_MIN_MS = 10_000;

export interface SourceFollowerOptions {
	context: ServiceContext;
	config: PseoConfig;
	/** Page URLs the website's sitemap lists (as for an import). */
	siteRoutes: ImportDeps['siteRoutes'];
	/** A sync's retired pages, queued for takedown in its transaction (given by the hook: plan may not import publishing). */
	onRetired: RetiredPages;
}

export class SourceFollower {
	readonly #context: ServiceContext;
	readonly #config: PseoConfig;
	readonly #options: SourceFollowerOptions;
	#followed = new FollowedCollections();
	/** When this instance last saw a write of each collection (any collection: a following may arrive after it). */
	readonly #lastWrite = new Map<string, number>();
	/** Changes noticed and not yet noted, per website. */
	#pending = new Map<number, { full: boolean; items: Set<string> }>();
	#gather: NodeJS.Timeout | null = null;
	#timer: NodeJS.Timeout | null = null;
	#sweeping: Promise<void> | null = null;
	/** A kick came during a sweep: another follows it (a due sync must not wait for the next tick). */
	#again = false;
	#running = new Set<Promise<void>>();
	#stopping = false;

	constructor(options: SourceFollowerOptions) {
		this.#context = options.context;
		this.#config = options.config;
		this.#options = options;
	}

	start(): void {
		if (this.#timer || this.#stopping) return;
		this.#timer = setInterval(() => this.kick(), TICK_MS);
		this.#timer.unref();
		this.kick();
	}

	/** An items action of Directus: notes the websites it concerns. Synchronous and query-free when it concerns none. */
	noticed(write: ItemWrite): void {
		if (this.#stopping) return;
		this.#lastWrite.set(write.collection, Date.now());
		for (const { pseoId, full } of this.#followed.concerned(write)) this.#note(pseoId, full, write.keys);
	}

	#note(pseoId: number, full: boolean, keys: readonly (string | number)[]): void {
		const pending = this.#pending.get(pseoId) ?? { full: false, items: new Set<string>() };
		pending.full ||= full;
		if (!pending.full) for (const key of keys) pending.items.add(String(key));
		this.#pending.set(pseoId, pending);
		this.#gather ??= setTimeout(() => this.#flush(), GATHER_MS);
	}

	/**
	 * Users were updated (a balance may have grown): their websites with new items waiting for the balance sync, so
	 * that those are added without waiting for the next change of the collection.
	 */
	usersUpdated(userIds: readonly string[]): void {
		// The app updates its user at every page it opens (`last_page`): only owners of a following are looked up.
		const owners = userIds.filter((userId) => this.#followed.isOwner(userId));
		if (this.#stopping || owners.length === 0) return;
		followingsWaitingFor(this.#context.database, owners)
			.then((pseoIds) => {
				for (const pseoId of pseoIds) this.#note(pseoId, true, []);
			})
			.catch((error: unknown) => this.#context.logger.warn({ err: error }, 'pseo: the followings waiting for a balance could not be read'));
	}

	/** The followings changed on this instance (an import with `follow`, `data_source` cleared): read them now. */
	followingsChanged(): void {
		this.kick();
	}

	async #flush(): Promise<void> {
		this.#gather = null;
		const changes = [...this.#pending].map(([pseoId, pending]) => ({ pseoId, full: pending.full, items: [...pending.items] }));
		this.#pending.clear();
		try {
			await retryConflicts(() => markSourcesDue(this.#context.database, changes, this.#config.sourceSyncDelayMs), {
				logger: this.#context.logger,
				what: 'note of a followed collection\'s changes',
				context: { pseoIds: changes.map((change) => change.pseoId) },
			});
		} catch (error) {
			// Kept, as a whole sync of each (which keys were noted before the failure is not known), and noted again soon.
			this.#context.logger.error({ err: error, pseoIds: changes.map((change) => change.pseoId) }, 'pseo: a change of a followed collection could not be noted; trying again');
			if (this.#stopping) return;
			for (const change of changes) this.#note(change.pseoId, true, []);
			clearTimeout(this.#gather ?? undefined);
			this.#gather = setTimeout(() => this.#flush(), RETRY_NOTE_MS);
			return;
		}
		// This instance syncs it as soon as it is due, without waiting for its next tick.
		setTimeout(() => this.kick(), this.#config.sourceSyncDelayMs).unref();
	}

	kick(): void {
		if (this.#stopping) return;
		if (this.#sweeping) {
			this.#again = true;
			return;
		}
		this.#sweeping = this.#sweep()
			.catch((error: unknown) => this.#context.logger.error({ err: error }, 'pseo: the sweep of followed collections failed'))
			.finally(() => {
				this.#sweeping = null;
				if (this.#again) {
					this.#again = false;
					this.kick();
				}
			});
	}

	async #sweep(): Promise<void> {
		const { database } = this.#context;
		const before = this.#followed;
		this.#followed = new FollowedCollections(await readFollowings(database));
		// A following begun since the last look (here or on another instance): a write of its collections this instance
		// saw after its import began may not be in its pages, and syncs it.
		for (const { pseoId, collections, since } of this.#followed.newSince(before)) {
			if (collections.some((collection) => (this.#lastWrite.get(collection) ?? 0) >= since)) this.#note(pseoId, true, []);
		}
		// Only a following is ever due (a stop clears its due time): without one there is nothing to look for.
		if (this.#followed.empty) return;
		for (const pseoId of await findDueSources(database, Date.now(), CLAIM_BATCH)) {
			if (this.#stopping) return;
			const claim = await claimSourceSync(database, pseoId, this.#config.leaseMs);
			if (!claim) continue;
			const run = this.#sync(claim);
			this.#running.add(run);
			await run.finally(() => this.#running.delete(run));
		}
	}

	async #sync(claim: ClaimedSourceSync): Promise<void> {
		const { database, logger } = this.#context;
		if (!claim.source) {
			await releaseSourceSync(database, claim);
			return;
		}
		const renew = setInterval(() => {
			renewSourceLease(database, claim, this.#config.leaseMs).catch((error: unknown) => logger.warn({ err: error, pseoId: claim.pseoId }, 'pseo: a sync lease could not be renewed'));
		}, Math.max(500, Math.floor(this.#config.leaseMs / 3)));
		const began = performance.now();
		try {
			const result = await this.#importAsOwner(claim, claim.source);
			await releaseSourceSync(database, claim);
			const items = claim.changed.full ? 'all' : claim.changed.items.length;
			logger.info({ pseoId: claim.pseoId, collection: claim.source.collection, items, ms: Math.round(performance.now() - began), ...result }, 'pseo: followed collection synced');
		} catch (error) {
			await this.#failed(claim, claim.source, error);
		} finally {
			clearInterval(renew);
		}
	}

	/** The import of the followed collection, run again as a sync by its owner. */
	async #importAsOwner(claim: ClaimedSourceSync, source: DataSource) {
		const context = this.#context;
		const schema = () => context.getSchema({ database: context.database });
		const accountability = await ownerAccountability(context, await schema(), claim.ownerId);
		const deps: ImportDeps = {
			database: context.database,
			logger: context.logger,
			config: this.#config,
			siteRoutes: this.#options.siteRoutes,
			openFile: () => Promise.reject(new Error('A followed collection reads no file.')),
			collections: { reader: collectionReader(context, accountability, context.database), schema },
			onRetired: this.#options.onRetired,
		};
		const request = {
			pseoId: claim.pseoId,
			languageCode: source.language_code,
			template: source.template,
			data: { collection: source.collection, filter: source.filter, ...(claim.changed.full ? {} : { items: claim.changed.items }) },
			mode: 'sync' as const,
			source: source.source,
			follow: true,
		};
		return importPlan(deps, claim.ownerId, request, { trigger: 'follow', withinBalance: true });
	}

	/**
	 * A failed sync: one that cannot succeed until someone acts (the owner may no longer read what the template
	 * names, the collection or a field is gone, the owner is not active) stops the following and tells the owner;
	 * any other is recorded and tried again.
	 */
	async #failed(claim: ClaimedSourceSync, source: DataSource, error: unknown): Promise<void> {
		const { database, logger } = this.#context;
		const reason = error instanceof Error ? error.message : String(error);
		const status = (error as { status?: unknown } | null)?.status;
		// A filter that "could not be applied" may be a database that failed meanwhile (collection-rows.ts cannot tell
		// them apart): it is tried again, with the reason on the website, as any other failure that may pass.
		const filterFailed = status === 400 && reason.includes('"filter" could not be applied');
		if (error instanceof OwnerUnavailableError || (status === 400 && !filterFailed) || status === 403 || status === 404) {
			logger.warn({ pseoId: claim.pseoId, collection: source.collection, reason }, 'pseo: a followed collection can no longer be synced; the following stops');
			await stopFollowing(database, claim.pseoId, reason);
			await notifyOwner(this.#context, claim, source, reason).catch((notice: unknown) => logger.warn({ err: notice, pseoId: claim.pseoId }, 'pseo: the owner could not be notified that a following stopped'));
			this.kick();
			return;
		}
		logger.warn({ err: error, pseoId: claim.pseoId, collection: source.collection }, 'pseo: a sync of a followed collection failed; it is tried again');
		await recordSourceError(database, claim.pseoId, reason).catch(() => undefined);
		await releaseSourceSync(database, claim, Math.max(RETRY_MIN_MS, this.#config.sourceSyncDelayMs));
	}

	/** Stops noting and syncing; a sync in flight finishes (its transaction commits or rolls back whole). */
	async drain(graceMs: number): Promise<void> {
		this.#stopping = true;
		if (this.#timer) clearInterval(this.#timer);
		if (this.#gather) {
			clearTimeout(this.#gather);
			await this.#flush();
		}
		await Promise.race([Promise.allSettled([...this.#running]), new Promise((resolve) => setTimeout(resolve, Math.min(graceMs, 5000)))]);
	}
}

let current: SourceFollower | null = null;

/** The instance's follower, once the server started (null in a CLI command). */
export function setSourceFollower(follower: SourceFollower | null): void {
	current = follower;
}

/** Tells this instance's follower that the followings changed here, so that it reads them now. */
export function followingsChanged(): void {
	current?.followingsChanged();
}
