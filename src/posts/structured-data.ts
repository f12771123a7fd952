import type { Article, BreadcrumbList, FAQPage, ListItem, Question, WithContext } from 'schema-dts';

/*
 * A post's structured data (schema.org JSON-LD), built by us from the stored post, never by the model, typed with
 * schema-dts so that every type and property is one schema.org defines:
 * - `Article`: headline, description, inLanguage, url (the website URL plus the route) and dateModified;
 * - `FAQPage`: a Question with its acceptedAnswer for each FAQ entry (none without an FAQ);
 * - `BreadcrumbList`: the home page, each ancestor of the route (and its hub, when the hub is not one), then the
 *   page itself, positions from 1, absolute URLs, each named by the plan page of its route where one exists (the
 *   home page by the website's host, another ancestor by its last segment).
 * It is one array of three (or two) objects, each with its @context: the form search engines and validators read.
 */

/** The JSON-LD of a post: Article, FAQPage (when it has an FAQ) and BreadcrumbList. */
export type StructuredData = (WithContext<Article> | WithContext<FAQPage> | WithContext<BreadcrumbList>)[];

/** What the JSON-LD is built from. */
export interface StructuredDataInput {
	route: string;
	title: string;
	metaDescription: string | null;
	faq: unknown;
	language: string | null;
	/** The website's URL, which the route is appended to. */
	websiteUrl: string;
	/** When the post was last changed, as an ISO timestamp. */
	dateModified: string;
	/** The title of the plan page of each ancestor route that has one. */
	ancestorTitles: ReadonlyMap<string, string>;
	/** The page's parent in the plan (its hub), placed just above it when it is not an ancestor of its path. */
	parentRoute?: string | null | undefined;
}

/** Google shows headlines of up to 110 characters. */
const MAX_HEADLINE = 110;
const CONTEXT = 'https://schema.org';

/** The routes above `route`, the home page first: `/a/b/c` gives `/`, `/a`, `/a/b`. */
export function ancestorsOf(route: string): string[] {
	const segments = route.split('/').filter((segment) => segment !== '');
	return ['/', ...segments.slice(0, -1).map((_, i) => `/${segments.slice(0, i + 1).join('/')}`)].filter((ancestor) => ancestor !== route);
}

/** The absolute URL of a route of the website: the website's URL (without its trailing slashes) plus the route. */
export function pageUrl(websiteUrl: string, route: string): string {
	return `${websiteUrl.replace(/\/+$/, '')}${route.startsWith('/') ? route : `/${route}`}`;
}

export function buildStructuredData(input: StructuredDataInput): StructuredData {
	const url = pageUrl(input.websiteUrl, input.route);
	const article: WithContext<Article> = {
		'@context': CONTEXT,
		'@type': 'Article',
		headline: clip(input.title, MAX_HEADLINE),
		...(input.metaDescription ? { description: input.metaDescription } : {}),
		...(input.language ? { inLanguage: input.language } : {}),
		url,
		mainEntityOfPage: url,
		dateModified: input.dateModified,
	};
	const questions = faqOf(input.faq).map(
		(entry): Question => ({ '@type': 'Question', name: entry.question, acceptedAnswer: { '@type': 'Answer', text: entry.answer } }),
	);
	const faq: WithContext<FAQPage>[] = questions.length > 0 ? [{ '@context': CONTEXT, '@type': 'FAQPage', mainEntity: questions }] : [];
	const above = ancestorsOf(input.route);
	if (input.parentRoute && input.parentRoute !== input.route && !above.includes(input.parentRoute)) above.push(input.parentRoute);
	const trail = [...above.map((route) => ({ route, name: nameOf(route, input) })), { route: input.route, name: input.title }];
	const breadcrumb: WithContext<BreadcrumbList> = {
		'@context': CONTEXT,
		'@type': 'BreadcrumbList',
		itemListElement: trail.map(
			(step, i): ListItem => ({ '@type': 'ListItem', position: i + 1, name: step.name, item: pageUrl(input.websiteUrl, step.route) }),
		),
	};
	return [article, ...faq, breadcrumb];
}

/** An ancestor's name: its plan page's title, the website's host for the home page, or its last segment in words. */
function nameOf(route: string, input: StructuredDataInput): string {
	const title = input.ancestorTitles.get(route);
	if (title) return title;
	if (route === '/') {
		try {
			return new URL(input.websiteUrl).hostname.replace(/^www\./, '');
		} catch {
			return 'Home';
		}
	}
	const segment = decodeURIComponent(route.split('/').at(-1) ?? '').replace(/[-_]+/g, ' ').trim();
	return segment === '' ? route : segment[0]!.toUpperCase() + segment.slice(1);
}

function faqOf(value: unknown): { question: string; answer: string }[] {
	if (!Array.isArray(value)) return [];
	return value.filter(
		(entry): entry is { question: string; answer: string } =>
			typeof entry === 'object' && entry !== null && typeof entry.question === 'string' && entry.question.trim() !== '' && typeof entry.answer === 'string' && entry.answer.trim() !== '',
	);
}

function clip(text: string, max: number): string {
	const points = [...text];
	return points.length > max ? `${points.slice(0, max - 1).join('').trimEnd()}…` : text;
}
