import type { PageContent } from '../posts/post-store.ts';
import { countWords, words } from './minhash.ts';

/*
 * The deterministic checks of the quality gate, one function per check, each returning the issues it found.
 * A `fail` is a page that should not be published as it is (thin, no H1, a near-duplicate); a `warn` is worth an
 * editor's look but not a new version (a long meta title, a keyword missing from the opening).
 */

type QualitySeverity = 'fail' | 'warn';

/** One finding of the gate: which check, what it saw, and how much it matters. */
export interface QualityIssue {
	check: QualityCheck;
	detail: string;
	severity: QualitySeverity;
}

type QualityCheck = 'words' | 'h1' | 'outline' | 'meta_title' | 'meta_description' | 'keyword' | 'internal_links' | 'near_duplicate' | 'figures' | 'facts_used';

/** What the checks read of a page: its content as a post stores it. */
export type CheckedPage = Pick<PageContent, 'title' | 'meta_title' | 'meta_description' | 'h1' | 'body' | 'faq'>;

/** Meta title lengths a search result shows whole; Google cuts titles at about 600 px, roughly 60 characters. */
const META_TITLE_RANGE = { min: 30, max: 60 } as const;
/** Meta description lengths that fill a snippet without being cut (roughly 155 to 160 characters on desktop). */
const META_DESCRIPTION_RANGE = { min: 120, max: 160 } as const;
/** How many words of the body count as its opening, for the keyword check. */
const OPENING_WORDS = 100;

const issue = (check: QualityCheck, severity: QualitySeverity, detail: string): QualityIssue => ({ check, detail, severity });

/** The words a reader sees: the body without link targets and Markdown syntax, and the FAQ. */
export function readableWords(page: CheckedPage): string[] {
	return words(readableText(page));
}

function readableText(page: CheckedPage): string {
	const faq = Array.isArray(page.faq)
		? page.faq.map((entry: { question?: unknown; answer?: unknown }) => `${String(entry?.question ?? '')} ${String(entry?.answer ?? '')}`)
		: [];
	return [stripMarkdown(page.body), ...faq].join('\n');
}

/** Thin content: fewer words than `minWords`. */
export function checkWords(page: CheckedPage, minWords: number): QualityIssue[] {
	const count = countWords(readableText(page));
	return count < minWords ? [issue('words', 'fail', `${count} words; at least ${minWords} are needed`)] : [];
}

/**
 * Exactly one H1: the page's `h1` field, which the body must not repeat (the body is written without it), and an
 * outline that does not skip levels (## then ####) and has subheadings once the body is long.
 */
export function checkHeadings(page: CheckedPage): QualityIssue[] {
	const found: QualityIssue[] = [];
	const headings = headingsOf(page.body);
	const bodyH1 = headings.filter((heading) => heading.level === 1).length;
	if (!page.h1?.trim()) found.push(issue('h1', 'fail', 'the page has no H1'));
	if (bodyH1 > 0) found.push(issue('h1', 'fail', `the body has ${bodyH1} more H1 heading${bodyH1 === 1 ? '' : 's'}; a page has exactly one H1`));
	let previous = 1;
	for (const heading of headings) {
		if (heading.level > previous + 1) {
			found.push(issue('outline', 'warn', `"${clip(heading.text)}" is an H${heading.level} after an H${previous}; a level is skipped`));
			break;
		}
		previous = heading.level;
	}
	if (headings.length === 0 && countWords(page.body) >= 300) {
		found.push(issue('outline', 'warn', 'a long body without subheadings'));
	}
	return found;
}

/** Meta title and description lengths that a search result shows whole. */
export function checkMeta(page: CheckedPage): QualityIssue[] {
	const found: QualityIssue[] = [];
	const title = (page.meta_title ?? '').trim().length;
	const description = (page.meta_description ?? '').trim().length;
	if (title < META_TITLE_RANGE.min || title > META_TITLE_RANGE.max) {
		found.push(issue('meta_title', 'warn', `${title} characters; ${META_TITLE_RANGE.min} to ${META_TITLE_RANGE.max} fit a search result`));
	}
	if (description < META_DESCRIPTION_RANGE.min || description > META_DESCRIPTION_RANGE.max) {
		found.push(
			issue('meta_description', 'warn', `${description} characters; ${META_DESCRIPTION_RANGE.min} to ${META_DESCRIPTION_RANGE.max} fit a snippet`),
		);
	}
	return found;
}

/**
 * The primary keyword in the title, the H1 and the opening of the body: its words in order, compared without case
 * or accents. No keyword, nothing to check.
 */
export function checkKeyword(page: CheckedPage, keyword: string | null | undefined): QualityIssue[] {
	const wanted = words(keyword ?? '');
	if (wanted.length === 0) return [];
	const missing: string[] = [];
	if (!containsRun(words(page.title), wanted)) missing.push('the title');
	if (!containsRun(words(page.h1 ?? ''), wanted)) missing.push('the H1');
	if (!containsRun(words(stripMarkdown(page.body)).slice(0, OPENING_WORDS), wanted)) missing.push(`the first ${OPENING_WORDS} words`);
	return missing.length > 0 ? [issue('keyword', 'warn', `"${clip(keyword ?? '')}" is missing from ${joinList(missing)}`)] : [];
}

/**
 * Internal links: every root-relative link of the body resolves to a route of the plan, and a page of a plan with
 * other pages links to at least one of them.
 */
export function checkInternalLinks(page: CheckedPage, planRoutes: ReadonlySet<string>, ownRoute: string): QualityIssue[] {
	const known = normalizedRoutes(planRoutes);
	const own = normalizePath(ownRoute);
	const targets = internalLinkTargets(page.body);
	const broken = [...new Set(targets.filter((target) => !known.has(target) || target === own))];
	const found: QualityIssue[] = [];
	if (broken.length > 0) {
		found.push(issue('internal_links', 'warn', `links that are not other routes of the plan: ${broken.slice(0, 5).join(', ')}${broken.length > 5 ? ', …' : ''}`));
	}
	const others = known.size - (known.has(own) ? 1 : 0);
	if (targets.length === 0 && others > 0) found.push(issue('internal_links', 'warn', 'no link to another page of the plan'));
	return found;
}

/** The page is a near-duplicate: `score` similar to `route`, above `maxSimilarity`. */
export function checkSimilarity(nearest: { route: string; score: number } | null, maxSimilarity: number): QualityIssue[] {
	if (!nearest || nearest.score <= maxSimilarity) return [];
	return [issue('near_duplicate', 'fail', `${Math.round(nearest.score * 100)}% similar to ${nearest.route}; at most ${Math.round(maxSimilarity * 100)}% is allowed`)];
}

interface Heading {
	level: number;
	text: string;
}

/** ATX headings outside fenced code blocks. */
function headingsOf(markdown: string): Heading[] {
	const headings: Heading[] = [];
	let fence: string | null = null;
	for (const line of markdown.split('\n')) {
		const fenceMatch = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
		if (fenceMatch) {
			const marker = fenceMatch[1]!;
			if (fence === null) fence = marker[0]!;
			else if (marker[0] === fence) fence = null;
			continue;
		}
		if (fence !== null) continue;
		const match = /^\s{0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$/.exec(line);
		if (match) headings.push({ level: match[1]!.length, text: (match[2] ?? '').trim() });
	}
	return headings;
}

// [text](/route) and [text](</route> "title"), not images, not protocol-relative //host links.
const INTERNAL_LINK = /(!?)\[(?:[^\][\\]|\\.)*\]\(\s*<?(\/(?!\/)[^\s)>]*)>?(?:\s+"[^"]*")?\s*\)/g;

function internalLinkTargets(markdown: string): string[] {
	const targets: string[] = [];
	for (const match of markdown.matchAll(INTERNAL_LINK)) {
		if (!match[1]) targets.push(normalizePath(match[2]!));
	}
	return targets;
}

const normalized = new WeakMap<ReadonlySet<string>, { size: number; routes: Set<string> }>();

/** The plan's routes, normalised; cached per set, because a job checks every page against one set. */
function normalizedRoutes(planRoutes: ReadonlySet<string>): Set<string> {
	const cached = normalized.get(planRoutes);
	if (cached && cached.size === planRoutes.size) return cached.routes;
	const routes = new Set([...planRoutes].map(normalizePath));
	normalized.set(planRoutes, { size: planRoutes.size, routes });
	return routes;
}

/** A root-relative path without query, fragment or trailing slash. */
function normalizePath(target: string): string {
	const path = target.trim().split(/[?#]/, 1)[0] ?? '';
	return path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
}

/** The text of Markdown without link and image targets, so URLs do not count as words. */
function stripMarkdown(markdown: string): string {
	return markdown.replace(/!?\[((?:[^\][\\]|\\.)*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, ' ');
}

function containsRun(haystack: readonly string[], needle: readonly string[]): boolean {
	outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
		for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
		return true;
	}
	return false;
}

function joinList(items: readonly string[]): string {
	return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

function clip(text: string, max = 60): string {
	return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
