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
}

/** Plan pages by priority, highest first; ties keep the plan's order. */
export function byPriority<T extends PlanPage>(pages: readonly T[]): T[] {
	return pages
		.map((page, index) => ({ page, index }))
		.sort((a, b) => Number(b.page.priority ?? 0) - Number(a.page.priority ?? 0) || a.index - b.index)
		.map(({ page }) => page);
}
