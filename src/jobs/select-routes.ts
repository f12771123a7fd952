import type { Knex } from 'knex';
import { InvalidPayloadError } from '../errors/index.ts';
import { byPriority, type PlanPage } from '../plan/plan-page.ts';
import { readCurrentPlan, type StoredPlan } from '../plan/plan-store.ts';
import { postedRoutes } from '../posts/post-store.ts';

/**
 * The next `count` routes to generate for a website: from its current plan, highest priority first, skipping
 * routes that already have a post (operating contract section 4). 400 when there is no plan or too few
 * ungenerated routes; nothing is charged then.
 */
export async function selectRoutes(knex: Knex, pseoId: number, count: number): Promise<{ plan: StoredPlan; routes: PlanPage[] }> {
	const plan = await readCurrentPlan(knex, pseoId);
	if (!plan || plan.pages.length === 0) {
		throw new InvalidPayloadError({
			reason: `PSEO ${pseoId} has no content plan yet: generate one with POST /pseo-endpoints/generate/main-json first.`,
		});
	}
	const existing = await postedRoutes(knex, pseoId);
	const seen = new Set<string>();
	const candidates: PlanPage[] = [];
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
