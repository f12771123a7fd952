import type { Knex } from 'knex';
import type { PseoConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import { postedRoutes } from '../posts/post-store.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import type { ImportRequest } from './import-request.ts';
import { fileRows, inlineRows, type OpenedFile } from './import-source.ts';
import { pageFromRow } from './import-template.ts';
import { countPlanPages, deletePlanPages, insertPlanPages, type StoredPlanPage } from './plan-page-store.ts';
import { bumpPlanVersion } from './plan-version.ts';
import { completeImport, extendLock, failPlan, startPlan } from './plan-store.ts';

export interface ImportDeps {
	database: Knex;
	logger: Logger;
	config: PseoConfig;
	/** Page URLs the website's sitemap lists; best effort within `budgetMs`. */
	siteRoutes: (websiteUrl: string, budgetMs: number) => Promise<string[]>;
	/** Opens a file of the library for `userId`: 404 when it does not exist, 403 when it is not theirs. */
	openFile: (fileId: string, userId: string) => Promise<OpenedFile>;
}

/** The answer's `data`. */
export interface ImportResult {
	total_pages: number;
	added: number;
	skipped: { duplicate: number; on_site: number; invalid: number };
}

/** Pages inserted per statement batch: the import streams rows in, never all at once. */
const BATCH = 500;

/**
 * POST /plan/import: plan pages from data. Ownership first (403/404), then the file's (403/404), then the
 * per-user plan lock (409). The rows are read as a stream and stored in ONE transaction with the charge
 * (`PSEO_TOKEN_PER_IMPORTED_PAGE` per added page, 402 and nothing stored when short) and the import's plan
 * record, so an import is whole or not at all. Skipped rows are counted: `invalid` (a placeholder without a
 * value, an invalid route or priority), `duplicate` (repeated in the data, or already in the plan), `on_site`
 * (already on the website's sitemap, read within PSEO_PLAN_SITEMAP_BUDGET_MS).
 */
export async function importPlan(deps: ImportDeps, userId: string, request: ImportRequest): Promise<ImportResult> {
	const { database, logger, config } = deps;
	const pseo = await requireOwnedPseo(database, request.pseoId, userId);
	const file = 'fileId' in request.source ? await deps.openFile(request.source.fileId, userId) : null;
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
		const posted = await postedRoutes(database, pseo.id);
		const rows = file ? fileRows(file) : inlineRows((request.source as { rows: unknown[] }).rows);
		const result = await database.transaction(async (trx) => {
			if (request.mode === 'replace') await deletePlanPages(trx, pseo.id);
			const counts = { added: 0, duplicate: 0, on_site: 0, invalid: 0 };
			const seen = new Set<string>();
			const owner = { pseoId: pseo.id, userId, planId };
			let batch: StoredPlanPage[] = [];
			const flush = async () => {
				const added = await insertPlanPages(trx, owner, batch, posted);
				counts.added += added;
				counts.duplicate += batch.length - added;
				batch = [];
			};
			for await (const { row } of rows) {
				const page = pageFromRow(request.template, row);
				if (page === 'invalid') {
					counts.invalid++;
					continue;
				}
				if (seen.has(page.route)) {
					counts.duplicate++;
					continue;
				}
				seen.add(page.route);
				if (onSite.has(page.route)) {
					counts.on_site++;
					continue;
				}
				batch.push(page);
				if (batch.length >= BATCH) await flush();
			}
			await flush();
			const totalPages = await countPlanPages(trx, pseo.id);
			const skipped = { duplicate: counts.duplicate, on_site: counts.on_site, invalid: counts.invalid };
			await completeImport(trx, planId, {
				userId,
				pseoId: pseo.id,
				rate: config.tokenPerImportedPage,
				added: counts.added,
				totalPages,
				userCap: config.userDailyTokenCap,
				summary: { source: 'import', mode: request.mode, template: request.template, added: counts.added, skipped },
			});
			return { total_pages: totalPages, added: counts.added, skipped };
		});
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

/** A sitemap URL as a route to compare with: its decoded path, lower-case, without a trailing slash. */
function pathOf(url: string): string {
	try {
		const path = decodeURIComponent(new URL(url, 'https://site.invalid').pathname).toLowerCase();
		return path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
	} catch {
		return url;
	}
}
