import type { DataSourceState } from '../../plan/data-source-store.ts';
import type { AutoRefreshState } from '../../websites/auto-refresh-store.ts';
import type { CapToday } from './blockers.ts';
import type { Facts } from '../../shared/facts.ts';
import type { Rates } from './cost.ts';
import type { ProviderCatalog } from './providers.ts';
import type { ProviderKind } from '../../shared/provider-kinds.ts';
import { ledgerParams, type LedgerQuery, type LedgerRow, type Person } from './ledger.ts';

/*
 * The module's calls, through the app's own axios instance (useApi()), so they carry the editor's session. Routes
 * under /pseo-endpoints for actions; Directus's items API for lists, which the extension narrows to the caller's
 * own rows.
 */

interface Http {
	get<T = unknown>(url: string, config?: { params?: Record<string, unknown> }): Promise<{ data: T }>;
	post<T = unknown>(url: string, body?: unknown): Promise<{ data: T }>;
	put<T = unknown>(url: string, body?: unknown): Promise<{ data: T }>;
	patch<T = unknown>(url: string, body?: unknown): Promise<{ data: T }>;
	delete<T = unknown>(url: string): Promise<{ data: T }>;
}

const BASE = '/pseo-endpoints';

export interface Website {
	id: number;
	website_url: string;
	website_software: string;
	post_counts_total: number;
	/** The most tokens the website may spend per UTC day; null for no cap. */
	daily_token_cap?: number | null;
	/** The AI provider and model of its jobs and plans; null for the default (GET /providers). */
	provider?: ProviderKind | null;
	model?: string | null;
	/** The collection the plan follows (POST /plan/import with `follow`); null when none. */
	data_source?: { collection: string; filter: Record<string, unknown> | null; source: string } | null;
	/** How the following goes, or why it stopped; null before the first. */
	data_source_state?: DataSourceState | null;
	/** Whether stale posts are refreshed by a job the extension starts, at most once an interval. */
	auto_refresh?: boolean | null;
	auto_refresh_state?: AutoRefreshState | null;
}

export interface Job {
	id: number;
	pseo_id: number;
	status: string;
	requested_count: number;
	created_count: number;
	failed_count: number;
	failed_routes: { route: string; error: string }[];
	date_created: string;
	date_completed: string | null;
	/** The failures of its latest steps in a row; null while all is well. */
	last_error: { code: string; message: string; at: string; attempts: number; since: string } | null;
	/** True while its steps keep failing. */
	attention: boolean;
	/** The provider and model it was accepted with; null for a job accepted before jobs recorded them. */
	provider: ProviderKind | null;
	model: string | null;
	/** What started it (absent from a server older than refresh jobs). */
	kind?: 'on_demand' | 'bulk' | 'retry' | 'regenerate' | 'refresh';
}

export interface Publication {
	id: number;
	status: string;
	requested_count: number;
	created_count: number;
	updated_count: number;
	unchanged_count: number;
	failed_count: number;
	failed_posts: { post_id: number; route: string; error: string }[];
	/** What the publication tells its owner once, such as structured data it had to leave out. */
	notices?: string[];
	last_error: Job['last_error'];
	attention: boolean;
}

/**
 * The collections the module watches live (lib/live-updates.ts): a website's jobs, and one publication. The
 * subscription's query names the few fields it needs; the module reads the record itself through the routes.
 */
export const liveTopics = {
	jobs: (pseoId: number) => ({ collection: 'pseo_generations', query: { fields: ['id'], filter: { pseo_id: { _eq: pseoId } } } }),
	publication: (id: number) => ({ collection: 'pseo_publications', query: { fields: ['id'], filter: { id: { _eq: id } } } }),
};

/** One finding of the quality gate on a post. */
export interface QualityIssue {
	check: string;
	severity: 'fail' | 'warn';
	detail: string;
}

export function pseoApi(http: Http) {
	return {
		balance: async () => (await http.get<{ data: { balance: number; rates: Rates; daily_cap?: CapToday | null } }>(`${BASE}/balance`)).data.data,
		/**
		 * The website's plan pages, and how many of them have no post yet; null when that is not known here: a plan
		 * written through the items API gets its page rows only when a job or start-up first reads it. Retired pages
		 * (a sync of their source found no row for them) are not counted: nothing generates them.
		 */
		openRoutes: async (pseoId: number): Promise<{ open: number; total: number } | null> => {
			const rows = (
				await http.get<{ data: { has_post: unknown; count: { id: number | string } }[] }>('/items/pseo_plan_pages', {
					params: { aggregate: { count: ['id'] }, groupBy: ['has_post'], filter: { pseo_id: { _eq: pseoId }, retired_at: { _null: true } } },
				})
			).data.data;
			const counted = rows.map((row) => ({ posted: row.has_post === true || row.has_post === 1 || row.has_post === '1', count: Number(row.count.id) }));
			const total = counted.reduce((sum, row) => sum + row.count, 0);
			if (total === 0) {
				const plans = (await http.get<{ data: unknown[] }>('/items/pseo_main_json', { params: { fields: ['id'], filter: { pseo_id: { _eq: pseoId }, status: { _eq: 'ready' } }, limit: 1 } })).data.data;
				if (plans.length > 0) return null;
			}
			return { open: counted.filter((row) => !row.posted).reduce((sum, row) => sum + row.count, 0), total };
		},
		/** What the website spent today (UTC), charges less refunds, as its daily cap counts it. */
		spentToday: async (pseoId: number, now = new Date()) => {
			const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString();
			const rows = (
				await http.get<{ data: { sum: { amount: number | string | null } }[] }>('/items/pseo_token_ledger', {
					params: { aggregate: { sum: ['amount'] }, filter: { _and: [{ pseo_id: { _eq: pseoId } }, { reason: { _in: ['charge', 'refund'] } }, { date_created: { _gte: midnight } }] } },
				})
			).data.data;
			return -Number(rows[0]?.sum.amount ?? 0);
		},
		websites: async () =>
			(await http.get<{ data: Website[] }>('/items/pseo', { params: { fields: ['id', 'website_url', 'website_software', 'post_counts_total'], sort: ['-id'], limit: 100 } })).data.data,
		website: async (id: number) => (await http.get<{ data: Website & { master_prompt: string } }>(`/items/pseo/${id}`)).data.data,
		createWebsite: async (body: { website_url: string; master_prompt: string; website_software: string; provider?: ProviderKind | null; model?: string | null }) =>
			(await http.post<{ data: Website }>(`${BASE}/pseo`, body)).data.data,
		/** The website's provider and model, through the items API (the owner may; null for the default). */
		saveAi: async (pseoId: number, body: { provider: ProviderKind | null; model: string | null }) =>
			(await http.patch(`/items/pseo/${pseoId}`, body)).data,
		/** Stops the following of a collection, or turns the automatic refresh on or off, through the items API. */
		saveFollowing: async (pseoId: number, body: { data_source: null } | { auto_refresh: boolean }) => (await http.patch(`/items/pseo/${pseoId}`, body)).data,
		/** The fields of a collection the editor may read, and the paths of its many-to-one related items' fields. */
		collectionPaths: async (collection: string) => {
			const fieldsOf = async (name: string) =>
				((await http.get<{ data: { field: string; type: string; schema: { is_primary_key?: boolean } | null }[] }>(`/fields/${name}`)).data.data).filter((entry) => entry.schema !== null && entry.type !== 'alias');
			const relations = (await http.get<{ data: { field: string; related_collection: string | null }[] }>(`/relations/${collection}`)).data.data;
			const paths: string[] = [];
			for (const entry of await fieldsOf(collection)) {
				if (entry.schema?.is_primary_key) continue;
				const related = relations.find((relation) => relation.field === entry.field && relation.related_collection)?.related_collection;
				if (!related) {
					paths.push(entry.field);
					continue;
				}
				// One level of a related item's fields, by their path; what the editor may not read is left out.
				const inner = await fieldsOf(related).catch(() => []);
				paths.push(...inner.filter((field) => !field.schema?.is_primary_key).map((field) => `${entry.field}.${field.field}`));
			}
			return paths;
		},
		/** The AI providers and models a website may name, and the default of those that name none. */
		providers: async () => (await http.get<{ data: ProviderCatalog }>(`${BASE}/providers`)).data.data,
		jobs: async (pseoId: number) => (await http.get<{ data: Job[] }>(`${BASE}/generations`, { params: { pseo_id: pseoId } })).data.data,
		job: async (id: number) => (await http.get<{ data: Job }>(`${BASE}/generations/${id}`)).data.data,
		trigger: async (mode: 'on_demand' | 'bulk', pseoId: number, postCount: number) =>
			(await http.post<{ generation_id: number }>(`${BASE}/trigger/${mode === 'bulk' ? 'bulk-generation' : 'on-demand-generation'}`, { pseo_id: pseoId, post_count: postCount })).data,
		cancel: async (id: number) => (await http.post(`${BASE}/generations/${id}/cancel`)).data,
		retry: async (id: number) => (await http.post<{ generation_id: number }>(`${BASE}/generations/${id}/retry`)).data,
		generatePlan: async (pseoId: number, languageCode: string, description: string) =>
			(await http.post<{ data: { total_pages: number } }>(`${BASE}/generate/main-json`, { pseo_id: pseoId, language_code: languageCode, description })).data.data,
		importPlan: async (body: Record<string, unknown>) =>
			(
				await http.post<{
					data: { total_pages: number; added: number; updated: number; unchanged: number; retired: number; skipped: { duplicate: number; on_site: number; invalid: number; missing_data: number } };
				}>(`${BASE}/plan/import`, body)
			).data.data,
		planPages: async (pseoId: number, search: string, sort: string) =>
			(
				await http.get<{
					data: { id: number; route: string; title: string; priority: number; cluster: string | null; facts: Facts | null; has_post: boolean; source: string | null; retired_at: string | null }[];
				}>('/items/pseo_plan_pages', {
					params: {
						filter: { pseo_id: { _eq: pseoId } },
						fields: ['id', 'route', 'title', 'priority', 'cluster', 'facts', 'has_post', 'source', 'retired_at'],
						sort: [sort],
						limit: 100,
						...(search ? { search } : {}),
					},
				})
			).data.data,
		/** A plan page's facts, written through the items API (the owner may; the server checks their shape). */
		saveFacts: async (planPageId: number, facts: Facts | null) => (await http.patch(`/items/pseo_plan_pages/${planPageId}`, { facts })).data,
		sitemap: async (pseoId: number) => (await http.get<{ urls: string[] }>(`${BASE}/fetch-sitemap`, { params: { pseo_id: pseoId } })).data.urls,
		posts: async (pseoId: number) =>
			(
				await http.get<{
					data: {
						id: number;
						route: string;
						title: string;
						quality_status: string | null;
						quality_score: number | null;
						remote_url: string | null;
						date_published: string | null;
						stale: boolean | null;
						stale_since: string | null;
						retired: boolean | null;
					}[];
				}>('/items/pseo_posts', {
					params: {
						filter: { pseo_id: { _eq: pseoId } },
						fields: ['id', 'route', 'title', 'quality_status', 'quality_score', 'remote_url', 'date_published', 'stale', 'stale_since', 'retired'],
						sort: ['route'],
						limit: 200,
					},
				})
			).data.data,
		/** How many of the website's posts a refresh would rewrite: stale, and not retired (the table shows 200 at most). */
		staleCount: async (pseoId: number) => {
			const rows = (
				await http.get<{ data: { count: { id: number | string } }[] }>('/items/pseo_posts', {
					params: { aggregate: { count: ['id'] }, filter: { pseo_id: { _eq: pseoId }, stale: { _eq: true }, retired: { _eq: false } } },
				})
			).data.data;
			return Number(rows[0]?.count.id ?? 0);
		},
		/** Rewrites the website's stale posts from their current facts (POST /trigger/refresh-generation). */
		refresh: async (pseoId: number) => (await http.post<{ generation_id: number }>(`${BASE}/trigger/refresh-generation`, { pseo_id: pseoId })).data,
		post: async (id: number) =>
			(
				await http.get<{
					data: {
						id: number;
						route: string;
						title: string;
						body: string;
						meta_description: string | null;
						quality_status: string | null;
						quality_issues: QualityIssue[] | null;
						facts: Facts | null;
						structured_data: unknown[] | null;
						pseo_id: number;
						stale: boolean | null;
						stale_since: string | null;
					};
				}>(`/items/pseo_posts/${id}`)
			).data.data,
		/** The facts the plan page of a route holds now; null when the plan has no such page, or it has none. */
		currentFacts: async (pseoId: number, route: string) =>
			(
				await http.get<{ data: { facts: Facts | null }[] }>('/items/pseo_plan_pages', {
					params: { filter: { pseo_id: { _eq: pseoId }, route: { _eq: route } }, fields: ['facts'], limit: 1 },
				})
			).data.data[0]?.facts ?? null,
		regenerate: async (postId: number, instructions: string) =>
			(await http.post<{ generation_id: number }>(`${BASE}/posts/${postId}/regenerate`, instructions.trim() ? { instructions } : {})).data,
		target: async (pseoId: number) => (await http.get<{ data: Record<string, unknown> }>(`${BASE}/pseo/${pseoId}/publishing`)).data.data,
		saveTarget: async (pseoId: number, body: Record<string, unknown>) => (await http.put<{ data: Record<string, unknown> }>(`${BASE}/pseo/${pseoId}/publishing`, body)).data.data,
		removeTarget: async (pseoId: number) => (await http.delete(`${BASE}/pseo/${pseoId}/publishing`)).data,
		publish: async (body: Record<string, unknown>) => (await http.post<{ publication_id: number }>(`${BASE}/publish`, body)).data,
		publication: async (id: number) => (await http.get<{ data: Publication }>(`${BASE}/publications/${id}`)).data.data,
		/** A page of the ledger (lib/ledger.ts) and how many entries match in all. */
		ledger: async (query: LedgerQuery) => {
			const response = await http.get<{ data: LedgerRow[]; meta?: { filter_count?: number } }>('/items/pseo_token_ledger', { params: ledgerParams(query) });
			return { rows: response.data.data, total: Number(response.data.meta?.filter_count ?? response.data.data.length) };
		},
		/** Users by id, or the first 200 by name (an admin's filter); only what an admin may read of every user. */
		people: async (ids?: string[]) =>
			(
				await http.get<{ data: Person[] }>('/users', {
					params: { fields: ['id', 'first_name', 'last_name', 'email'], sort: ['first_name', 'last_name', 'email'], limit: 200, ...(ids ? { filter: { id: { _in: ids } } } : {}) },
				})
			).data.data,
		/** Websites' addresses by id, or the first 200 (an admin's filter, every user's websites). */
		websiteNames: async (ids?: number[]) =>
			(await http.get<{ data: { id: number; website_url: string }[] }>('/items/pseo', { params: { fields: ['id', 'website_url'], sort: ['website_url'], limit: 200, ...(ids ? { filter: { id: { _in: ids } } } : {}) } }))
				.data.data,
		/** The provider's tokens and requests per website and UTC day, the past three months (admins: every website). */
		usage: async () =>
			(
				await http.get<{ data: Record<string, unknown>[] }>('/items/pseo_generations', {
					params: { aggregate: { sum: ['usage_prompt_tokens', 'usage_completion_tokens', 'usage_requests'] }, groupBy: ['pseo_id', 'day(date_created)', 'month(date_created)', 'year(date_created)'], filter: { date_created: { _gte: '$NOW(-90 days)' } }, limit: 1000 },
				})
			).data.data,
	};
}

export type PseoApi = ReturnType<typeof pseoApi>;
