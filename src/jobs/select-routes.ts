import type { Knex } from 'knex';
import { InvalidPayloadError } from '../errors/index.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { selectUnposted } from '../plan/plan-page-store.ts';
import { ensurePlanPages, readCurrentPlan, type StoredPlan } from '../plan/plan-store.ts';
import { postedRoutes } from '../posts/post-store.ts';
import type { Logger } from '../shared/logger.ts';

/**
 * The next `count` routes to generate for a website: from its plan pages, highest priority first, skipping
 * routes that already have a post (operating contract section 4) and retired pages (a sync of their source found no
 * row for them). 400 when there is no plan or too few ungenerated routes; nothing is charged then.
 */
export async function selectRoutes(knex: Knex, pseoId: number, count: number, logger: Logger): Promise<{ plan: StoredPlan | null; routes: PlanPage[] }> {
	await ensurePlanPages(knex, pseoId, logger);
	const plan = await readCurrentPlan(knex, pseoId);
	const routes = await selectUnposted(knex, pseoId, count, (candidates) => postedRoutes(knex, pseoId, candidates));
	if (routes.length === 0 && !plan) {
		throw new InvalidPayloadError({
			reason: `PSEO ${pseoId} has no content plan yet: generate one with POST /pseo-endpoints/generate/main-json first.`,
		});
	}
	if (routes.length < count) {
		throw new InvalidPayloadError({
			reason: `PSEO ${pseoId} has ${routes.length} ungenerated route(s) in its content plan; ${count} requested.`,
		});
	}
	return { plan, routes };
}
