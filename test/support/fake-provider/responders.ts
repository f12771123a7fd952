/**
 * Default responders: they turn the product's prompt context into realistic drafts for pages and content plans.
 * Output is deterministic for a given context, so tests can rely on it.
 */
import { INVENTED_FIGURE, type FakeConfig } from './config.ts';
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

/*
 * Page prose is put together from short fragments (at most four words each) picked by a generator seeded with the
 * route, so that every 4-word shingle spans two picks: pages of one website share few shingles, as real pages do,
 * and pass the product's near-duplicate check, while each page stays deterministic.
 */
const OPENERS = [
	'In practice,', 'For most readers,', 'Before you start,', 'As a rule,', 'On balance,', 'In our experience,', 'Week to week,',
	'Over time,', 'At the outset,', 'Where budgets matter,', 'Most of the time,', 'For a first project,', 'Seen from outside,',
	'Early on,', 'Later on,', 'Once it is running,', 'If time is short,', 'For larger teams,', 'In smaller towns,', 'Honestly,',
];
const SUBJECTS = [
	'{kw}', 'planning {kw}', 'a budget for {kw}', 'the work on {kw}', 'every choice about', 'the right partner', 'a sensible plan',
	'the first estimate', 'your own research', 'the final result', 'a careful checklist', 'most of the effort', 'the cheapest offer',
	'good preparation', 'a clear brief', 'the main risk', 'each new step', 'the paperwork', 'a realistic schedule', 'the quality bar',
];
const VERBS = [
	'depends on', 'benefits from', 'comes down to', 'usually needs', 'is shaped by', 'rewards', 'calls for', 'gets easier with',
	'often hides', 'rarely survives', 'should include', 'starts with', 'is judged by', 'leans on', 'improves with', 'suffers without',
	'is cheaper with', 'moves faster with', 'becomes clearer after', 'is safer with',
];
const OBJECTS = [
	'a written estimate', 'careful preparation', 'local knowledge', 'honest reviews', 'clear priorities', 'a realistic timeline',
	'good documentation', 'regular maintenance', 'a second opinion', 'fair contracts', 'small test runs', 'named contacts',
	'measured results', 'spare capacity', 'shared notes', 'tidy records', 'checked references', 'simple tools', 'agreed milestones',
	'open questions',
];
const TAILS = [
	'from the start.', 'more than price.', 'in the long run.', 'for every project.', 'before anything else.', 'at every stage.',
	'when plans change.', 'without exception.', 'most of all.', 'above all.', 'for peace of mind.', 'each season.',
	'after the launch.', 'in busy months.', 'along the way.', 'week after week.', 'on tight budgets.', 'for the team.',
	'when it counts.', 'in hindsight.',
];

/** A small seeded generator (mulberry32): the same route always gives the same page. */
function randomFrom(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

function pick(random: () => number, list: readonly string[]): string {
	return list[Math.floor(random() * list.length)] ?? list[0] ?? '';
}

/** A paragraph of `count` sentences; the keyword opens the first one, so it is always in the opening. */
function paragraph(seed: number, keyword: string, count: number): string {
	const random = randomFrom(seed);
	const out: string[] = [];
	for (let i = 0; i < count; i++) {
		const subject = i === 0 ? '{kw}' : pick(random, SUBJECTS);
		out.push(`${pick(random, OPENERS)} ${subject} ${pick(random, VERBS)} ${pick(random, OBJECTS)} ${pick(random, TAILS)}`.replaceAll('{kw}', keyword));
	}
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

/**
 * `task: "page"`: a full page of about 450 words that links to two sibling routes. Routes in `lowQualityRoutes`
 * come out thin or as near-duplicates of each other, unless the prompt names the quality issues of an earlier
 * draft (and `lowQualityPersists` is off).
 */
export const pageResponder: Responder = ({ context, config }) => {
	const route = text(context.route, '/page');
	const title = text(context.title, titleFromRoute(route));
	const keyword = text(context.primary_keyword, title.toLowerCase());
	const secondDraft = Array.isArray(context.quality_issues) && context.quality_issues.length > 0;
	const poor = secondDraft && !config.lowQualityPersists ? undefined : config.lowQualityRoutes[route];
	// A near-duplicate shares the whole body: one seed and no word of its own.
	const seed = poor === 'duplicate' ? 1 : hashString(route);
	const topic = poor === 'duplicate' ? 'this service' : keyword;
	const links = pickSiblings(siblingsOf(context, route), seed);
	const linkText = (sibling: Sibling | undefined): string =>
		sibling ? ` For more detail, see [${sibling.title}](${sibling.route}).` : '';
	// A new version of a page follows the editor's instructions: here, visibly, as a closing section.
	const instructions = typeof context.editor_instructions === 'string' ? context.editor_instructions : null;
	const sections =
		poor === 'thin'
			? [`## ${title}`, paragraph(seed, topic, 2)]
			: [
					`## ${title}`,
					paragraph(seed, topic, 6),
					`### What to look for\n\n${paragraph(seed + 1, topic, 6)}${linkText(links[0])}`,
					`### Costs and planning\n\n${paragraph(seed + 2, topic, 6)}${linkText(links[1])}`,
					`### Next steps\n\n${paragraph(seed + 3, topic, 5)}`,
				];
	// A page with facts states them exactly, as the prompt asks.
	const facts = typeof context.facts === 'object' && context.facts !== null && !Array.isArray(context.facts) ? Object.entries(context.facts) : [];
	const factText = facts.map(([name, value]) => `The ${name.replace(/[_-]+/g, ' ')} here is ${String(value)}.`).join(' ');
	const body = [
		...sections,
		...(facts.length > 0 && poor !== 'thin' ? [`### The figures for this page\n\n${factText}`] : []),
		...(poor === 'figure' ? [`### Prices\n\nPrices start at ${INVENTED_FIGURE} a visit.`] : []),
		...(instructions ? [`### As requested\n\n${instructions}`] : []),
	].join('\n\n');
	return {
		title,
		meta_title: title.length > 52 ? title.slice(0, 60).trimEnd() : `${title} | Guide`,
		meta_description: metaDescription(title, keyword),
		slug: route.split('/').filter(Boolean).pop() ?? '',
		h1: title,
		body_markdown: body,
		faq:
			poor === 'thin'
				? []
				: [
						{ question: `How much does ${keyword} cost?`, answer: paragraph(seed + 4, topic, 2) },
						{ question: `How long does ${keyword} take?`, answer: paragraph(seed + 5, topic, 2) },
						{ question: `What should I check before choosing ${keyword}?`, answer: paragraph(seed + 6, topic, 2) },
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
			primary_keyword: `${modifier} ${clusterName}`.toLowerCase(),
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
	pseo_plan_page_list: 'plan_pages',
};
