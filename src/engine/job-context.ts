import type { Knex } from 'knex';
import { createSiblingPicker, type Sibling } from '../page/page-siblings.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { readPlan } from '../plan/plan-store.ts';
import { readPlanPages, readPlanRoutes } from '../plan/plan-page-store.ts';
import { readWebsite } from '../websites/website-store.ts';
import type { JobHead } from './job-types.ts';
import { readJobRouteNames, readJobRoutes } from './job-route-store.ts';

/** The `n` most relevant other pages of the plan for a page. */
type SiblingPicker = (item: PlanPage, n?: number) => Sibling[];

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
 * never holds a large job whole, passes none, and the route names are read instead.
 */
export async function loadJobContext(knex: Knex, job: JobHead, jobRoutes?: readonly PlanPage[]): Promise<JobContext> {
	const website = await readWebsite(knex, job.pseo_id);
	const plan = job.main_json_id ? await readPlan(knex, job.main_json_id) : null;
	const planRoutes = await readPlanRoutes(knex, job.pseo_id);
	const jobRouteNames = jobRoutes ? jobRoutes.map((page) => page.route) : await readJobRouteNames(knex, job.id);
	let picker: Promise<SiblingPicker> | undefined;
	const buildPicker = async (): Promise<SiblingPicker> => {
		// The website's plan pages are the siblings; the job's own routes stand in when the plan is gone.
		const planPages = await readPlanPages(knex, job.pseo_id);
		return createSiblingPicker(planPages.length > 0 ? planPages : (jobRoutes ?? (await readJobRoutes(knex, job.id)).routes));
	};
	return {
		masterPrompt: website?.master_prompt ?? '',
		websiteUrl: website?.website_url ?? '',
		language: plan?.language_code ?? 'en-US',
		businessDescription: plan?.description ?? null,
		allowedRoutes: new Set([...planRoutes, ...jobRouteNames]),
		siblingPicker: () =>
			(picker ??= buildPicker().catch((error: unknown) => {
				// A failed read is tried again by the next page, not remembered.
				picker = undefined;
				throw error;
			})),
		instructions: job.instructions,
	};
}
