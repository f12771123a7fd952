import type { PlanPage } from '../plan/plan-page.ts';

/** A page another page may link to. */
export interface Sibling {
	route: string;
	title: string;
}

/** The most siblings a prompt may carry, whatever the caller asks for. */
export const MAX_SIBLINGS = 50;

/** How many candidates are scored per page at most: keeps a 10,000-page plan linear rather than quadratic. */
const CANDIDATE_LIMIT = 200;
/** Sibling titles are cut to this length in prompts. */
const TITLE_LIMIT = 120;

const STOPWORDS = new Set(
	'the and for with from your you our are was were how what why when where which who best top guide page pages into about near than this that these those not all any can its their them out use using vs per'.split(' '),
);

/**
 * The plan's pages as columns of numbers rather than an object per page: every string a comparison needs (routes,
 * path segments, parents, clusters, keywords) is interned once and stored as its number, and each page's segments
 * and keywords are runs in shared typed arrays. A 100,000-page plan takes about a sixth of the memory an object per
 * page with its own keyword set took (62 MB), which matters for the flat memory of a bulk job.
 */
interface SiblingIndex {
	/** Length of the indexed array, to notice an array that grew or shrank since. */
	sourceLength: number;
	names: Names;
	/** The route and title of each page, as the plan has them, and its priority: no plan page object is kept. */
	pageRoutes: string[];
	titles: string[];
	priorities: Float64Array;
	/** The normalized route of each page. */
	routes: string[];
	byRoute: Map<string, number>;
	/** Name ids per page, -1 for none. */
	routeId: Int32Array;
	parentRoute: Int32Array;
	parentKey: Int32Array;
	cluster: Int32Array;
	/** Page i's segments are `segments[segmentStart[i] .. segmentStart[i + 1]]`; its keywords likewise. */
	segmentStart: Uint32Array;
	segments: Int32Array;
	tokenStart: Uint32Array;
	tokens: Int32Array;
	byParent: Map<number, Int32Array>;
	byCluster: Map<number, Int32Array>;
	bySection: Map<number, Int32Array>;
	byToken: Map<number, Int32Array>;
	byPriority: Int32Array;
	/** How much sharing a word says, by name id: rare words say more than words every page shares. */
	weights: Map<number, number>;
}

/** Strings interned to numbers; a string never seen has no number (-1), so it equals nothing indexed. */
interface Names {
	intern(name: string): number;
	find(name: string | null): number;
}

function createNames(): Names {
	const ids = new Map<string, number>();
	return {
		intern(name) {
			let id = ids.get(name);
			if (id === undefined) ids.set(name, (id = ids.size));
			return id;
		},
		find(name) {
			return name === null ? -1 : (ids.get(name) ?? -1);
		},
	};
}

/** What the ranking reads of a page, as name ids. */
interface Features {
	route: string;
	routeId: number;
	parentRoute: string | null;
	parentRouteId: number;
	parentKey: number;
	cluster: number;
	segments: number[];
	tokens: number[];
}

const indexes = new WeakMap<readonly PlanPage[], SiblingIndex>();

/**
 * The `n` pages of the same plan most worth linking to from `item`: its parent and children, pages with the same
 * parent or cluster, pages deeper in the same section, and pages sharing keywords, in that order of weight; ties go
 * to higher priority. Never the page itself. When too few pages are related, the plan's highest-priority pages fill
 * the list. The plan is indexed once per array (treat it as immutable), so calling this for every page of a
 * 10,000-page plan stays fast, and each page scores at most 200 candidates.
 */
export function pickSiblings(item: PlanPage, allItems: readonly PlanPage[], n = 8): Sibling[] {
	if (!Array.isArray(allItems)) throw new TypeError(`Expected \`allItems\` to be an array, got \`${String(allItems)}\``);
	let index = indexes.get(allItems);
	if (!index || index.sourceLength !== allItems.length) {
		index = buildIndex(allItems);
		indexes.set(allItems, index);
	}
	return pick(index, item, n);
}

/** A sibling picker bound to one plan, for callers that prefer to hold the index themselves. */
export function createSiblingPicker(allItems: readonly PlanPage[]): (item: PlanPage, n?: number) => Sibling[] {
	// Built at once, so that the caller's plan page objects can go: the index keeps numbers and two strings a page.
	const index = buildIndex(allItems);
	return (item, n = 8) => pick(index, item, n);
}

function pick(index: SiblingIndex, item: PlanPage, n: number): Sibling[] {
	if (!Number.isInteger(n) || n < 0 || n > MAX_SIBLINGS) {
		throw new TypeError(`Expected \`n\` to be an integer from 0 to ${MAX_SIBLINGS}, got \`${String(n)}\` (${typeof n})`);
	}
	if (typeof item?.route !== 'string') throw new TypeError(`Expected \`item.route\` to be a string, got \`${String(item?.route)}\``);
	if (n === 0) return [];
	const self = featuresOf(item, (name) => index.names.find(name));

	const buckets: ArrayLike<number>[] = [];
	const push = (bucket: ArrayLike<number> | undefined) => {
		if (bucket && bucket.length > 0) buckets.push(bucket);
	};
	const lineage: number[] = [];
	const parentEntry = self.parentRoute ? index.byRoute.get(self.parentRoute) : undefined;
	if (parentEntry !== undefined) lineage.push(parentEntry);
	const path = self.route.split('/').filter(Boolean);
	for (let depth = path.length - 1; depth >= 1; depth--) {
		const ancestor = index.byRoute.get(`/${path.slice(0, depth).join('/')}`);
		if (ancestor !== undefined && ancestor !== parentEntry) lineage.push(ancestor);
	}
	push(lineage);
	if (self.routeId >= 0) push(index.byParent.get(self.routeId));
	if (self.parentKey >= 0) push(index.byParent.get(self.parentKey));
	if (self.cluster >= 0) push(index.byCluster.get(self.cluster));
	if (self.segments.length > 0 && self.segments[0]! >= 0) push(index.bySection.get(self.segments[0]!));
	for (const token of self.tokens) if (token >= 0) push(index.byToken.get(token));
	// Small buckets are the most specific; big ones (a 3,000-page cluster) only top up the candidate set.
	buckets.sort((a, b) => a.length - b.length);
	const candidates = new Set<number>();
	for (const bucket of buckets) {
		for (let i = 0; i < bucket.length && candidates.size < CANDIDATE_LIMIT; i++) candidates.add(bucket[i]!);
		if (candidates.size >= CANDIDATE_LIMIT) break;
	}

	const scored: { entry: number; score: number }[] = [];
	for (const entry of candidates) {
		if (index.routes[entry] === self.route) continue;
		const score = relevance(self, index, entry);
		if (score > 0) scored.push({ entry, score });
	}
	scored.sort((a, b) => b.score - a.score || index.priorities[b.entry]! - index.priorities[a.entry]! || compare(index.routes[a.entry]!, index.routes[b.entry]!));

	const chosen: Sibling[] = [];
	const used = new Set<string>([self.route]);
	const take = (entry: number) => {
		const route = index.routes[entry]!;
		if (chosen.length >= n || used.has(route)) return;
		used.add(route);
		chosen.push({ route: index.pageRoutes[entry]!, title: shorten(index.titles[entry]!) });
	};
	for (const { entry } of scored) take(entry);
	for (const entry of index.byPriority) {
		if (chosen.length >= n) break;
		take(entry);
	}
	return chosen;
}

function relevance(self: Features, index: SiblingIndex, other: number): number {
	let score = 0;
	if (self.parentRoute !== null && index.routes[other] === self.parentRoute) score += 5;
	if (self.routeId >= 0 && index.parentRoute[other] === self.routeId) score += 4;
	if (self.parentKey >= 0 && self.parentKey === index.parentKey[other]) score += 3;
	if (self.cluster >= 0 && self.cluster === index.cluster[other]) score += 4;
	const segmentsFrom = index.segmentStart[other]!;
	const segmentCount = index.segmentStart[other + 1]! - segmentsFrom;
	let shared = 0;
	while (shared < self.segments.length && shared < segmentCount && self.segments[shared] === index.segments[segmentsFrom + shared]) shared++;
	score += Math.min(shared, 3);
	// A hub page higher up the same path (a grandparent) is worth a link too.
	if (shared === segmentCount && shared > 0 && shared < self.segments.length) score += 2;
	let keywords = 0;
	const tokensFrom = index.tokenStart[other]!;
	const tokensTo = index.tokenStart[other + 1]!;
	for (const token of self.tokens) {
		if (token < 0) continue;
		for (let i = tokensFrom; i < tokensTo; i++) {
			if (index.tokens[i] === token) {
				keywords += index.weights.get(token) ?? 0;
				break;
			}
		}
	}
	return score + Math.min(keywords, 4.5);
}

function buildIndex(allItems: readonly PlanPage[]): SiblingIndex {
	const names = createNames();
	const pageRoutes: string[] = [];
	const titles: string[] = [];
	const priorityList: number[] = [];
	const routes: string[] = [];
	const byRoute = new Map<string, number>();
	const features: Features[] = [];
	for (const item of allItems) {
		if (typeof item?.route !== 'string' || typeof item.title !== 'string') continue;
		const entry = featuresOf(item, (name) => (name === null ? -1 : names.intern(name)));
		if (byRoute.has(entry.route)) continue;
		byRoute.set(entry.route, routes.length);
		pageRoutes.push(item.route);
		titles.push(item.title);
		priorityList.push(priorityOf(item));
		routes.push(entry.route);
		features.push(entry);
	}
	const count = routes.length;
	const priorities = Float64Array.from(priorityList);
	const routeId = new Int32Array(count);
	const parentRoute = new Int32Array(count);
	const parentKey = new Int32Array(count);
	const cluster = new Int32Array(count);
	const segmentStart = new Uint32Array(count + 1);
	const tokenStart = new Uint32Array(count + 1);
	let segmentTotal = 0;
	let tokenTotal = 0;
	for (const entry of features) {
		segmentTotal += entry.segments.length;
		tokenTotal += entry.tokens.length;
	}
	const segments = new Int32Array(segmentTotal);
	const tokens = new Int32Array(tokenTotal);
	let segmentAt = 0;
	let tokenAt = 0;
	features.forEach((entry, i) => {
		routeId[i] = entry.routeId;
		parentRoute[i] = entry.parentRouteId;
		parentKey[i] = entry.parentKey;
		cluster[i] = entry.cluster;
		segmentStart[i] = segmentAt;
		segments.set(entry.segments, segmentAt);
		segmentAt += entry.segments.length;
		tokenStart[i] = tokenAt;
		tokens.set(entry.tokens, tokenAt);
		tokenAt += entry.tokens.length;
	});
	segmentStart[count] = segmentAt;
	tokenStart[count] = tokenAt;
	const priorityOrder = Array.from({ length: count }, (_, i) => i).sort(
		(a, b) => priorities[b]! - priorities[a]! || compare(routes[a]!, routes[b]!),
	);

	const byParent = new Map<number, number[]>();
	const byCluster = new Map<number, number[]>();
	const bySection = new Map<number, number[]>();
	const byToken = new Map<number, number[]>();
	const add = (map: Map<number, number[]>, key: number, entry: number) => {
		const bucket = map.get(key);
		if (bucket) bucket.push(entry);
		else map.set(key, [entry]);
	};
	// Filled in priority order, so that a bucket cut short keeps its most important pages.
	for (const entry of priorityOrder) {
		const { parentKey: parent, cluster: group, segments: path, tokens: words } = features[entry]!;
		if (parent >= 0) add(byParent, parent, entry);
		if (group >= 0) add(byCluster, group, entry);
		if (path.length > 1) add(bySection, path[0]!, entry);
		for (const token of words) add(byToken, token, entry);
	}
	const weights = new Map<number, number>();
	for (const [token, bucket] of byToken) weights.set(token, Math.min(1.5, Math.log2(1 + count / bucket.length) / 2));
	const packed = (map: Map<number, number[]>) => new Map([...map].map(([key, bucket]) => [key, Int32Array.from(bucket)]));
	// Keys of byParent are parent routes, so the same map also finds a page's children.
	return {
		sourceLength: allItems.length,
		names,
		pageRoutes,
		titles,
		priorities,
		routes,
		byRoute,
		routeId,
		parentRoute,
		parentKey,
		cluster,
		segmentStart,
		segments,
		tokenStart,
		tokens,
		byParent: packed(byParent),
		byCluster: packed(byCluster),
		bySection: packed(bySection),
		byToken: packed(byToken),
		byPriority: Int32Array.from(priorityOrder),
		weights,
	};
}

/** A page's features, its strings turned into name ids by `id` (interning while indexing, looking up when picking). */
function featuresOf(item: PlanPage, id: (name: string | null) => number): Features {
	const route = normalizeRoute(item.route) || '/';
	const segments = route.split('/').filter(Boolean);
	const explicitParent = normalizeRoute(item.parent_route ?? '');
	const parent = explicitParent || derivedParent(segments);
	// The root is everybody's parent in a flat plan, which says nothing about relatedness.
	const parentKey = parent && parent !== '/' ? parent : null;
	const cluster = typeof item.cluster === 'string' && item.cluster.trim() !== '' ? item.cluster.trim().toLowerCase() : null;
	return {
		route,
		routeId: id(route),
		parentRoute: parent,
		parentRouteId: id(parent),
		parentKey: id(parentKey),
		cluster: id(cluster === null ? null : `cluster:${cluster}`),
		segments: segments.map((segment) => id(`segment:${segment}`)),
		tokens: [...tokensOf(`${item.primary_keyword ?? ''} ${item.title ?? ''} ${segments.at(-1) ?? ''}`)].map((token) => id(`token:${token}`)),
	};
}

function tokensOf(text: string): Set<string> {
	const tokens = new Set<string>();
	for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
		if (word.length >= 3 && !STOPWORDS.has(word)) tokens.add(word);
	}
	return tokens;
}

function normalizeRoute(route: string): string {
	const trimmed = route.trim();
	if (trimmed === '') return '';
	return trimmed.length > 1 ? trimmed.replace(/\/+$/, '') || '/' : trimmed;
}

function derivedParent(segments: string[]): string | null {
	if (segments.length === 0) return null;
	return segments.length === 1 ? '/' : `/${segments.slice(0, -1).join('/')}`;
}

function priorityOf(item: PlanPage): number {
	return typeof item.priority === 'number' && Number.isFinite(item.priority) ? item.priority : 0;
}

function compare(a: string, b: string): number {
	return a < b ? -1 : a > b ? 1 : 0;
}

function shorten(title: string): string {
	const clean = title.replace(/\s+/g, ' ').trim();
	return clean.length > TITLE_LIMIT ? `${clean.slice(0, TITLE_LIMIT - 1).trimEnd()}…` : clean;
}
