import type { ServiceContext } from '../shared/services.ts';
import { systemServiceOptions } from '../shared/system-context.ts';
import { JOBS } from '../engine/job-store.ts';
import { LEDGER_TABLE } from '../ledger/token-ledger.ts';
import { PLANS } from '../plan/plan-store.ts';
import { PLAN_PAGES } from '../plan/plan-page-store.ts';
import { POSTS } from '../posts/post-store.ts';
import { WEBSITES } from '../websites/website-store.ts';

/** Columns and order of each collection's list in the app: what an editor looks for first. */
const LIST_PRESETS: Record<string, { fields: string[]; sort: string[] }> = {
	[WEBSITES]: { fields: ['website_url', 'website_software', 'post_counts_total', 'backend_user_id', 'date_created'], sort: ['-date_created'] },
	[JOBS]: {
		fields: ['id', 'pseo_id', 'mode', 'status', 'created_count', 'requested_count', 'failed_count', 'date_created', 'date_completed'],
		sort: ['-date_created'],
	},
	[POSTS]: { fields: ['title', 'route', 'status', 'quality_status', 'quality_score', 'pseo_id', 'language', 'date_created'], sort: ['-date_created'] },
	[PLAN_PAGES]: { fields: ['route', 'title', 'priority', 'cluster', 'primary_keyword', 'has_post', 'pseo_id'], sort: ['-priority'] },
	[PLANS]: { fields: ['pseo_id', 'language_code', 'total_pages', 'status', 'date_created'], sort: ['-date_created'] },
	[LEDGER_TABLE]: { fields: ['date_created', 'user_id', 'reason', 'amount', 'balance_after', 'generation_id', 'note'], sort: ['-date_created'] },
};

/**
 * Gives each collection a default list layout (a global preset) when it has none. An admin's own changes to
 * these presets are kept: existing presets are never touched.
 */
export async function provisionListPresets(context: ServiceContext): Promise<number> {
	const { database, services } = context;
	const schema = await context.getSchema({ database });
	const presets = new services.PresetsService(systemServiceOptions(database, schema));
	let created = 0;
	for (const [collection, { fields, sort }] of Object.entries(LIST_PRESETS)) {
		const existing = await database('directus_presets')
			.where({ collection })
			.whereNull('user')
			.whereNull('role')
			.whereNull('bookmark')
			.first('id');
		if (existing) continue;
		await presets.createOne({
			collection,
			layout: 'tabular',
			layout_query: { tabular: { fields, sort, page: 1 } },
			layout_options: { tabular: { widths: {} } },
		});
		created++;
	}
	return created;
}
