import type { Facts } from '../shared/facts.ts';

/**
 * One page of a website's content plan (interface 2.3: `route`, `title`, `priority`, plus SEO metadata): what a
 * job generates, what a page prompt links to, and what the plan generator produces. Plans seeded or edited by
 * hand may lack the metadata, so only the interface's three fields are required.
 */
export interface PlanPage {
	route: string;
	title: string;
	priority: number;
	primary_keyword?: string | null | undefined;
	search_intent?: string | null | undefined;
	page_type?: string | null | undefined;
	parent_route?: string | null | undefined;
	cluster?: string | null | undefined;
	/** The page's own data (an import's row, or an editor's), which the page is written from; null or absent without. */
	facts?: Facts | null | undefined;
}
