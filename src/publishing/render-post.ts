import { createHash } from 'node:crypto';
import type { PostForPublishing } from '../posts/post-publishing.ts';
import { createSafeMarkdown, escapeHtml } from '../shared/safe-markdown.ts';
import { factLabel, factText, type Facts } from '../shared/facts.ts';

/*
 * What a website receives for a post: the body rendered from Markdown to HTML by marked, the FAQ as a section, a
 * marker that identifies the post on the site (how a create lost to a crash is found again), and internal links
 * pointed where the site serves their pages. The same input always renders the same output, so a hash of it tells
 * whether the site already has this version. The data block, a table of the facts the page was written from, is
 * rendered here from the stored facts, never by the model, so it states them exactly.
 */

/** A post as the publisher renders it: the stored post and its plan page's cluster. */
export type PublishablePost = Omit<PostForPublishing, 'remoteId' | 'remoteUrl' | 'publishedHash' | 'retired'> & { cluster: string | null };

/** How the website shows a page's facts: a table after the page (`table`, the default), or not at all (`none`). */
export type FactsDisplay = 'table' | 'none';

/** Where an internal link to `route` points: a URL, or null to leave the anchor as text. */
export type LinkResolver = (route: string) => string | null;

export interface RenderedPost {
	title: string;
	slug: string;
	/** The HTML body, with the marker. */
	content: string;
	excerpt: string;
	metaTitle: string | null;
	metaDescription: string | null;
	categories: string[];
	/** The marker token the content carries (searchable on the site). */
	marker: string;
}

/** The token that marks a post's content on the site: unique per website and post. */
export function markerOf(post: Pick<PublishablePost, 'pseoId' | 'id'>): string {
	return `pseo_ref_${post.pseoId}_${post.id}`;
}

/** The marker as the content carries it: the whole comment, so that post 3 never matches post 34's marker. */
export function markerComment(marker: string): string {
	return `<!-- ${marker} -->`;
}

/** The slug of a route: its path segments joined by hyphens, lower-cased, letters of any script kept. */
export function slugOf(route: string): string {
	const slug = route
		.normalize('NFKC')
		.toLowerCase()
		.split('/')
		.map((segment) => segment.replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, ''))
		.filter((segment) => segment !== '')
		.join('-');
	return slug === '' ? 'home' : slug.slice(0, 190);
}

/**
 * Renders a post. `structuredData: 'script'` carries its JSON-LD in the content as a `<script type="application/ld+json">`
 * block (for a site that takes raw HTML from this user); left out otherwise.
 */
export function renderPost(
	post: PublishablePost,
	resolve: LinkResolver,
	options: { factsDisplay?: FactsDisplay; structuredData?: 'script' | 'none'; hubSet?: readonly { route: string; title: string }[] } = {},
): RenderedPost {
	const render = createSafeMarkdown(resolve);
	const faq = faqOf(post.faq);
	const faqHtml =
		faq.length === 0
			? ''
			: `\n<h2>Frequently asked questions</h2>\n${faq.map((entry) => `<h3>${escapeHtml(entry.question)}</h3>\n${render(entry.answer)}`).join('\n')}`;
	const factsHtml = (options.factsDisplay ?? 'table') === 'table' ? factsTable(post.facts) : '';
	const marker = markerOf(post);
	return {
		title: post.title,
		slug: slugOf(post.route),
		content: `${render(post.body)}${faqHtml}${factsHtml}${hubList(options.hubSet, resolve)}${options.structuredData === 'script' ? jsonLdScript(post.structuredData) : ''}\n${markerComment(marker)}`,
		excerpt: post.metaDescription ?? '',
		metaTitle: post.metaTitle,
		metaDescription: post.metaDescription,
		categories: post.cluster ? [post.cluster] : [],
		marker,
	};
}

/**
 * The data block: one row per fact, its label from the column name (`average_price_gbp` reads "Average price
 * gbp"), every text escaped. Empty without facts.
 */
function factsTable(facts: Facts | null | undefined): string {
	const entries = Object.entries(facts ?? {});
	if (entries.length === 0) return '';
	const rows = entries.map(([name, value]) => `<tr><th scope="row">${escapeHtml(factLabel(name))}</th><td>${escapeHtml(factText(value))}</td></tr>`);
	return `\n<table class="pseo-facts">\n<tbody>\n${rows.join('\n')}\n</tbody>\n</table>`;
}

/**
 * A hub page's link list: every page of its set that the website has (a link the resolver points somewhere),
 * rendered by us at each publication, so it grows as the set's pages are published.
 */
function hubList(set: readonly { route: string; title: string }[] | undefined, resolve: LinkResolver): string {
	const items = (set ?? []).flatMap((page) => {
		const href = resolve(page.route);
		return href ? [`<li><a href="${escapeHtml(href)}">${escapeHtml(page.title)}</a></li>`] : [];
	});
	return items.length > 0 ? `\n<ul class="pseo-hub-links">\n${items.join('\n')}\n</ul>` : '';
}

/** JSON-LD as a script block; `<` written as \u003c, so that no text inside can end the block or open a comment. */
function jsonLdScript(structuredData: unknown[] | null): string {
	if (!structuredData || structuredData.length === 0) return '';
	return `\n<script type="application/ld+json">${JSON.stringify(structuredData).replace(/</g, '\\u003c')}</script>`;
}

function faqOf(value: unknown): { question: string; answer: string }[] {
	if (!Array.isArray(value)) return [];
	return value.filter(
		(entry): entry is { question: string; answer: string } =>
			typeof entry === 'object' && entry !== null && typeof entry.question === 'string' && typeof entry.answer === 'string',
	);
}

/** The version of what a site receives: a post, its status and date. Equal hashes mean nothing to send. */
export function publishedHash(rendered: RenderedPost, placement: { status: string; date: string | null }, meta: Record<string, string> = {}): string {
	const parts: unknown[] = [rendered.title, rendered.slug, rendered.content, rendered.excerpt, rendered.metaTitle, rendered.metaDescription, rendered.categories, placement.status, placement.date];
	// Extra meta (a JSON-LD field) counts only when there is some, so that every hash stored before stays valid.
	if (Object.keys(meta).length > 0) parts.push(meta);
	return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
