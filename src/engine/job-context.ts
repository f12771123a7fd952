import type { Knex } from 'knex';
import { createSiblingPicker } from '../page/page-siblings.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { loadPlanCatalog, sharedPlanCatalog, type SiblingPicker } from './plan-catalog.ts';
import { readPlan } from '../plan/plan-store.ts';
import { readWebsite } from '../websites/website-store.ts';
import type { JobHead } from './job-types.ts';
import { readJobRouteNames, readJobRoutes } from './job-route-store.ts';

/** Jobs of at most this many routes share their website's plan catalog (engine/plan-catalog.ts). */
export const SHARED_CATALOG_ROUTES = 100;

/** Everything a page prompt needs besides the page itself, loaded once per job run. */
export interface JobContext {
	masterPrompt: string;
	websiteUrl: string;
	language: string;
	businessDescription: string | null;
	/** Routes a page may link to: the plan's routes. */
	allowedRoutes: ReadonlySet<string>;
	/**
	 * The picker of the most relevant other pages of the plan for a page, to link to. Built on first use from the
	 * plan's pages, read then: a batch ingest that rewrites no page never needs it, and a 100,000-page plan as
	 * page objects is tens of megabytes the ingest would hold for nothing.
	 */
	siblingPicker(): Promise<SiblingPicker>;
	/** A regeneration's instructions from the owner; null for new pages. */
	instructions: string | null;
}

/**
 * The context of a job's pages. `jobRoutes` are the job's routes when the caller holds them; a bulk step, which
 * never holds a large job whole, passes none, and the route names are read instead. A small job (an on-demand page,
 * a regeneration) shares the website's plan catalog with the instance's other small jobs instead of reading the
 * whole plan again.
 */
export async function loadJobContext(knex: Knex, job: JobHead, jobRoutes?: readonly PlanPage[]): Promise<JobContext> {
	const website = await readWebsite(knex, job.pseo_id);
	const plan = job.main_json_id ? await readPlan(knex, job.main_json_id) : null;
	const small = jobRoutes !== undefined && jobRoutes.length <= SHARED_CATALOG_ROUTES;
	const catalog = small ? await sharedPlanCatalog(knex, job.pseo_id) : await loadPlanCatalog(knex, job.pseo_id);
	const jobRouteNames = jobRoutes ? jobRoutes.map((page) => page.route) : await readJobRouteNames(knex, job.id);
	// The plan's own set when it holds every route of the job (so the shared set, and the lookup built on it, serve).
	const allowedRoutes = jobRouteNames.every((route) => catalog.routes.has(route)) ? catalog.routes : new Set([...catalog.routes, ...jobRouteNames]);
	let fallback: Promise<SiblingPicker> | undefined;
	return {
		masterPrompt: website?.master_prompt ?? '',
		websiteUrl: website?.website_url ?? '',
		language: plan?.language_code ?? 'en-US',
		businessDescription: plan?.description ?? null,
		allowedRoutes,
		siblingPicker: async () => {
			// The website's plan pages are the siblings; the job's own routes stand in when the plan is gone.
			const picker = await catalog.siblings();
			if (picker) return picker;
			fallback ??= (async () => createSiblingPicker(jobRoutes ?? (await readJobRoutes(knex, job.id)).routes))().catch((error: unknown) => {
				// A failed read is tried again by the next page, not remembered.
				fallback = undefined;
				throw error;
			});
			return fallback;
		},
		instructions: job.instructions,
	};
}
