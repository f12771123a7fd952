import type { SchemaOverview } from '@directus/types';
import type { Knex } from 'knex';
import type { PseoConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { collectionSource, type CollectionQuery, type CollectionReader, type CollectionSource } from './collection-rows.ts';
import { fileRows, inlineRows, type NumberedRow, type OpenedFile } from './import-source.ts';
import { InvalidPayloadError } from '../errors/index.ts';
import { hubFromRow, pageFromRow, templateColumns, type ImportTemplate } from './import-template.ts';
import { countPlanPages, deletePlanPages } from './plan-page-store.ts';
import { createPlanSync, type HubPriority, type RetiredPages, type SyncField } from './plan-sync.ts';
import { bumpPlanVersion } from './plan-version.ts';
import { completeImport, ensurePlanPages, extendLock, failPlan, startPlan } from './plan-store.ts';
import { retryConflicts, runTransaction } from '../shared/transaction.ts';
import { spendableToday } from '../ledger/spend-caps.ts';
import { recordSourceSync, stopFollowing, type DataSource } from './data-source-store.ts';

/** A validated body of POST /plan/import. */
export interface ImportRequest {
	pseoId: number;
	/** Canonical BCP 47 form, such as `en-US`. */
	languageCode: string;
	template: ImportTemplate;
	/**
	 * The rows themselves, the id of a file in Directus's file library (CSV, JSON array or JSON Lines), or a Directus
	 * collection to read as the caller (with an optional filter).
	 */
	data: { rows: unknown[] } | { fileId: string } | { collection: string; filter: Record<string, unknown> | null; items?: readonly string[] };
	/**
	 * `append`: pages for routes the plan lacks; `replace`: the plan emptied first; `sync`: the data is the whole truth
	 * of `source` (plan-sync.ts).
	 */
	mode: 'append' | 'replace' | 'sync';
	/** The data's name (1 to 100 characters), recorded on the pages it adds: a sync touches only its own source's pages. */
	source: string;
	/**
	 * `true` (a `sync` of a collection): the website follows the collection from now on (data-source-store.ts);
	 * `false`: it stops following any; null: the following, if any, stays as it is.
	 */
	follow: boolean | null;
}

/** How an import runs beyond its request: a followed collection's own sync (source-follower.ts). */
export interface ImportOptions {
	trigger: 'import' | 'follow';
	/**
	 * Adds only the new pages the owner's balance and caps cover, the others counted as waiting, where an import asked
	 * for would answer 402 and store nothing: a change of the collection is not a request anyone could retry.
	 */
	withinBalance: boolean;
}

export interface ImportDeps {
	database: Knex;
	logger: Logger;
	config: PseoConfig;
	/** Page URLs the website's sitemap lists; best effort within `budgetMs`. */
	siteRoutes: (websiteUrl: string, budgetMs: number) => Promise<string[]>;
	/** Opens a file of the library for `userId`: 404 when it does not exist, 403 when it is not theirs. */
	openFile: (fileId: string, userId: string) => Promise<OpenedFile>;
	/** Reads collections as the caller (collection-rows.ts); the schema it checks a collection's paths against. */
	collections?: { reader: CollectionReader; schema: () => Promise<SchemaOverview> };
	/** A sync's retired pages, in its transaction: their takedown at the publishing target is queued (plan-sync.ts). */
	onRetired?: RetiredPages;
}

/** The answer's `data`. */
export interface ImportResult {
	total_pages: number;
	added: number;
	/** Pages of the source whose data changed (or that came back from retirement); 0 outside `sync`. */
	updated: number;
	/** Pages of the source whose row says nothing new; 0 outside `sync`. */
	unchanged: number;
	/** Pages of the source that no row produces any more; 0 outside `sync`. */
	retired: number;
	skipped: { duplicate: number; on_site: number; invalid: number; missing_data: number };
}

/** Columns of the data a 400 lists at most. */
const LISTED_COLUMNS = 50;

/**
 * POST /plan/import: plan pages from data. Ownership first (403/404), then the file's (403/404), then the
 * per-user plan lock (409). The rows are read as a stream and stored in ONE transaction with the charge
 * (`PSEO_TOKEN_PER_IMPORTED_PAGE` per added page, 402 and nothing stored when short) and the import's plan
 * record, so an import is whole or not at all. Skipped rows are counted: `missing_data` (a column of
 * `template.required` without a value), `invalid` (a placeholder without a value, an invalid route or priority),
 * `duplicate` (repeated in the data, or already in the plan), `on_site` (already on the website's sitemap, read
 * within PSEO_PLAN_SITEMAP_BUDGET_MS). A template that names a column the data does not have at all is a 400 naming
 * it and listing the data's columns (a typo would otherwise skip every row). The pages go through plan-sync.ts in
 * batches, which in `sync` also updates, revives and retires the pages of the request's `source` (charging only the
 * added ones).
 */
export async function importPlan(
	deps: ImportDeps,
	userId: string,
	request: ImportRequest,
	options: ImportOptions = { trigger: 'import', withinBalance: false },
): Promise<ImportResult> {
	const { database, logger, config } = deps;
	// A following that this import begins dates from here: a write after it may not have been read (source-follower.ts).
	const startedAt = new Date().toISOString();
	const pseo = await requireOwnedPseo(database, request.pseoId, userId);
	// A plan written as one document (an AI plan stored through the items API) gets its rows first: the import's
	// record becomes the current plan, and the document's pages would never be rows after it.
	await ensurePlanPages(database, pseo.id, logger);
	// A collection is checked before anything is stored: its name and the template's paths against the schema (400),
	// then one read as the caller (Directus's 403 when they may not read it or a related collection a path goes through).
	const checked = 'collection' in request.data ? await checkCollection(deps, request.data, request.template) : null;
	let file = 'fileId' in request.data ? await deps.openFile(request.data.fileId, userId) : null;
	let planId: number;
	try {
		planId = await startPlan(
			database,
			{ userId, pseoId: pseo.id, languageCode: request.languageCode, description: null, rate: 0, importing: true, lockMs: config.planLockMs, userCap: config.userDailyTokenCap },
			logger,
		);
	} catch (error) {
		file?.stream.destroy();
		throw error;
	}
	const renew = setInterval(() => {
		extendLock(database, planId, userId, config.planLockMs).catch((error: unknown) => logger.warn({ err: error, planId }, 'pseo import lock renewal failed'));
	}, Math.max(1000, Math.floor(config.planLockMs / 3)));
	try {
		const onSite = new Set(
			(
				await deps.siteRoutes(pseo.website_url, config.planSitemapBudgetMs).catch((error: unknown) => {
					logger.warn({ err: error, planId, pseoId: pseo.id }, 'pseo import: the website\'s sitemap could not be read; importing without it');
					return [] as string[];
				})
			).map(pathOf),
		);
		// The rows of each attempt: a rerun reads the file again from its start.
		let attempts = 0;
		const openRows = async (trx: Knex.Transaction) => {
			if (checked) return deps.collections!.reader.rows(checked.source, trx, checked.schema);
			if (!file) return inlineRows((request.data as { rows: unknown[] }).rows);
			if (attempts++ > 0) {
				file.stream.destroy();
				file = await deps.openFile((request.data as { fileId: string }).fileId, userId);
			}
			return fileRows(file);
		};
		// A deadlock runs the import again from the start (its transaction was rolled back whole). InnoDB finds one
		// when an ingest of the same user's job writes meanwhile: the import's pages hold shared locks on the website
		// and user rows (their foreign keys), which the ingest's update of the website and the import's own payer
		// lock then wait for. Without the rerun, an import InnoDB chose to abort answered 500.
		const owner = { pseoId: pseo.id, userId, planId };
		const result = await retryConflicts(
			() => runTransaction(database, async (trx) =>
					storeImport(trx, await openRows(trx), { request, owner, onSite, config, onRetired: deps.onRetired, collection: checked?.source ?? null, options, startedAt }),
				),
			{ logger, what: 'plan import', context: { planId, pseoId: pseo.id } },
		);
		await bumpPlanVersion(database, [pseo.id], logger);
		logger.info({ planId, pseoId: pseo.id, ...result }, 'pseo plan import stored');
		return result;
	} catch (error) {
		file?.stream.destroy();
		await failPlan(database, planId, userId, error instanceof Error ? error.message : String(error), logger);
		throw error;
	} finally {
		clearInterval(renew);
	}
}

/**
 * A collection import's source, checked against the schema and read once as the caller; with that schema, which the
 * import's rows are read against (before its transaction, which must not wait for it: collection-rows.ts).
 */
async function checkCollection(deps: ImportDeps, data: CollectionQuery, template: ImportTemplate): Promise<{ source: CollectionSource; schema: SchemaOverview }> {
	if (!deps.collections) throw new InvalidPayloadError({ reason: 'Imports from a collection are not available here.' });
	const schema = await deps.collections.schema();
	const source = collectionSource(schema, data, [...templateColumns(template).keys()]);
	await deps.collections.reader.probe(source, schema);
	return { source, schema };
}

/** What one attempt of an import stores, in the transaction that also charges it and completes its plan record. */
interface ImportScope {
	request: ImportRequest;
	owner: { pseoId: number; userId: string; planId: number };
	/** Routes on the website's sitemap, skipped as `on_site`. */
	onSite: ReadonlySet<string>;
	config: PseoConfig;
	onRetired: RetiredPages | undefined;
	/** The collection read, checked against the schema; null for rows or a file. */
	collection: CollectionSource | null;
	options: ImportOptions;
	/** When the import began (ISO): a following it begins dates from then. */
	startedAt: string;
}

async function storeImport(trx: Knex.Transaction, rows: AsyncIterable<NumberedRow>, scope: ImportScope): Promise<ImportResult> {
	const { request, owner, onSite, config, onRetired, options } = scope;
	if (request.mode === 'replace') await deletePlanPages(trx, owner.pseoId);
	const addLimit =
		options.withinBalance && config.tokenPerImportedPage > 0
			? Math.floor((await spendableToday(trx, { userId: owner.userId, pseoId: owner.pseoId, userCap: config.userDailyTokenCap })) / config.tokenPerImportedPage)
			: undefined;
	const sync = createPlanSync(trx, {
		owner,
		source: request.source,
		mode: request.mode === 'sync' ? 'sync' : 'add',
		fields: syncedFields(request.template),
		onSite,
		onRetired,
		...(addLimit !== undefined ? { addLimit } : {}),
		// The keys as the collection gave them (source-item text), so that a page's `source_item` matches them.
		...(scope.collection?.items ? { items: scope.collection.items.map(String) } : {}),
	});
	const skipped = { invalid: 0, missing_data: 0, duplicate: 0, on_site: 0 };
	const seen = new Set<string>();
	const columns = columnCheck(request.template);
	// Hub pages, one per distinct hub route: given when first met, before the page of their set (so a bulk job, which
	// takes pages by priority and then in stored order, reaches a new hub before or with its pages), at the priority of
	// that page; the sync settles each at the highest priority of its set at the end.
	const hubs = new Map<string, HubPriority>();
	try {
		for await (const { row, columns: header, item } of rows) {
			columns.see(row, header);
			const page = pageFromRow(request.template, row);
			if (page === 'invalid' || page === 'missing_data') {
				skipped[page]++;
				continue;
			}
			if (item !== undefined) page.source_item = item;
			if (seen.has(page.route)) {
				skipped.duplicate++;
				continue;
			}
			seen.add(page.route);
			// A page on the website's sitemap brings no hub either; a sync's own pages are on it once published, and the sync
			// itself checks the sitemap for the routes its plan lacks.
			if (request.mode !== 'sync' && onSite.has(page.route)) {
				skipped.on_site++;
				continue;
			}
			const hub = request.template.hub && page.parent_route ? hubFromRow(request.template.hub, row) : null;
			if (hub) {
				const known = hubs.get(hub.route);
				if (known) known.highest = Math.max(known.highest, page.priority);
				else {
					hubs.set(hub.route, { first: page.priority, highest: page.priority });
					if (!seen.has(hub.route)) {
						seen.add(hub.route);
						await sync.hub({ route: hub.route, title: hub.title, priority: page.priority, page_type: 'hub', cluster: page.cluster ?? null });
					}
				}
			}
			await sync.page(page);
		}
	} catch (error) {
		// A failed write of the batch before is the cause (plan-sync.ts, `failure`).
		throw (await sync.failure()) ?? error;
	}
	columns.end();
	const counts = await sync.finish(hubs);
	const totalPages = await countPlanPages(trx, owner.pseoId);
	const result: ImportResult = {
		total_pages: totalPages,
		added: counts.added,
		updated: counts.updated,
		unchanged: counts.unchanged,
		retired: counts.retired,
		skipped: { duplicate: skipped.duplicate + counts.duplicate, on_site: skipped.on_site + counts.on_site, invalid: skipped.invalid, missing_data: skipped.missing_data },
	};
	await completeImport(trx, owner.planId, {
		userId: owner.userId,
		pseoId: owner.pseoId,
		rate: config.tokenPerImportedPage,
		added: counts.added,
		totalPages,
		userCap: config.userDailyTokenCap,
		summary: { source: 'import', import_source: request.source, mode: request.mode, template: request.template, trigger: options.trigger, ...result, waiting: counts.waiting },
	});
	if (request.follow === true && scope.collection) {
		const summary = { trigger: options.trigger, added: counts.added, updated: counts.updated, unchanged: counts.unchanged, retired: counts.retired, waiting: counts.waiting };
		await recordSourceSync(trx, owner.pseoId, followedSource(scope.collection, request), summary, scope.startedAt);
	} else if (request.follow === false) {
		await stopFollowing(trx, owner.pseoId, null);
	}
	return result;
}

/** What a website that follows `collection` keeps of the import that began it: enough to run it again. */
function followedSource(collection: CollectionSource, request: ImportRequest): DataSource {
	return {
		collection: collection.collection,
		filter: collection.filter,
		template: request.template,
		source: request.source,
		language_code: request.languageCode,
		related: Object.fromEntries([...collection.related].map(([name, fields]) => [name, [...new Set(fields)]])),
	};
}

/**
 * The fields an import's data gives its pages, which a sync compares and writes: the title, the facts and the hub
 * (`parent_route`) always, the keyword, priority and cluster when the template names them (else an editor's stay). A
 * hub page's title, and its cluster and priority as its pages'.
 */
function syncedFields(template: ImportTemplate): { page: SyncField[]; hub: SyncField[] } {
	const named: SyncField[] = [
		...(template.primary_keyword !== undefined ? (['primary_keyword'] as const) : []),
		...(template.priority !== undefined ? (['priority'] as const) : []),
		...(template.cluster !== undefined ? (['cluster'] as const) : []),
	];
	return {
		page: ['title', 'facts', 'parent_route', ...named],
		hub: ['title', ...named.filter((field) => field !== 'primary_keyword')],
	};
}

/**
 * The check that every column the template names is a column of the data: at the first row of data that names its
 * columns up front (a CSV header), or else once every row is read, against the columns of all of them (JSON rows may
 * differ). Throws the 400 that names the missing columns, the template fields naming them and the data's columns.
 */
function columnCheck(template: ImportTemplate) {
	const named = templateColumns(template);
	const unseen = new Set(named.keys());
	const data = new Set<string>();
	let rows = 0;
	const fail = (missing: readonly string[]) => {
		const listed = [...data].slice(0, LISTED_COLUMNS).join(', ');
		const more = data.size > LISTED_COLUMNS ? `, and ${data.size - LISTED_COLUMNS} more` : '';
		const names = missing.map((column) => `"${column}" (in ${named.get(column)!.join(', ')})`).join(', ');
		return new InvalidPayloadError({
			reason: `The template names ${missing.length === 1 ? 'a column' : 'columns'} the data does not have: ${names}. The data's columns are: ${listed}${more}.`,
		});
	};
	return {
		see(row: Readonly<Record<string, unknown>>, header: readonly string[] | undefined) {
			rows++;
			if (unseen.size === 0) return;
			if (header) {
				for (const column of header) data.add(column);
				const missing = [...unseen].filter((column) => !data.has(column));
				if (missing.length > 0) throw fail(missing);
				unseen.clear();
				return;
			}
			for (const column of Object.keys(row)) {
				data.add(column);
				unseen.delete(column);
			}
		},
		/** After the last row; data without a row names no column, and is left alone. */
		end() {
			if (rows > 0 && unseen.size > 0) throw fail([...unseen]);
		},
	};
}

/** A sitemap URL as a route to compare with: its decoded path, lower-case, without a trailing slash. */
function pathOf(url: string): string {
	try {
		const path = decodeURIComponent(new URL(url, 'https://site.invalid').pathname).toLowerCase();
		return path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
	} catch {
		return url;
	}
}
