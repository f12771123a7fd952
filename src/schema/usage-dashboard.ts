import type { ServiceContext } from '../shared/services.ts';
import { systemServiceOptions } from '../shared/system-context.ts';
import { JOBS } from '../engine/job-store.ts';
import { USAGE_DASHBOARD_ID } from '../shared/usage-dashboard.ts';

/*
 * Fixed ids make provisioning idempotent across instances that start together: the second insert of the same
 * id fails, and the retry finds the dashboard in place.
 */

type PanelOptions = Record<string, unknown>;

interface PanelSpec {
	id: string;
	name: string;
	icon: string;
	type: 'metric-list' | 'time-series';
	note: string;
	position: [x: number, y: number, width: number, height: number];
	options: PanelOptions;
}

const USAGE_FIELDS = [
	['usage_prompt_tokens', 'Prompt tokens'],
	['usage_completion_tokens', 'Completion tokens'],
	['usage_requests', 'Provider requests'],
] as const;

/**
 * The provider's real usage, per website and per day (the usage_* columns the engine sums on every job), so that
 * an admin can price tokens against what the provider bills. Panels read the jobs collection with the aggregate
 * queries of Directus's own Insights panels; nothing here is computed by the extension.
 */
const PANELS: PanelSpec[] = USAGE_FIELDS.flatMap(([field, label], i) => [
	{
		id: `6f1d3a2e-6c1b-4a3e-9a57-0b9e6c0d5b${i}1`,
		name: `${label} per website`,
		icon: 'language',
		type: 'metric-list' as const,
		note: 'All time, the 20 websites that used most.',
		position: [1 + i * 16, 1, 16, 12] as PanelSpec['position'],
		options: { collection: JOBS, groupByField: 'pseo_id', aggregateField: field, aggregateFunction: 'sum', sortDirection: 'desc', limit: 20 },
	},
	{
		id: `6f1d3a2e-6c1b-4a3e-9a57-0b9e6c0d5b${i}2`,
		name: `${label} per day`,
		icon: 'calendar_month',
		type: 'time-series' as const,
		note: 'Every website, by the day the job was created (UTC), past three months.',
		position: [1 + i * 16, 13, 16, 12] as PanelSpec['position'],
		options: { collection: JOBS, dateField: 'date_created', valueField: field, function: 'sum', precision: 'day', range: '3 months', decimals: 0 },
	},
]);

/**
 * Creates the "pSEO usage" Insights dashboard when it is missing. An admin's changes to it are kept: once it
 * exists, it is never touched again (deleted, it comes back on the next start).
 */
export async function provisionUsageDashboard(context: ServiceContext): Promise<boolean> {
	const { database, services } = context;
	if (await database('directus_dashboards').where('id', USAGE_DASHBOARD_ID).first('id')) return false;
	const schema = await context.getSchema({ database });
	await database.transaction(async (trx) => {
		const options = systemServiceOptions(trx, schema);
		await new services.DashboardsService(options).createOne({
			id: USAGE_DASHBOARD_ID,
			name: 'pSEO usage',
			icon: 'monitoring',
			note: "The AI provider's prompt and completion tokens and requests, per website and per day.",
		});
		const panels = new services.PanelsService(options);
		for (const panel of PANELS) {
			const [x, y, width, height] = panel.position;
			await panels.createOne({
				id: panel.id,
				dashboard: USAGE_DASHBOARD_ID,
				name: panel.name,
				icon: panel.icon,
				note: panel.note,
				type: panel.type,
				show_header: true,
				position_x: x,
				position_y: y,
				width,
				height,
				options: panel.options,
			});
		}
	});
	return true;
}
