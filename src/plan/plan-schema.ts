import type { PlanPage } from './plan-page.ts';
// Strict-mode JSON schemas for the two plan calls. They stay constraint-light (no lengths, patterns or bounds) so that
// every OpenAI-compatible server accepts them; plan-items.ts enforces the real rules on what comes back.

export const PLAN_CLUSTERS_SCHEMA_NAME = 'pseo_plan_clusters';
export const PLAN_PAGES_SCHEMA_NAME = 'pseo_plan_page_list';

export const SEARCH_INTENTS = ['informational', 'commercial', 'transactional', 'navigational'] as const;
export type SearchIntent = (typeof SEARCH_INTENTS)[number];

export const PAGE_TYPES = ['service', 'location', 'category', 'article', 'guide', 'comparison', 'faq', 'landing', 'product'] as const;
export type PageType = (typeof PAGE_TYPES)[number];

/** One topical cluster as the `pseo_plan_clusters` call returns it. */
export interface PlanClusterItem {
	name: string;
	slug: string;
	description: string;
	page_count: number;
}

/**
 * One page as the `pseo_plan_page_list` call returns it: a {@link PlanPage} whose metadata is all present. After
 * repair (route a lower-case slug path unique in the plan, priority 0..100 highest first, cluster a slug) it is
 * stored as is in `main_json.pages[]`.
 */
export interface PlanPageItem extends PlanPage {
	primary_keyword: string;
	search_intent: SearchIntent;
	page_type: PageType;
	parent_route: string | null;
	cluster: string;
}

function strictObject(properties: Record<string, unknown>): Record<string, unknown> {
	return { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
}

/** Schema of the `pseo_plan_clusters` answer: `{ clusters: [{ name, slug, description, page_count }] }`. */
export const planClustersSchema: Record<string, unknown> = strictObject({
	clusters: {
		type: 'array',
		items: strictObject({
			name: { type: 'string', description: 'Human-readable cluster name in the plan language.' },
			slug: { type: 'string', description: 'Lower-case ASCII slug of the cluster, words joined by dashes.' },
			description: { type: 'string', description: 'What the pages of this cluster cover and for whom.' },
			page_count: { type: 'integer', description: 'How many pages this cluster deserves.' },
		}),
	},
});

/** Schema of the `pseo_plan_page_list` answer: `{ pages: [{ route, title, priority, ... }] }`. */
export const planPagesSchema: Record<string, unknown> = strictObject({
	pages: {
		type: 'array',
		items: strictObject({
			route: { type: 'string', description: 'Path starting with /, lower-case ASCII slug segments joined by /.' },
			title: { type: 'string', description: 'Page title in the plan language.' },
			priority: { type: 'number', description: 'Business value from 1 (lowest) to 100 (highest).' },
			primary_keyword: { type: 'string', description: 'The search query this page targets, in the plan language.' },
			search_intent: { type: 'string', enum: [...SEARCH_INTENTS] },
			page_type: { type: 'string', enum: [...PAGE_TYPES] },
			parent_route: { type: ['string', 'null'], description: 'Route of the parent (hub) page, or null.' },
			cluster: { type: 'string', description: 'Slug of the cluster the page belongs to.' },
		}),
	},
});
