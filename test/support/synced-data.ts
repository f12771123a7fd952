import { adminItems, call, type ApiResponse, type TestUser } from './api.ts';
import type { DirectusInstance } from './directus.ts';

/*
 * Data that moves: plan pages imported from rows of city prices, and synced again with changed ones, as the suites
 * of sync imports and of refresh jobs make them.
 */

/** A template of pages by city whose facts are their city and price: the sync tests' data. */
const PRICED_TEMPLATE = { route: '/{city}', title: 'Plumbers in {city}', priority: '{rank}', facts: ['city', 'price_eur'] };

/** A row of the priced data. */
export interface PriceRow {
	city: string;
	rank: number;
	price_eur: number;
}

/** POST /plan/import of the website with the priced template; `body` gives the rows, and the mode and source. */
export function importPrices(directus: DirectusInstance, user: TestUser, pseoId: number, body: Record<string, unknown>): Promise<ApiResponse> {
	return call(directus, 'POST', '/pseo-endpoints/plan/import', { token: user.token, body: { pseo_id: pseoId, language_code: 'en-GB', template: PRICED_TEMPLATE, ...body } });
}

/** A sync of `rows` as the whole truth of the source `prices`. */
export function syncPrices(directus: DirectusInstance, user: TestUser, pseoId: number, rows: readonly PriceRow[]): Promise<ApiResponse> {
	return importPrices(directus, user, pseoId, { mode: 'sync', source: 'prices', rows });
}

/** The website's posts by route, read by the admin: their freshness, retirement, text, quality and remote post. */
export async function postsByRoute(directus: DirectusInstance, pseoId: number): Promise<Map<string, Record<string, any>>> {
	const fields = 'id,route,stale,stale_since,retired,body,quality_status,quality_issues,generation_id,remote_id';
	return new Map((await adminItems(directus, 'pseo_posts', `filter[pseo_id][_eq]=${pseoId}&fields=${fields}`)).map((post) => [post.route as string, post]));
}
