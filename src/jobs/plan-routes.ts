import type { Knex } from 'knex';
import { InvalidPayloadError } from '../errors/index.ts';
import { jsonFromDb } from '../shared/database.ts';
import type { JobRoute } from '../engine/job-types.ts';

export interface CurrentPlan {
	id: number;
	language_code: string | null;
	description: string | null;
	pages: JobRoute[];
}

/** The current content plan of a website: its newest ready plan. */
export async function currentPlan(knex: Knex, pseoId: number): Promise<CurrentPlan | null> {
	const row = (await knex('pseo_main_json')
		.where({ pseo_id: pseoId, status: 'ready' })
		.orderBy('id', 'desc')
		.first('id', 'language_code', 'description', 'main_json')) as Record<string, unknown> | undefined;
	if (!row) return null;
	const plan = jsonFromDb<{ pages?: JobRoute[] }>(row['main_json'], {});
	return {
		id: Number(row['id']),
		language_code: (row['language_code'] as string | null) ?? null,
		description: (row['description'] as string | null) ?? null,
		pages: Array.isArray(plan.pages) ? plan.pages : [],
	};
}

/** Plan pages by priority, highest first; ties keep the plan's order. */
export function byPriority(pages: JobRoute[]): JobRoute[] {
	return pages
		.map((page, index) => ({ page, index }))
		.sort((a, b) => Number(b.page.priority ?? 0) - Number(a.page.priority ?? 0) || a.index - b.index)
		.map(({ page }) => page);
}

/**
 * The next `count` routes to generate for a website: from its current plan, highest priority first, skipping
 * routes that already have a post (operating contract section 4). 400 when there is no plan or too few
 * ungenerated routes; nothing is charged then.
 */
export async function selectRoutes(knex: Knex, pseoId: number, count: number): Promise<{ plan: CurrentPlan; routes: JobRoute[] }> {
	const plan = await currentPlan(knex, pseoId);
	if (!plan || plan.pages.length === 0) {
		throw new InvalidPayloadError({
			reason: `PSEO ${pseoId} has no content plan yet: generate one with POST /pseo-endpoints/generate/main-json first.`,
		});
	}
	const existing = new Set(
		((await knex('pseo_posts').where('pseo_id', pseoId).select('route')) as { route: string }[]).map((row) => row.route),
	);
	const seen = new Set<string>();
	const candidates: JobRoute[] = [];
	for (const page of byPriority(plan.pages)) {
		if (typeof page.route !== 'string' || existing.has(page.route) || seen.has(page.route)) continue;
		seen.add(page.route);
		candidates.push(page);
		if (candidates.length === count) break;
	}
	if (candidates.length < count) {
		throw new InvalidPayloadError({
			reason: `PSEO ${pseoId} has ${candidates.length} ungenerated route(s) in its content plan; ${count} requested.`,
		});
	}
	return { plan, routes: candidates };
}
