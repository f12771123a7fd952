import { Marked, type Tokens } from 'marked';

/*
 * Markdown to HTML for generated pages, safe to show or send anywhere: raw HTML in the Markdown is escaped, never
 * injected, so a page carries no script or markup of its own; links keep only http(s), mailto and in-page targets
 * (a javascript: or data: link renders as its text); images only from http(s). Root-relative links (a page's
 * internal links, `[anchor](/route)`) go where `resolveRoute` says, or stay as text when it says null. Pure: it runs
 * on the server (publishing) and in the browser (the app module's reader).
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
	return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

const SAFE_LINK = /^(https?:|mailto:|#)/i;

/** A renderer: Markdown in, safe HTML out. */
export type MarkdownRenderer = (markdown: string) => string;

export function createSafeMarkdown(resolveRoute: (route: string) => string | null): MarkdownRenderer {
	const marked = new Marked({
		gfm: true,
		async: false,
		renderer: {
			html({ text }: Tokens.HTML | Tokens.Tag) {
				return escapeHtml(text);
			},
			link({ href, title, tokens }: Tokens.Link) {
				const text = this.parser.parseInline(tokens);
				const target = href.startsWith('/') && !href.startsWith('//') ? resolveRoute(routeOfHref(href)) : SAFE_LINK.test(href) ? href : null;
				if (target === null) return text;
				const titled = title ? ` title="${escapeHtml(title)}"` : '';
				return `<a href="${escapeHtml(target)}"${titled}>${text}</a>`;
			},
			image({ href, text }: Tokens.Image) {
				return /^https?:/i.test(href) ? `<img src="${escapeHtml(href)}" alt="${escapeHtml(text)}">` : escapeHtml(text);
			},
		},
	});
	return (markdown) => marked.parse(markdown) as string;
}

/** The route a root-relative link names, without its query or fragment. */
function routeOfHref(href: string): string {
	const path = href.split(/[?#]/)[0]!;
	return path.length > 1 ? path.replace(/\/+$/, '') : path;
}
