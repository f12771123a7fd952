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

interface Entry {
	item: PlanPage;
	route: string;
	segments: string[];
	/** The parent's route (explicit `parent_route`, else one level up the path); null for the root. */
	parentRoute: string | null;
	parentKey: string | null;
	cluster: string | null;
	tokens: Set<string>;
}

interface SiblingIndex {
	/** Length of the indexed array, to notice an array that grew or shrank since. */
	sourceLength: number;
	entries: Entry[];
	byRoute: Map<string, Entry>;
	byParent: Map<string, Entry[]>;
	byCluster: Map<string, Entry[]>;
	bySection: Map<string, Entry[]>;
	byToken: Map<string, Entry[]>;
	byPriority: Entry[];
	/** How much sharing a word says, by word: rare words say more than words every page shares. */
	weights: Map<string, number>;
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
	// Built on first use: a batch ingest that rewrites no page never needs it, and for a plan of 100,000 pages it
	// costs a few hundred megabytes.
	let index: SiblingIndex | undefined;
	return (item, n = 8) => pick((index ??= buildIndex(allItems)), item, n);
}

function pick(index: SiblingIndex, item: PlanPage, n: number): Sibling[] {
	if (!Number.isInteger(n) || n < 0 || n > MAX_SIBLINGS) {
		throw new TypeError(`Expected \`n\` to be an integer from 0 to ${MAX_SIBLINGS}, got \`${String(n)}\` (${typeof n})`);
	}
	if (typeof item?.route !== 'string') throw new TypeError(`Expected \`item.route\` to be a string, got \`${String(item?.route)}\``);
	if (n === 0) return [];
	const self = toEntry(item);
	const selfParentRoute = self.parentRoute;

	const candidates = new Set<Entry>();
	const buckets: Entry[][] = [];
	const push = (bucket: Entry[] | undefined) => {
		if (bucket && bucket.length > 0) buckets.push(bucket);
	};
	const lineage: Entry[] = [];
	const parentEntry = selfParentRoute ? index.byRoute.get(selfParentRoute) : undefined;
	if (parentEntry) lineage.push(parentEntry);
	for (let depth = self.segments.length - 1; depth >= 1; depth--) {
		const ancestor = index.byRoute.get(`/${self.segments.slice(0, depth).join('/')}`);
		if (ancestor && ancestor !== parentEntry) lineage.push(ancestor);
	}
	push(lineage);
	push(index.byParent.get(self.route));
	if (self.parentKey) push(index.byParent.get(self.parentKey));
	if (self.cluster) push(index.byCluster.get(self.cluster));
	if (self.segments.length > 0) push(index.bySection.get(self.segments[0]!));
	for (const token of self.tokens) push(index.byToken.get(token));
	// Small buckets are the most specific; big ones (a 3,000-page cluster) only top up the candidate set.
	buckets.sort((a, b) => a.length - b.length);
	for (const bucket of buckets) {
		for (const entry of bucket) {
			if (candidates.size >= CANDIDATE_LIMIT) break;
			candidates.add(entry);
		}
		if (candidates.size >= CANDIDATE_LIMIT) break;
	}

	const scored: { entry: Entry; score: number }[] = [];
	for (const entry of candidates) {
		if (entry.route === self.route) continue;
		const score = relevance(self, entry, index.weights);
		if (score > 0) scored.push({ entry, score });
	}
	scored.sort((a, b) => b.score - a.score || priorityOf(b.entry) - priorityOf(a.entry) || compare(a.entry.route, b.entry.route));

	const chosen: Sibling[] = [];
	const used = new Set<string>([self.route]);
	const take = (entry: Entry) => {
		if (chosen.length >= n || used.has(entry.route)) return;
		used.add(entry.route);
		chosen.push({ route: entry.item.route, title: shorten(entry.item.title) });
	};
	for (const { entry } of scored) take(entry);
	for (const entry of index.byPriority) {
		if (chosen.length >= n) break;
		take(entry);
	}
	return chosen;
}

function relevance(self: Entry, other: Entry, weights: Map<string, number>): number {
	let score = 0;
	if (self.parentRoute !== null && other.route === self.parentRoute) score += 5;
	if (other.parentRoute === self.route) score += 4;
	if (self.parentKey !== null && self.parentKey === other.parentKey) score += 3;
	if (self.cluster !== null && self.cluster === other.cluster) score += 4;
	let shared = 0;
	while (shared < self.segments.length && shared < other.segments.length && self.segments[shared] === other.segments[shared]) shared++;
	score += Math.min(shared, 3);
	// A hub page higher up the same path (a grandparent) is worth a link too.
	if (shared === other.segments.length && shared > 0 && shared < self.segments.length) score += 2;
	let keywords = 0;
	for (const token of self.tokens) {
		if (other.tokens.has(token)) keywords += weights.get(token) ?? 0;
	}
	return score + Math.min(keywords, 4.5);
}

function buildIndex(allItems: readonly PlanPage[]): SiblingIndex {
	const entries: Entry[] = [];
	const byRoute = new Map<string, Entry>();
	for (const item of allItems) {
		if (typeof item?.route !== 'string' || typeof item.title !== 'string') continue;
		const entry = toEntry(item);
		if (byRoute.has(entry.route)) continue;
		byRoute.set(entry.route, entry);
		entries.push(entry);
	}
	const byPriority = [...entries].sort((a, b) => priorityOf(b) - priorityOf(a) || compare(a.route, b.route));
	const byParent = new Map<string, Entry[]>();
	const byCluster = new Map<string, Entry[]>();
	const bySection = new Map<string, Entry[]>();
	const byToken = new Map<string, Entry[]>();
	const add = (map: Map<string, Entry[]>, key: string, entry: Entry) => {
		const bucket = map.get(key);
		if (bucket) bucket.push(entry);
		else map.set(key, [entry]);
	};
	// Filled in priority order, so that a bucket cut short keeps its most important pages.
	for (const entry of byPriority) {
		if (entry.parentKey) add(byParent, entry.parentKey, entry);
		if (entry.cluster) add(byCluster, entry.cluster, entry);
		if (entry.segments.length > 1) add(bySection, entry.segments[0]!, entry);
		for (const token of entry.tokens) add(byToken, token, entry);
	}
	const weights = new Map<string, number>();
	for (const [token, bucket] of byToken) weights.set(token, Math.min(1.5, Math.log2(1 + entries.length / bucket.length) / 2));
	// Keys of byParent are parent routes, so the same map also finds a page's children.
	return { weights, sourceLength: allItems.length, entries, byRoute, byParent, byCluster, bySection, byToken, byPriority };
}

function toEntry(item: PlanPage): Entry {
	const route = normalizeRoute(item.route) || '/';
	const segments = route.split('/').filter(Boolean);
	const explicitParent = normalizeRoute(item.parent_route ?? '');
	const parent = explicitParent || derivedParent(segments);
	return {
		item,
		route,
		segments,
		parentRoute: parent,
		// The root is everybody's parent in a flat plan, which says nothing about relatedness.
		parentKey: parent && parent !== '/' ? parent : null,
		cluster: typeof item.cluster === 'string' && item.cluster.trim() !== '' ? item.cluster.trim().toLowerCase() : null,
		tokens: tokensOf(`${item.primary_keyword ?? ''} ${item.title ?? ''} ${segments.at(-1) ?? ''}`),
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

function priorityOf(entry: Entry): number {
	return typeof entry.item.priority === 'number' && Number.isFinite(entry.item.priority) ? entry.item.priority : 0;
}

function compare(a: string, b: string): number {
	return a < b ? -1 : a > b ? 1 : 0;
}

function shorten(title: string): string {
	const clean = title.replace(/\s+/g, ' ').trim();
	return clean.length > TITLE_LIMIT ? `${clean.slice(0, TITLE_LIMIT - 1).trimEnd()}…` : clean;
}
