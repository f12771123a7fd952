/**
 * Default responders: they turn the product's prompt context into realistic drafts for pages and content plans.
 * Output is deterministic for a given context, so tests can rely on it.
 */
import type { FakeConfig } from './config.ts';
import { findSubSchema } from './json-schema.ts';
import type { JsonSchema } from './json-schema.ts';
import type { WireMessage } from './prompt-context.ts';

/** What a responder gets: the parsed context (empty object when the prompt had none) and the request's schema. */
export interface ResponderInput {
	task: string | null;
	context: Record<string, unknown>;
	schemaName: string | null;
	schema: JsonSchema | null;
	messages: readonly WireMessage[];
	model: string;
	config: Readonly<FakeConfig>;
}

/**
 * Produces the answer for one call. A string is sent as the message content as it is; anything else is sent as
 * its JSON. Default responders' values are then fitted to the request's schema; replacements are sent untouched.
 */
export type Responder = (input: ResponderInput) => unknown;

/** 32-bit FNV-1a hash, for deterministic choices. */
function hashString(text: string): number {
	let hash = 0x811c9dc5;
	for (let i = 0; i < text.length; i++) {
		hash ^= text.charCodeAt(i);
		hash = Math.imul(hash, 0x01000193);
	}
	return hash >>> 0;
}

/** Lower-case ASCII slug: `Best CRM Tools (2025)` becomes `best-crm-tools-2025`. */
export function slugify(text: string): string {
	const slug = text
		.normalize('NFKD')
		.replace(/[\u0300-\u036f]/g, '')
		.toLowerCase()
		.replace(/[^a-z0-9]+/g, '-')
		.replace(/^-+|-+$/g, '');
	return slug || 'page';
}

function text(value: unknown, fallback: string): string {
	return typeof value === 'string' && value.trim() !== '' ? value.trim() : fallback;
}

function positiveInt(value: unknown, fallback: number): number {
	return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : fallback;
}

function titleFromRoute(route: string): string {
	const last = route.split('/').filter(Boolean).pop() ?? 'home';
	return last.replace(/[-_]+/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());
}

function subjectOf(context: Record<string, unknown>): string {
	const raw = text(context.business_description ?? context.description ?? context.website_name ?? context.domain, 'your business');
	return raw.split(/\s+/).slice(0, 8).join(' ').replace(/[.,;:]+$/, '');
}

const SENTENCES = [
	'Choosing the right approach to {kw} starts with a clear picture of what you need and what you can spend.',
	'Most people underestimate how much time {kw} takes until they plan it step by step.',
	'A short checklist keeps {kw} on track and makes it easy to compare options side by side.',
	'Costs for {kw} vary with scope, location and timing, so ask for a written estimate before you commit.',
	'Reading recent reviews is the fastest way to spot providers who deliver what they promise.',
	'Small details, such as warranties and response times, often matter more than the headline price.',
	'If you are new to {kw}, begin with the basics and add extras only once the essentials work.',
	'Experienced customers keep notes of every decision, which pays off when something needs fixing later.',
	'Local regulations can change what is allowed, so check them early to avoid surprises.',
	'A good plan for {kw} balances quality, budget and the time you can realistically give it.',
	'Ask about maintenance up front: the cheapest option today is not always the cheapest over five years.',
	'Comparing three quotes is usually enough to see where the fair price for {kw} lies.',
];

function paragraph(seed: number, keyword: string, count: number): string {
	const out: string[] = [];
	for (let i = 0; i < count; i++) out.push((SENTENCES[(seed + i * 5) % SENTENCES.length] ?? '').replaceAll('{kw}', keyword));
	return out.join(' ');
}

/** A description of 120 to 160 characters that ends on a whole word. */
export function metaDescription(title: string, keyword: string): string {
	let draft = `${title}: a practical guide to ${keyword}, with clear steps, honest costs, common mistakes to avoid and answers to the questions people ask most.`;
	while (draft.length < 160) draft += ' Compare your options and decide with confidence.';
	let cut = draft.lastIndexOf(' ', 156);
	if (cut < 120) cut = 156;
	return `${draft.slice(0, cut).replace(/[\s,.:;]+$/, '').padEnd(119, '.')}.`;
}

interface Sibling {
	route: string;
	title: string;
}

function siblingsOf(context: Record<string, unknown>, own: string): Sibling[] {
	const raw = Array.isArray(context.sibling_routes) ? context.sibling_routes : [];
	return raw
		.map((item: unknown): Sibling | null => {
			if (typeof item === 'string') return { route: item, title: titleFromRoute(item) };
			if (typeof item === 'object' && item !== null && typeof (item as Sibling).route === 'string') {
				return { route: (item as Sibling).route, title: text((item as Sibling).title, titleFromRoute((item as Sibling).route)) };
			}
			return null;
		})
		.filter((item): item is Sibling => item !== null && item.route !== own);
}

/** Two siblings picked deterministically from the route, or fewer when the plan has fewer. */
function pickSiblings(siblings: Sibling[], seed: number): Sibling[] {
	if (siblings.length <= 2) return siblings;
	const first = seed % siblings.length;
	const second = (first + 1 + ((seed >>> 8) % (siblings.length - 1))) % siblings.length;
	return [siblings[first], siblings[second]].filter((item): item is Sibling => item !== undefined);
}

/** `task: "page"`: a full page that links to two sibling routes. */
export const pageResponder: Responder = ({ context }) => {
	const route = text(context.route, '/page');
	const title = text(context.title, titleFromRoute(route));
	const keyword = text(context.primary_keyword, title.toLowerCase());
	const seed = hashString(route);
	const links = pickSiblings(siblingsOf(context, route), seed);
	const linkText = (sibling: Sibling | undefined): string =>
		sibling ? ` For more detail, see [${sibling.title}](${sibling.route}).` : '';
	// A new version of a page follows the editor's instructions: here, visibly, as a closing section.
	const instructions = typeof context.editor_instructions === 'string' ? context.editor_instructions : null;
	const body = [
		`## ${title}`,
		paragraph(seed, keyword, 4),
		`### What to look for\n\n${paragraph(seed + 1, keyword, 4)}${linkText(links[0])}`,
		`### Costs and planning\n\n${paragraph(seed + 2, keyword, 4)}${linkText(links[1])}`,
		`### Next steps\n\n${paragraph(seed + 3, keyword, 3)}`,
		...(instructions ? [`### As requested\n\n${instructions}`] : []),
	].join('\n\n');
	return {
		title,
		meta_title: title.length > 52 ? title.slice(0, 60).trimEnd() : `${title} | Guide`,
		meta_description: metaDescription(title, keyword),
		slug: route.split('/').filter(Boolean).pop() ?? '',
		h1: title,
		body_markdown: body,
		faq: [
			{ question: `How much does ${keyword} cost?`, answer: paragraph(seed + 4, keyword, 2) },
			{ question: `How long does ${keyword} take?`, answer: paragraph(seed + 5, keyword, 2) },
			{ question: `What should I check before choosing ${keyword}?`, answer: paragraph(seed + 6, keyword, 2) },
		],
		internal_links: links.map((sibling) => ({ anchor: sibling.title, route: sibling.route })),
		schema_type: 'Article',
	};
};

const CLUSTER_TOPICS = [
	'Getting Started',
	'Pricing and Costs',
	'Comparisons',
	'Use Cases',
	'Locations',
	'Best Practices',
	'Troubleshooting',
	'Integrations',
	'Industries',
	'Tutorials',
	'Features',
	'Resources',
];

/** `task: "plan_clusters"`: `cluster_count` clusters whose page counts sum to `total_pages`. */
export const planClustersResponder: Responder = ({ context }) => {
	const count = Math.max(1, positiveInt(context.cluster_count, 3));
	const total = positiveInt(context.total_pages, count * 5);
	const subject = subjectOf(context);
	const used = new Set<string>();
	const clusters = Array.from({ length: count }, (_, i) => {
		const base = CLUSTER_TOPICS[i % CLUSTER_TOPICS.length] ?? 'Topics';
		const name = i < CLUSTER_TOPICS.length ? base : `${base} ${Math.floor(i / CLUSTER_TOPICS.length) + 1}`;
		let slug = slugify(name);
		while (used.has(slug)) slug = `${slug}-x`;
		used.add(slug);
		return {
			name,
			slug,
			description: `Pages about ${name.toLowerCase()} for ${subject}.`,
			page_count: Math.floor(total / count) + (i < total % count ? 1 : 0),
		};
	});
	return { clusters };
};

const PAGE_MODIFIERS = [
	'Complete Guide to',
	'How to Choose',
	'Cost of',
	'Checklist for',
	'Common Mistakes in',
	"Beginner's Guide to",
	'Top Tips for',
	'Questions About',
	'Alternatives in',
	'Trends in',
];

const INTENTS = ['informational', 'commercial', 'transactional', 'navigational'];
const PAGE_TYPES = ['guide', 'article', 'landing', 'comparison', 'faq'];

/** How many of `n` items a rate touches: at least one when the rate is above zero. */
function rateCount(rate: number, n: number): number {
	if (rate <= 0 || n === 0) return 0;
	return Math.min(n, Math.max(1, Math.round(rate * n)));
}

function enumOr(schema: JsonSchema | null, path: string[], fallback: string[]): unknown[] {
	const sub = schema ? findSubSchema(schema, path) : null;
	return Array.isArray(sub?.enum) && sub.enum.length > 0 ? sub.enum.filter((value) => value !== null) : fallback;
}

function priorityFor(schema: JsonSchema | null, index: number, count: number): number {
	const sub = schema ? findSubSchema(schema, ['pages', '*', 'priority']) : null;
	const low = typeof sub?.minimum === 'number' ? sub.minimum : 0;
	const high = typeof sub?.maximum === 'number' ? sub.maximum : 1;
	const integer = sub?.type === 'integer' || (Array.isArray(sub?.type) && sub.type.includes('integer'));
	const share = count <= 1 ? 1 : 1 - index / (count - 1);
	const value = low + (high - low) * share;
	return integer ? Math.round(value) : Math.round(value * 100) / 100;
}

function invalidRoute(route: string, index: number): string {
	return index % 2 === 0 ? route.toUpperCase() : route.replace(/^\/+/, '');
}

/**
 * `task: "plan_pages"`: `page_count` pages of one cluster at `/<cluster-slug>/<slug-of-title>`, none of them in
 * `avoid_routes`, with the plan knobs (`planIncludeRoutes`, `planInvalidRate`, `planDuplicateRate`) applied on top.
 */
export const planPagesResponder: Responder = ({ context, schema, config }) => {
	const cluster = typeof context.cluster === 'object' && context.cluster !== null ? (context.cluster as Record<string, unknown>) : {};
	const clusterName = text(cluster.name, 'General');
	const clusterSlug = text(cluster.slug, slugify(clusterName));
	const count = positiveInt(context.page_count, 5);
	const taken = new Set(Array.isArray(context.avoid_routes) ? context.avoid_routes.filter((r): r is string => typeof r === 'string') : []);
	const intents = enumOr(schema, ['pages', '*', 'search_intent'], INTENTS);
	const pageTypes = enumOr(schema, ['pages', '*', 'page_type'], PAGE_TYPES);
	const pages: Record<string, unknown>[] = [];
	for (let i = 0, attempt = 0; pages.length < count; attempt++) {
		const modifier = PAGE_MODIFIERS[attempt % PAGE_MODIFIERS.length] ?? 'About';
		const round = Math.floor(attempt / PAGE_MODIFIERS.length);
		const title = `${modifier} ${clusterName}${round > 0 ? ` (Part ${round + 1})` : ''}`;
		const route = `/${clusterSlug}/${slugify(title)}`;
		if (taken.has(route)) continue;
		taken.add(route);
		pages.push({
			route,
			title,
			priority: priorityFor(schema, i, count),
			primary_keyword: `${clusterName.toLowerCase()} ${modifier.toLowerCase().split(' ')[0]}`.trim(),
			search_intent: intents[i % intents.length],
			page_type: pageTypes[i % pageTypes.length],
			parent_route: `/${clusterSlug}`,
			cluster: clusterSlug,
		});
		i++;
	}
	config.planIncludeRoutes.slice(0, count).forEach((route, i) => {
		const page = pages[i];
		if (page) Object.assign(page, { route, title: titleFromRoute(route) });
	});
	const invalid = rateCount(config.planInvalidRate, count);
	for (let j = 0; j < invalid; j++) {
		const page = pages[Math.floor(count / 2) + j] ?? pages[j];
		if (page) page.route = invalidRoute(String(page.route), j);
	}
	const duplicates = Math.min(rateCount(config.planDuplicateRate, count), count - 1);
	for (let j = 0; j < duplicates; j++) {
		const page = pages[count - 1 - j];
		const original = pages[j];
		if (page && original) page.route = original.route;
	}
	return { pages };
};

/** The default responders by task. */
export const defaultResponders: Readonly<Record<string, Responder>> = {
	page: pageResponder,
	plan_clusters: planClustersResponder,
	plan_pages: planPagesResponder,
};

/** The task a schema name stands for, when the prompt carried no context. */
export const TASK_BY_SCHEMA_NAME: Readonly<Record<string, string>> = {
	pseo_page: 'page',
	pseo_plan_clusters: 'plan_clusters',
	pseo_plan_pages: 'plan_pages',
};
