import { normalizeRoute, routeKey } from './normalize-route.ts';
import { PAGE_TYPES, SEARCH_INTENTS } from './plan-schema.ts';
import type { PageType, PlanClusterItem, PlanPageItem, SearchIntent } from './plan-schema.ts';

const MAX_ROUTE_LENGTH = 200;
export const MAX_TITLE_LENGTH = 150;
const MAX_KEYWORD_LENGTH = 150;
const MAX_CLUSTER_NAME_LENGTH = 100;
const MAX_CLUSTER_DESCRIPTION_LENGTH = 500;
const MIN_PRIORITY = 0;
const MAX_PRIORITY = 100;
/** Cluster slug of pages whose cluster the model left empty or unreadable. */
const DEFAULT_CLUSTER = 'general';

/** Why a page item was left out of the plan. */
type PlanDropReason = 'not_an_object' | 'invalid_route' | 'root_route' | 'route_too_long' | 'duplicate' | 'existing_route';

/** What became of a batch of page items, for the caller's log line. */
export interface PlanItemReport {
	received: number;
	accepted: number;
	/** Accepted items that needed at least one field fixed. */
	repaired: number;
	dropped: Record<PlanDropReason, number>;
}

/** The result of repairing one page item: the page, or why it cannot be used. */
export type PageRepair = { ok: true; page: PlanPageItem; repaired: boolean } | { ok: false; reason: PlanDropReason };

/** Options of {@link repairPlanPage}. */
export interface RepairOptions {
	/** Cluster slug to set on every page (the cluster a chunk was asked for). Default: the model's own value. */
	cluster?: string;
}

const INTENT_SYNONYMS: Readonly<Record<string, SearchIntent>> = {
	info: 'informational',
	information: 'informational',
	commercial_investigation: 'commercial',
	investigational: 'commercial',
	transaction: 'transactional',
	navigation: 'navigational',
	navigate: 'navigational',
};

const PAGE_TYPE_SYNONYMS: Readonly<Record<string, PageType>> = {
	blog: 'article',
	blog_post: 'article',
	post: 'article',
	how_to: 'guide',
	howto: 'guide',
	tutorial: 'guide',
	landing_page: 'landing',
	service_page: 'service',
	services: 'service',
	city: 'location',
	local: 'location',
	location_page: 'location',
	category_page: 'category',
	hub: 'category',
	pillar: 'category',
	versus: 'comparison',
	vs: 'comparison',
	faqs: 'faq',
	questions: 'faq',
	product_page: 'product',
};

/**
 * Validates and repairs one page item from the model. Fields that can be fixed are fixed (a route is normalised,
 * an empty title is derived from the route, an unknown enum falls back to a default, a priority is clamped to
 * 0..100); an item without a usable route is dropped. The root route `/` is dropped too: every site has a home page.
 */
export function repairPlanPage(raw: unknown, options: RepairOptions = {}): PageRepair {
	if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, reason: 'not_an_object' };
	const item = raw as Record<string, unknown>;
	if (typeof item.route !== 'string') return { ok: false, reason: 'invalid_route' };
	const route = normalizeRoute(item.route);
	if (route === null) return { ok: false, reason: 'invalid_route' };
	if (route === '/') return { ok: false, reason: 'root_route' };
	if (route.length > MAX_ROUTE_LENGTH) return { ok: false, reason: 'route_too_long' };

	let repaired = route !== item.route;
	const mark = (changed: boolean): void => {
		if (changed) repaired = true;
	};

	const rawTitle = typeof item.title === 'string' ? cleanText(item.title) : '';
	const title = rawTitle === '' ? titleFromRoute(route) : cap(rawTitle, MAX_TITLE_LENGTH);
	mark(title !== item.title);

	const priority = repairPriority(item.priority);
	mark(priority !== item.priority);

	const rawKeyword = typeof item.primary_keyword === 'string' ? cleanText(item.primary_keyword) : '';
	const primaryKeyword = rawKeyword === '' ? title.toLowerCase() : cap(rawKeyword, MAX_KEYWORD_LENGTH);
	mark(primaryKeyword !== item.primary_keyword);

	const searchIntent = coerceEnum(item.search_intent, SEARCH_INTENTS, INTENT_SYNONYMS, 'informational');
	mark(searchIntent !== item.search_intent);
	const pageType = coerceEnum(item.page_type, PAGE_TYPES, PAGE_TYPE_SYNONYMS, 'article');
	mark(pageType !== item.page_type);

	let parentRoute = typeof item.parent_route === 'string' ? normalizeRoute(item.parent_route) : null;
	if (parentRoute === route || (parentRoute !== null && parentRoute.length > MAX_ROUTE_LENGTH)) parentRoute = null;
	mark(parentRoute !== (item.parent_route ?? null));

	let cluster: string;
	if (options.cluster !== undefined) {
		cluster = options.cluster;
	} else {
		cluster = (typeof item.cluster === 'string' ? slugify(item.cluster) : null) ?? DEFAULT_CLUSTER;
		mark(cluster !== item.cluster);
	}

	return {
		ok: true,
		repaired,
		page: {
			route,
			title,
			priority,
			primary_keyword: primaryKeyword,
			search_intent: searchIntent,
			page_type: pageType,
			parent_route: parentRoute,
			cluster,
		},
	};
}

/** How many items of a `pseo_plan_page_list` answer survive {@link repairPlanPage}; 0 when the answer has no `pages` array. */
export function countUsablePages(value: unknown): number {
	const pages = arrayField(value, 'pages');
	return pages === null ? 0 : pages.filter((item) => repairPlanPage(item).ok).length;
}

/**
 * The provider's `validate` hook for `pseo_plan_page_list`: an error message when the answer holds no usable page (so
 * the call is retried), null otherwise. Duplicates and existing routes do not count against an answer here; the
 * plan tops up for them instead, because a retry would likely repeat them.
 */
export function validatePlanPagesOutput(value: unknown): string | null {
	if (arrayField(value, 'pages') === null) return 'The answer has no "pages" array.';
	return countUsablePages(value) > 0 ? null : 'The answer has no page with a usable route.';
}

/**
 * Collects page items across model calls into one plan: repairs each item, drops unusable ones, keeps the first
 * item of each route, and drops routes the website already has.
 */
export class PlanCollector {
	readonly #existing: ReadonlySet<string>;
	readonly #pages: PlanPageItem[] = [];
	readonly #routes = new Set<string>();
	readonly #totals: PlanItemReport = emptyReport();

	/** `existingRoutes`: routes or full URLs already on the site; they are normalised with {@link routeKey}. */
	constructor(existingRoutes: Iterable<string> = []) {
		const keys = new Set<string>();
		for (const value of existingRoutes) {
			if (typeof value !== 'string') throw new TypeError(`existingRoutes must hold strings, received ${typeof value}.`);
			const key = routeKey(value);
			if (key !== null) keys.add(key);
		}
		this.#existing = keys;
	}

	/** Adds a batch of model items; returns what became of them. */
	add(items: readonly unknown[], options: RepairOptions = {}): PlanItemReport {
		const report = emptyReport();
		for (const item of items) {
			report.received++;
			const result = repairPlanPage(item, options);
			if (!result.ok) {
				report.dropped[result.reason]++;
				continue;
			}
			const { route } = result.page;
			if (this.#existing.has(route)) {
				report.dropped.existing_route++;
			} else if (this.#routes.has(route)) {
				report.dropped.duplicate++;
			} else {
				this.#routes.add(route);
				this.#pages.push(result.page);
				report.accepted++;
				if (result.repaired) report.repaired++;
			}
		}
		mergeReport(this.#totals, report);
		return report;
	}

	/** Accepted pages in the order they arrived. */
	get pages(): readonly PlanPageItem[] {
		return this.#pages;
	}

	get size(): number {
		return this.#pages.length;
	}

	/** The normalised routes of the site itself. */
	get existingRoutes(): ReadonlySet<string> {
		return this.#existing;
	}

	/** Everything added so far, summed. */
	get totals(): PlanItemReport {
		return { ...this.#totals, dropped: { ...this.#totals.dropped } };
	}
}

/** A cluster after repair: a unique slug, a name, a description and a wished-for page count (0 when unknown). */
export type PlanCluster = PlanClusterItem;

/**
 * Validates and repairs the clusters of a `pseo_plan_clusters` answer: a slug is derived from the name when missing,
 * clusters without a usable slug are dropped, repeated slugs keep the first, and `page_count` becomes a non-negative
 * integer (0 when missing, meaning "no preference").
 */
export function repairPlanClusters(value: unknown): { clusters: PlanCluster[]; dropped: number } {
	const items = arrayField(value, 'clusters') ?? [];
	const clusters: PlanCluster[] = [];
	const slugs = new Set<string>();
	let dropped = 0;
	for (const raw of items) {
		const item = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : null;
		const rawName = item && typeof item.name === 'string' ? cleanText(item.name) : '';
		const slug = (item && typeof item.slug === 'string' ? slugify(item.slug) : null) ?? slugify(rawName);
		if (item === null || slug === null || slugs.has(slug)) {
			dropped++;
			continue;
		}
		slugs.add(slug);
		const name = rawName === '' ? titleFromRoute(`/${slug}`) : cap(rawName, MAX_CLUSTER_NAME_LENGTH);
		const description = typeof item.description === 'string' ? cap(cleanText(item.description), MAX_CLUSTER_DESCRIPTION_LENGTH) : '';
		const count = toNumber(item.page_count);
		clusters.push({ name, slug, description, page_count: count !== null && count > 0 ? Math.round(count) : 0 });
	}
	return { clusters, dropped };
}

/** The provider's `validate` hook for `pseo_plan_clusters`: an error message when no cluster is usable. */
export function validatePlanClustersOutput(value: unknown): string | null {
	if (arrayField(value, 'clusters') === null) return 'The answer has no "clusters" array.';
	return repairPlanClusters(value).clusters.length > 0 ? null : 'The answer has no cluster with a usable slug.';
}

/** A single lower-case ASCII slug (no slashes) made from any text; null when nothing usable remains. */
export function slugify(text: string): string | null {
	const route = normalizeRoute(text.replace(/[/\\]+/g, ' '));
	return route === null || route === '/' ? null : route.slice(1);
}

function emptyReport(): PlanItemReport {
	return {
		received: 0,
		accepted: 0,
		repaired: 0,
		dropped: { not_an_object: 0, invalid_route: 0, root_route: 0, route_too_long: 0, duplicate: 0, existing_route: 0 },
	};
}

function mergeReport(into: PlanItemReport, from: PlanItemReport): void {
	into.received += from.received;
	into.accepted += from.accepted;
	into.repaired += from.repaired;
	for (const reason of Object.keys(from.dropped) as PlanDropReason[]) into.dropped[reason] += from.dropped[reason];
}

function arrayField(value: unknown, field: string): unknown[] | null {
	if (typeof value !== 'object' || value === null) return null;
	const array = (value as Record<string, unknown>)[field];
	return Array.isArray(array) ? array : null;
}

function cleanText(text: string): string {
	return text.replace(/\s+/g, ' ').trim();
}

/** Cuts text to at most `max` code points, at a word boundary when one is near the end. */
function cap(text: string, max: number): string {
	const points = [...text];
	if (points.length <= max) return text;
	const cut = points.slice(0, max).join('');
	const space = cut.lastIndexOf(' ');
	return (space > cut.length * 0.6 ? cut.slice(0, space) : cut).trim();
}

function titleFromRoute(route: string): string {
	const last = route.split('/').at(-1) ?? '';
	return last
		.split('-')
		.filter((word) => word !== '')
		.map((word) => word[0]!.toUpperCase() + word.slice(1))
		.join(' ');
}

function toNumber(value: unknown): number | null {
	if (typeof value === 'number') return Number.isFinite(value) ? value : null;
	if (typeof value === 'string' && value.trim() !== '') {
		const parsed = Number(value.trim());
		return Number.isFinite(parsed) ? parsed : null;
	}
	return null;
}

function repairPriority(value: unknown): number {
	const number = toNumber(value);
	// An unranked page is kept but ranked last, so it never pushes out a page the model did rank.
	if (number === null) return MIN_PRIORITY;
	return Math.min(MAX_PRIORITY, Math.max(MIN_PRIORITY, number));
}

function coerceEnum<T extends string>(value: unknown, allowed: readonly T[], synonyms: Readonly<Record<string, T>>, fallback: T): T {
	if (typeof value !== 'string') return fallback;
	const key = value.trim().toLowerCase().replace(/[\s-]+/g, '_');
	const direct = allowed.find((option) => option === key);
	return direct ?? synonyms[key] ?? fallback;
}
