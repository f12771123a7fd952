import type { Knex } from 'knex';
import type { PseoConfig } from '../config/config.ts';
import { ProviderUnavailableError } from '../errors/index.ts';
import type { ProviderSource } from '../provider/provider-source.ts';
import { chooseForWebsite } from '../websites/website-provider.ts';
import type { Logger } from '../shared/logger.ts';
import { postedRoutes } from '../posts/post-store.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { generatePlan } from './generate-plan.ts';
import type { PlanPageItem } from './plan-schema.ts';
import { completePlan, extendLock, failPlan, startPlan } from './plan-store.ts';

/** A validated body of POST /generate/main-json (interface 4.8). */
export interface PlanRequest {
	pseoId: number;
	/** Canonical BCP 47 form, such as `en-US` or `tr-TR`. */
	languageCode: string;
	/** Trimmed, NFC-normalised business description of 150 to 1000 code points. */
	description: string;
}
import { bumpPlanVersion } from './plan-version.ts';

export interface CreatePlanDeps {
	database: Knex;
	logger: Logger;
	config: PseoConfig;
	/** The providers; a plan runs with the website's own provider and model, or the instance's defaults. */
	providers: Pick<ProviderSource, 'choose' | 'current'>;
	/** Page URLs or routes the website already has (its sitemap); best effort within `budgetMs`. */
	siteRoutes: (websiteUrl: string, budgetMs: number) => Promise<string[]>;
}

export interface CreatedPlan {
	main_json: { pages: PlanPageItem[] };
	total_pages: number;
}

/**
 * 4.8: generates and stores a website's content plan. Ownership first (403/404), then the per-user lock and
 * the charge in one transaction (409/402), then the model; on any failure the plan is marked failed, the charge
 * refunded and the lock released before the error (502) goes back to the caller.
 */
export async function createPlan(deps: CreatePlanDeps, userId: string, request: PlanRequest): Promise<CreatedPlan> {
	const { database, logger, config } = deps;
	const pseo = await requireOwnedPseo(database, request.pseoId, userId);
	// A model Settings → AI does not allow is refused before the plan is charged; the plan runs with what was checked.
	const chosen = await chooseForWebsite(database, deps.providers, pseo.id);
	const provider = await deps.providers.current({ provider: chosen.kind, model: chosen.model });
	const planId = await startPlan(database, {
		userId,
		pseoId: pseo.id,
		languageCode: request.languageCode,
		description: request.description,
		rate: config.tokenPerMainJson,
		lockMs: config.planLockMs,
		userCap: config.userDailyTokenCap,
	}, logger);
	const renew = setInterval(() => {
		extendLock(database, planId, userId, config.planLockMs).catch((error: unknown) =>
			logger.warn({ err: error, planId }, 'pseo plan lock renewal failed'),
		);
	}, Math.max(1000, Math.floor(config.planLockMs / 3)));
	try {
		if ('unavailable' in provider) throw new Error(provider.unavailable);
		const posted = [...(await postedRoutes(database, pseo.id))];
		// The sitemap only steers the plan away from pages the site has; a plan without it is still a plan.
		const onSite = await deps.siteRoutes(pseo.website_url, config.planSitemapBudgetMs).catch((error: unknown) => {
			logger.warn({ err: error, planId, pseoId: pseo.id }, 'pseo plan: the website\'s sitemap could not be read; planning without it');
			return [];
		});
		const plan = await generatePlan({
			pseo,
			languageCode: request.languageCode,
			description: request.description,
			pageCount: config.planPages,
			existingRoutes: [...onSite, ...posted],
			provider,
			logger,
		});
		await completePlan(database, planId, plan);
		await bumpPlanVersion(database, [pseo.id], logger);
		logger.info({ planId, pseoId: pseo.id, pages: plan.total_pages, skippedExisting: onSite.length }, 'pseo content plan stored');
		return { main_json: { pages: plan.pages }, total_pages: plan.total_pages };
	} catch (error) {
		const reason = error instanceof Error ? error.message : String(error);
		await failPlan(database, planId, userId, reason, logger);
		logger.warn({ planId, pseoId: pseo.id, reason }, 'pseo content plan failed; tokens refunded');
		throw new ProviderUnavailableError({ reason: `${reason} The ${config.tokenPerMainJson} tokens were refunded.` });
	} finally {
		clearInterval(renew);
	}
}
