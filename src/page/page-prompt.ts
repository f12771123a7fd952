import type { PlanPage } from '../plan/plan-page.ts';
import type { ChatMessage } from '../provider/types.ts';
import type { Sibling } from './page-siblings.ts';

export { pickSiblings } from './page-siblings.ts';

/** Everything a page prompt is built from. */
export interface PagePromptContext {
	/** The PSEO's `master_prompt`: the website owner's instructions. */
	masterPrompt: string;
	websiteUrl: string;
	/** The plan's language, e.g. `en-US` or `de`. */
	language: string;
	businessDescription: string | null;
	/** The plan page to write. */
	item: PlanPage;
	/** Pages the page may link to, usually from {@link pickSiblings}. */
	siblings: Sibling[];
	/** The owner's instructions for a new version of an existing page (a regeneration); null otherwise. */
	instructions?: string | null;
	/** What the quality gate found wrong with the first draft of this page, for its second draft. */
	qualityIssues?: readonly string[];
}

const SYSTEM_PROMPT = [
	'You are an expert SEO copywriter. You write one page of a website at a time, for readers first and search engines second.',
	'Write the whole page, including the meta fields and the FAQ, in the language of the locale given as "language" in the JSON block.',
	'Answer with one JSON object that matches the response schema.',
	'- title: the page title. h1: the main heading. meta_title: at most 60 characters. meta_description: 120 to 160 characters that make a searcher want to click.',
	'- body_markdown: the body in Markdown, without the H1: ## and ### headings, short paragraphs, lists where they help. Use the primary keyword naturally and answer the search intent.',
	'- Internal links: link only to routes listed in "sibling_routes", as root-relative Markdown links such as [anchor text](/route). Use two to four of them where they fit naturally. Never link to the page itself, never invent routes, never use absolute URLs for pages of this website. List every internal link you used in internal_links.',
	'- faq: three to five questions a reader of this page would ask, with concise answers.',
	"Follow the website owner's instructions below unless they contradict these rules.",
	'When the JSON block has "facts", they are this page\'s own data, and what makes it worth reading: state them exactly as given (the same figures, prices, dates and names), and use as many of them as fit. Invent no figure, price, date, statistic or named entity (a person, a business, a place, a product) that the facts, the title or the primary keyword do not give; where the page needs something they do not cover, write around it in general terms instead of guessing. Weave them into the text; do not lay them all out as a table or a list.',
	'When the JSON block has "editor_instructions", this is a new version of an existing page: follow those instructions within these rules.',
	'When the JSON block has "quality_issues", an earlier draft of this page failed those quality checks: write the page again so that it passes them, with original wording rather than text shared with other pages. A "figures" issue names figures that neither the facts, the title nor the primary keyword give: leave them out, or state the facts\' own.',
].join('\n');

/**
 * The chat messages for one page: a system message with the writing rules, and a user message with the owner's
 * master prompt, the business description and exactly one fenced ```json block describing the page to write.
 */
export function buildPageMessages(ctx: PagePromptContext): ChatMessage[] {
	checkContext(ctx);
	const { item } = ctx;
	const task = {
		task: 'page',
		route: item.route,
		title: item.title,
		primary_keyword: orNull(item.primary_keyword),
		search_intent: orNull(item.search_intent),
		page_type: orNull(item.page_type),
		language: ctx.language,
		...(item.facts && Object.keys(item.facts).length > 0 ? { facts: { ...item.facts } } : {}),
		sibling_routes: ctx.siblings.filter((sibling) => sibling.route !== item.route).map(({ route, title }) => ({ route, title })),
		// Inside the JSON block, where a title cannot break out either.
		...(ctx.instructions?.trim() ? { editor_instructions: ctx.instructions.trim() } : {}),
		...(ctx.qualityIssues && ctx.qualityIssues.length > 0 ? { quality_issues: [...ctx.qualityIssues] } : {}),
	};
	const sections = [`Website: ${defence(ctx.websiteUrl)}`, `Instructions from the website owner:\n${defence(ctx.masterPrompt.trim()) || '(none)'}`];
	const description = ctx.businessDescription?.trim();
	if (description) sections.push(`About the business:\n${defence(description)}`);
	// Backticks are escaped inside JSON strings so no title can close the fence early.
	const json = JSON.stringify(task, null, 2).replaceAll('`', '\\u0060');
	sections.push(`Write the page described here:\n\`\`\`json\n${json}\n\`\`\``);
	return [
		{ role: 'system', content: SYSTEM_PROMPT },
		{ role: 'user', content: sections.join('\n\n') },
	];
}

/** Owner-written text must not open a fence of its own: the prompt carries exactly one ```json block. */
function defence(text: string): string {
	return text.replace(/`{3,}/g, (run) => "'".repeat(run.length));
}

function orNull(value: string | null | undefined): string | null {
	return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

function checkContext(ctx: PagePromptContext): void {
	if (typeof ctx !== 'object' || ctx === null) throw new TypeError(`Expected a page prompt context object, got \`${String(ctx)}\``);
	for (const name of ['masterPrompt', 'websiteUrl', 'language'] as const) {
		if (typeof ctx[name] !== 'string') throw new TypeError(`Expected \`${name}\` to be a string, got \`${String(ctx[name])}\` (${typeof ctx[name]})`);
	}
	if (ctx.businessDescription !== null && typeof ctx.businessDescription !== 'string') {
		throw new TypeError(`Expected \`businessDescription\` to be a string or null, got ${typeof ctx.businessDescription}`);
	}
	if (typeof ctx.item?.route !== 'string' || typeof ctx.item.title !== 'string') {
		throw new TypeError(`Expected \`item\` to have a string route and title, got \`${JSON.stringify(ctx.item)?.slice(0, 120)}\``);
	}
	if (!Array.isArray(ctx.siblings)) throw new TypeError(`Expected \`siblings\` to be an array, got \`${String(ctx.siblings)}\``);
}
