import type { Knex } from 'knex';
import { jsonFromDb } from '../shared/database.ts';
import type { JobRecord, JobRoute } from './job-types.ts';
import { createSiblingPicker, type Sibling } from '../page/page-siblings.ts';

/** Everything a page prompt needs besides the page itself, loaded once per job run. */
export interface JobContext {
	masterPrompt: string;
	websiteUrl: string;
	language: string;
	businessDescription: string | null;
	/** All pages of the plan the job came from: the siblings to link to. */
	planPages: JobRoute[];
	/** Routes a page may link to: the plan's routes. */
	allowedRoutes: ReadonlySet<string>;
	/** The most relevant other pages of the plan for a page, to link to. */
	siblings: (item: JobRoute, n?: number) => Sibling[];
}

export async function loadJobContext(knex: Knex, job: JobRecord): Promise<JobContext> {
	const pseo = (await knex('pseo').where('id', job.pseo_id).first('master_prompt', 'website_url')) as
		| { master_prompt: string; website_url: string }
		| undefined;
	const plan = job.main_json_id
		? ((await knex('pseo_main_json').where('id', job.main_json_id).first('language_code', 'description', 'main_json')) as
				| Record<string, unknown>
				| undefined)
		: undefined;
	// The job's own routes stand in when its plan was deleted.
	const planPages = jsonFromDb<{ pages?: JobRoute[] }>(plan?.['main_json'], {}).pages;
	const pages = Array.isArray(planPages) && planPages.length > 0 ? planPages : job.routes;
	return {
		masterPrompt: pseo?.master_prompt ?? '',
		websiteUrl: pseo?.website_url ?? '',
		language: (plan?.['language_code'] as string | undefined) ?? 'en-US',
		businessDescription: (plan?.['description'] as string | undefined) ?? null,
		planPages: pages,
		allowedRoutes: new Set([...pages, ...job.routes].map((page) => page.route)),
		siblings: createSiblingPicker(pages),
	};
}
