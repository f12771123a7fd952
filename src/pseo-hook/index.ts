import type { Knex } from 'knex';
import { defineHook } from '@directus/extensions-sdk';
import type { Accountability, Query } from '@directus/types';
import type { Application } from 'express';
import { DELETABLE, guardDelete, guardWrite, OWNER_FIELDS, restrictQuery, WRITABLE_FIELDS, type OwnedCollection } from '../access/ownership-guard.ts';
import { directusErrorEnvelope, errorHandler } from '../http/error-envelope.ts';
import { applyBalanceEdits, recordInitialBalance, setBalances, takeDeferredEdit } from '../ledger/balance-grants.ts';
import { compressPostBodies, ensureIndexes, installSchema } from '../schema/install-schema.ts';
import { provisionListPresets } from '../schema/list-presets.ts';
import { provisionUsageDashboard } from '../schema/usage-dashboard.ts';
import { provisionModuleBar } from '../schema/module-bar.ts';
import { provisionUserPolicy } from '../schema/user-policy.ts';
import { setItemAnnouncer } from '../shared/item-events.ts';
import { retryOnRace } from '../shared/retry-on-race.ts';
import { refreshSchemaCache } from '../schema/refresh-schema-cache.ts';
import type { ServiceContext } from '../shared/services.ts';
import { useConfig } from '../config/config.ts';
import { drainBeforeClose } from '../engine/drain-before-close.ts';
import { providerSourceFor } from '../provider/create-provider.ts';
import { createPostReviser } from '../posts/post-revisions.ts';
import { GenerationRuntime } from '../engine/runtime.ts';
import { migratePlanDocuments, PLANS } from '../plan/plan-store.ts';
import { PLAN_PAGES, readPagesFacts, readPlanFacts, unmarkPosted } from '../plan/plan-page-store.ts';
import { trackPlanPageChanges } from '../plan/plan-version.ts';
import { markStaleWhereFactsChanged, POSTS, routesOfPosts } from '../posts/post-store.ts';
import { setRuntime } from '../engine/runtime-registry.ts';
import { migrateJobRoutes } from '../engine/job-route-store.ts';
import { legacyJobRoutes } from '../engine/job-store.ts';
import { PublicationRuntime, setPublicationRuntime } from '../publishing/publication-runtime.ts';
import { outboundClientOf } from '../publishing/publishing-target.ts';
import { instanceSecretOf } from '../publishing/secret-box.ts';
import { InvalidPayloadError } from '../errors/index.ts';
import { factsProblem, type Facts } from '../shared/facts.ts';
import { dbTimestamp } from '../shared/database.ts';
import { setSourceFollower, SourceFollower } from '../following/source-follower.ts';
import { AutoRefresher } from '../following/auto-refresh.ts';
import { followingCleared } from '../plan/data-source-store.ts';
import { WEBSITES } from '../websites/website-store.ts';
import { queueTakedown } from '../publishing/takedown.ts';
import { siteRoutesReader } from '../sitemap/site-routes.ts';

/** The runtime: start-up provisioning, the error envelope, balance grants, and (later) the job runtime. */
export default defineHook(({ init, filter, action }, context) => {
	const ctx = context as unknown as ServiceContext;
	const { logger, database } = ctx;
	/** This instance's follower of collections, from the server's start (a CLI command that loads the extension has none). */
	let follower: SourceFollower | null = null;

	// A bad setting, or a database the extension cannot install itself into, stops start-up with its cause, not later in
	// a request. Directus only logs a failing init hook and serves on: an instance without its tables, policy or
	// indexes would answer every request with a 500, or store pages twice without the unique index that prevents it.
	init('app.before', async () => {
		try {
			useConfig(ctx.env);
		} catch (error) {
			stopStartUp('invalid configuration', error);
		}
		try {
			await provision();
		} catch (error) {
			stopStartUp('its schema, policy or indexes could not be installed', error);
		}
	});

	function stopStartUp(why: string, error: unknown): never {
		logger.error({ err: error }, `pseo-automation: ${why}, stopping: ${error instanceof Error ? error.message : String(error)}`);
		process.exit(1);
	}

	async function provision(): Promise<void> {
		const report = await retryOnRace(() => installSchema(ctx), logger, 'schema install');
		await retryOnRace(() => ensureIndexes(database, logger), logger, 'index creation');
		await compressPostBodies(database, logger);
		await retryOnRace(() => migratePlanDocuments(database, logger), logger, 'plan pages migration');
		await retryOnRace(() => migrateJobRoutes(database, logger, legacyJobRoutes), logger, 'job routes migration');
		const policy = await retryOnRace(() => provisionUserPolicy(ctx), logger, 'policy provisioning');
		// The app's conveniences: without them the app is plainer, not wrong, so a failure is logged and start-up goes on.
		const conveniences: [string, () => Promise<unknown>][] = [
			['list presets', () => provisionListPresets(ctx)],
			['usage dashboard', () => provisionUsageDashboard(ctx)],
			['module bar', () => provisionModuleBar(ctx)],
		];
		for (const [what, work] of conveniences) {
			await retryOnRace(work, logger, what).catch((error: unknown) => logger.warn({ err: error }, `pseo-automation: the ${what} could not be provisioned; the app works without it`));
		}
		await refreshSchemaCache(ctx);
		logger.info(
			{ unchanged: report.unchanged, created: report.created.length, refreshed: report.refreshed, skipped: report.skipped.length, policyChanged: policy.changed },
			'pseo-automation: schema and "pSEO user" policy are in place',
		);
	}

	// Background work starts with the server, never when a CLI command merely loads the extension.
	action('server.start', () => {
		const config = useConfig(ctx.env);
		// Progress written with the extension's own SQL reaches WebSocket subscribers (and Flows) from here on.
		if (config.announceChanges) setItemAnnouncer(ctx);
		const providers = providerSourceFor(config, logger, ctx);
		const runtime = new GenerationRuntime({ database, logger, config, providers, revise: createPostReviser(ctx, readPlanFacts) });
		setRuntime(runtime);
		drainBeforeClose(database, () => runtime.drain(config.shutdownGraceMs), logger);
		runtime.start();
		const publications = new PublicationRuntime({ database, logger, config, http: outboundClientOf(config), instanceSecret: instanceSecretOf(ctx.env) });
		setPublicationRuntime(publications);
		drainBeforeClose(database, () => publications.drain(config.shutdownGraceMs), logger);
		publications.start();
		follower = new SourceFollower({ context: ctx, config, siteRoutes: siteRoutesReader(config.sitemap, logger), onRetired: queueTakedown });
		setSourceFollower(follower);
		const following = follower;
		drainBeforeClose(database, () => following.drain(config.shutdownGraceMs), logger);
		follower.start();
		const refresher = new AutoRefresher({ context: ctx, config, notify: () => runtime.kick() });
		drainBeforeClose(database, async () => refresher.drain(), logger);
		refresher.start();
		logger.info({ worker: runtime.worker, concurrency: config.concurrency, bulkMode: config.bulkMode, provider: providers.origin }, 'pseo-automation: job runtime started');
	});

	// Settings → AI saved on this instance: the next call reads it again (other instances within the source's TTL).
	for (const event of ['settings.create', 'settings.update']) {
		action(event, () => providerSourceFor(useConfig(ctx.env), logger, ctx).invalidate());
	}

	init('middlewares.before', (meta) => {
		const { app } = meta as { app: Application };
		app.use(directusErrorEnvelope('/pseo-endpoints'));
	});

	// Directus's pressure limiter (503 "Under pressure", seen on overloaded instances) runs before any extension
	// middleware, so the rewrite above never wraps its answer: its error goes straight to the error handlers.
	// This one, ahead of Directus's own, keeps the envelope promise for it (operating contract section 4).
	init('routes.custom.after', (meta) => {
		const { app } = meta as { app: Application };
		app.use('/pseo-endpoints', errorHandler(logger));
	});

	for (const collection of Object.keys(OWNER_FIELDS) as OwnedCollection[]) {
		filter(`${collection}.items.query`, (query, _meta, eventContext) =>
			restrictQuery(collection, query as Query, accountabilityOf(eventContext)),
		);
		if (DELETABLE.has(collection)) {
			filter(`${collection}.items.delete`, (keys, _meta, eventContext) =>
				guardDelete(database, collection, keys as (string | number)[], accountabilityOf(eventContext)),
			);
		}
		if (!WRITABLE_FIELDS[collection]) continue;
		filter(`${collection}.items.create`, (payload, _meta, eventContext) =>
			guardWrite(database, collection, payload as Record<string, unknown>, null, accountabilityOf(eventContext)),
		);
		filter(`${collection}.items.update`, (payload, meta, eventContext) =>
			guardWrite(database, collection, payload as Record<string, unknown>, (meta as { keys: string[] }).keys, accountabilityOf(eventContext)),
		);
	}

	// Every write of items Directus announces, in any collection: the follower finds in memory the websites it concerns.
	for (const verb of ['create', 'update', 'delete'] as const) {
		action(`items.${verb}`, (meta) => {
			const { collection, payload, key, keys } = meta as { collection: string; payload: unknown; key?: string | number; keys?: (string | number)[] };
			const fields = verb === 'update' && payload && typeof payload === 'object' ? Object.keys(payload) : undefined;
			follower?.noticed({ verb, collection, keys: keys ?? (key !== undefined ? [key] : []), ...(fields ? { fields } : {}) });
		});
	}

	// `data_source` is set by an import with `follow: true` (which checks the collection and the template); through the
	// items API it can only be cleared, which stops the following.
	for (const event of [`${WEBSITES}.items.create`, `${WEBSITES}.items.update`]) {
		filter(event, (payload) => {
			const fields = payload as Record<string, unknown>;
			if ('data_source' in fields && fields['data_source'] !== null) {
				throw new InvalidPayloadError({ reason: '"data_source" is set by POST /pseo-endpoints/plan/import with "follow": true; through the items API it can only be cleared (null), which stops the following.' });
			}
			return payload;
		});
	}
	action(`${WEBSITES}.items.update`, ({ keys, payload }) => {
		if (!payload || typeof payload !== 'object' || !('data_source' in payload)) return;
		return followingCleared(database, (keys as (string | number)[]).map(Number))
			.then(() => follower?.followingsChanged())
			.catch((error: unknown) => logger.warn({ err: error, keys }, 'pseo: the state of a following cleared through the items API could not be recorded'));
	});

	// A plan whose JSON document is rewritten through the items API gets its rows again from it, on next use.
	filter(`${PLANS}.items.update`, (payload) => {
		const fields = payload as Record<string, unknown>;
		return 'main_json' in fields ? { ...fields, pages_stored_at: null } : fields;
	});

	// Small jobs share a website's plan catalog (engine/plan-catalog.ts) until its plan version changes: an editor's
	// change to plan pages bumps it once committed, so the next job on any instance sees it.
	const planPages = trackPlanPageChanges(database, logger);
	filter(`${PLAN_PAGES}.items.delete`, (keys, _meta, eventContext) => planPages.beforeDelete(keys, eventContext));
	filter(`${PLAN_PAGES}.items.create`, (payload) => checkFacts(payload));
	filter(`${PLAN_PAGES}.items.update`, async (payload, meta, eventContext) => {
		checkFacts(payload);
		await planPages.beforeUpdate(payload, (meta as { keys: unknown }).keys, eventContext);
		return payload;
	});
	action(`${PLAN_PAGES}.items.delete`, ({ keys }) => planPages.afterDelete(keys));
	action(`${PLAN_PAGES}.items.create`, ({ key, payload }) => planPages.afterCreate(key, payload));
	action(`${PLAN_PAGES}.items.update`, ({ keys, payload }) =>
		Promise.all([
			planPages.afterUpdate(keys, payload),
			// An editor who changes a page's facts makes its post stale, as a sync that changes them does.
			payload && typeof payload === 'object' && 'facts' in payload
				? markEditedPagesStale(database, keys as (string | number)[]).catch((error: unknown) =>
						logger.warn({ err: error, keys }, 'pseo: the posts of plan pages whose facts an editor changed could not be marked stale'),
					)
				: undefined,
		]),
	);

	// A deleted post's route is ungenerated again: the plan page says so, and the next job may take it.
	filter(`${POSTS}.items.delete`, async (keys) => {
		const byWebsite = new Map<number, string[]>();
		for (const post of await routesOfPosts(database, keys as (string | number)[])) {
			byWebsite.set(post.pseoId, [...(byWebsite.get(post.pseoId) ?? []), post.route]);
		}
		for (const [pseoId, routes] of byWebsite) await unmarkPosted(database, pseoId, routes);
		return keys;
	});

	filter('users.update', async (payload, meta, eventContext) => {
		const { keys } = meta as { keys: (string | number)[] };
		const { database: updateDatabase } = eventContext as { database?: Knex };
		return applyBalanceEdits({ database, logger }, payload as Record<string, unknown>, keys.map(String), accountabilityOf(eventContext), updateDatabase);
	});

	action('users.update', (meta, eventContext) => {
		const { keys, payload } = meta as { keys: (string | number)[]; payload: unknown };
		follower?.usersUpdated(keys.map(String));
		const edit = takeDeferredEdit(keys.map(String), accountabilityOf(eventContext), payload);
		if (!edit) return;
		return setBalances({ database, logger }, edit).catch((error: unknown) =>
			logger.error({ err: error, keys }, 'pseo: a balance edit sent with other fields of the user could not be applied after the update'),
		);
	});

	action('users.create', async (meta, eventContext) => {
		const { key, payload } = meta as { key: string; payload: Record<string, unknown> };
		const accountability = accountabilityOf(eventContext);
		await recordInitialBalance(database, key, payload, accountability);
	});
});

/** Marks stale the posts of plan pages (by id) that were written from other facts than the pages hold now. */
async function markEditedPagesStale(database: Knex, keys: readonly (string | number)[]): Promise<void> {
	const byWebsite = new Map<number, { route: string; facts: Facts | null }[]>();
	for (const page of await readPagesFacts(database, keys)) {
		const pages = byWebsite.get(page.pseoId);
		if (pages) pages.push(page);
		else byWebsite.set(page.pseoId, [page]);
	}
	for (const [pseoId, pages] of byWebsite) await markStaleWhereFactsChanged(database, pseoId, pages, dbTimestamp(database));
}

/** A plan page's `facts` as an editor writes them must be a flat object of text, numbers and booleans: 400 otherwise. */
function checkFacts(payload: unknown): unknown {
	const problem = factsProblem((payload as Record<string, unknown> | null)?.['facts']);
	if (problem) throw new InvalidPayloadError({ reason: problem });
	return payload;
}

function accountabilityOf(eventContext: unknown): Accountability | null {
	return (eventContext as { accountability?: Accountability | null }).accountability ?? null;
}
