import type { PageOutput } from './page-schema.ts';

export type PageValidation = { ok: true; page: PageOutput } | { ok: false; error: string };

/**
 * Meta description bounds. Below 50 characters a description is too thin to be worth a search snippet, and
 * cannot be fixed without the model, so the output is rejected (and retried). Search engines cut snippets at
 * roughly 155 to 160 characters, so above 170 the description is repaired instead: cut at a word boundary to at
 * most 160 characters, which is what a search engine would show anyway and is far cheaper than a new call.
 */
const META_DESCRIPTION_MIN = 50;
export const META_DESCRIPTION_MAX = 170;
const META_DESCRIPTION_CUT = 160;

/**
 * Checks a page the provider produced and returns it tidied, or the reason it is unusable.
 *
 * Rejected (the caller retries or fails the route): not an object, an empty title or body, a meta description
 * shorter than {@link META_DESCRIPTION_MIN}.
 *
 * Repaired, because one stray link or field should not cost a whole page: internal links to routes outside
 * `allowedRoutes` or to `ownRoute` are dropped from `internal_links`, and their root-relative Markdown links in
 * the body are turned into plain text; duplicate links are dropped; an empty `meta_title` or `h1` falls back to
 * the title; empty FAQ entries are dropped; an over-long meta description is cut; strings are trimmed, and NUL
 * characters dropped (PostgreSQL stores no NUL in text: one would fail every attempt to store the page's chunk).
 *
 * `allowedRoutes` are the plan's routes (they may include `ownRoute`, which is never a valid target).
 */
export function validatePageOutput(value: unknown, allowedRoutes: ReadonlySet<string>, ownRoute?: string): PageValidation {
	if (!isRecord(value)) return { ok: false, error: 'output is not a JSON object' };
	const title = oneLine(value.title);
	if (!title) return { ok: false, error: 'title is empty' };
	const body = multiLine(value.body_markdown);
	if (!body) return { ok: false, error: 'body_markdown is empty' };
	let metaDescription = oneLine(value.meta_description);
	if (metaDescription.length < META_DESCRIPTION_MIN) {
		return {
			ok: false,
			error: `meta_description has ${metaDescription.length} characters; at least ${META_DESCRIPTION_MIN} are needed`,
		};
	}
	if (metaDescription.length > META_DESCRIPTION_MAX) metaDescription = cutAtWord(metaDescription, META_DESCRIPTION_CUT);

	const targets = routeLookup(allowedRoutes);
	const own = ownRoute === undefined ? null : normalizeRoute(ownRoute);
	const resolve = (target: string): string | null => {
		const route = normalizeRoute(target);
		if (route === null || route === own) return null;
		return targets.get(route) ?? null;
	};

	const links: PageOutput['internal_links'] = [];
	const linked = new Set<string>();
	for (const link of Array.isArray(value.internal_links) ? value.internal_links : []) {
		if (!isRecord(link) || typeof link.route !== 'string') continue;
		const route = resolve(link.route);
		const anchor = oneLine(link.anchor);
		if (route === null || !anchor || linked.has(route)) continue;
		linked.add(route);
		links.push({ anchor, route });
	}

	const faq: PageOutput['faq'] = [];
	for (const entry of Array.isArray(value.faq) ? value.faq : []) {
		if (!isRecord(entry)) continue;
		const question = oneLine(entry.question);
		const answer = multiLine(entry.answer);
		if (question && answer) faq.push({ question, answer });
	}

	return {
		ok: true,
		page: {
			title,
			meta_title: oneLine(value.meta_title) || title,
			meta_description: metaDescription,
			h1: oneLine(value.h1) || title,
			body_markdown: unlinkBadRoutes(body, resolve),
			faq,
			internal_links: links,
		},
	};
}

/** The `validate` hook of a page request: null when {@link validatePageOutput} accepts the output. */
export function makeValidator(allowedRoutes: ReadonlySet<string>, ownRoute?: string): (value: unknown) => string | null {
	return (value) => {
		const result = validatePageOutput(value, allowedRoutes, ownRoute);
		return result.ok ? null : result.error;
	};
}

// [text](/route "title") and [text](</route>), not images, not protocol-relative //host links.
const MARKDOWN_LINK = /(!?)\[((?:[^\][\\]|\\.)*)\]\(\s*<?(\/(?!\/)[^\s)>]*)>?(?:\s+"[^"]*")?\s*\)/g;

function unlinkBadRoutes(body: string, resolve: (target: string) => string | null): string {
	return body.replace(MARKDOWN_LINK, (whole, bang: string, text: string, target: string) => {
		if (bang) return whole;
		return resolve(target) === null ? text : whole;
	});
}

/** Normalised form of a root-relative route for comparison: no query, fragment or trailing slash. Null if not root-relative. */
function normalizeRoute(target: string): string | null {
	const trimmed = target.trim();
	if (!trimmed.startsWith('/') || trimmed.startsWith('//')) return null;
	const path = trimmed.split(/[?#]/, 1)[0] ?? '';
	return path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
}

const lookups = new WeakMap<ReadonlySet<string>, { size: number; map: Map<string, string> }>();

/** Normalised route → the plan's own spelling, cached per set because a job validates every page against one set. */
function routeLookup(allowedRoutes: ReadonlySet<string>): Map<string, string> {
	const cached = lookups.get(allowedRoutes);
	if (cached && cached.size === allowedRoutes.size) return cached.map;
	const map = new Map<string, string>();
	for (const route of allowedRoutes) {
		const key = normalizeRoute(route);
		if (key !== null && !map.has(key)) map.set(key, route);
	}
	lookups.set(allowedRoutes, { size: allowedRoutes.size, map });
	return map;
}

function cutAtWord(text: string, max: number): string {
	const space = text.lastIndexOf(' ', max - 1);
	const cut = space >= max * 0.6 ? text.slice(0, space) : text.slice(0, max - 1);
	return `${cut.replace(/[\s,;:.–—-]+$/, '')}…`;
}

function oneLine(value: unknown): string {
	return multiLine(value).replace(/\s+/g, ' ');
}

function multiLine(value: unknown): string {
	return typeof value === 'string' ? value.replaceAll('\u0000', '').trim() : '';
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}
