import type { ChatMessage } from '../provider/types.ts';

/** The PSEO fields a plan prompt uses (interface 2.1). */
export interface PlanSite {
	website_url: string;
	website_software: string;
	master_prompt: string;
}

/** What every plan prompt carries. */
export interface PlanPromptBase {
	pseo: PlanSite;
	/** Canonical locale, such as `tr-TR`. */
	languageCode: string;
	/** The business description from the request. */
	description: string;
}

/** A cluster as the pages prompt names it. An empty slug means "the whole site; choose clusters yourself". */
export interface PromptCluster {
	name: string;
	slug: string;
	description: string;
}

/** Most routes listed in `avoid_routes`, so that the prompt stays bounded whatever the site or plan size. */
export const MAX_AVOID_ROUTES = 300;

const SYSTEM_MESSAGE = [
	'You are an expert programmatic-SEO planner.',
	'You design content plans: sets of pages a website can publish to rank for many related searches, grouped into',
	'topical clusters of hub pages and supporting pages, each page targeting one distinct search query.',
	'Answer only with JSON that matches the given schema.',
].join(' ');

const PAGE_RULES = [
	'Rules for every page:',
	'- route: a path starting with "/", made of lower-case ASCII letters, digits and dashes, segments separated by "/",',
	'  no trailing slash, no query string, no file extension; transliterate words of other scripts to ASCII.',
	'- Every route is unique, and none is one of "avoid_routes" (those pages exist or are already planned).',
	'- title and primary_keyword are written in the plan language.',
	'- priority is the business value of the page from 1 (lowest) to 100 (highest).',
	'- search_intent and page_type take one of the values the schema allows.',
	'- parent_route is the route of the hub page this page belongs under, or null.',
	'- cluster is the slug of the cluster the page belongs to.',
].join('\n');

/** Messages for the `pseo_plan_clusters` call: split a plan of `totalPages` pages into `clusterCount` clusters. */
export function buildClusterMessages(input: PlanPromptBase & { clusterCount: number; totalPages: number }): ChatMessage[] {
	const context = {
		task: 'plan_clusters',
		cluster_count: input.clusterCount,
		total_pages: input.totalPages,
		language: input.languageCode,
	};
	const task = [
		`Task: split a content plan of ${input.totalPages} pages for this website into ${input.clusterCount} topical clusters.`,
		'Each cluster has a name in the plan language, a unique lower-case ASCII slug (words joined by dashes), a one-',
		'sentence description of what its pages cover, and a page_count; the page counts add up to total_pages.',
		'Cover the services, locations, audiences and questions the business description suggests, without overlap.',
	].join('\n');
	return messages(input, task, context);
}

/**
 * Messages for the `pseo_plan_page_list` call: `pageCount` pages of one cluster, avoiding `avoidRoutes` (the first
 * {@link MAX_AVOID_ROUTES} of them; put the most likely collisions first).
 */
export function buildPageMessages(
	input: PlanPromptBase & { cluster: PromptCluster; pageCount: number; avoidRoutes: readonly string[] },
): ChatMessage[] {
	const { name, slug, description } = input.cluster;
	const context = {
		task: 'plan_pages',
		cluster: { name, slug, description },
		page_count: input.pageCount,
		language: input.languageCode,
		avoid_routes: input.avoidRoutes.slice(0, MAX_AVOID_ROUTES),
	};
	const scope =
		slug === ''
			? `Task: plan ${input.pageCount} pages for the whole website. Group them into topical clusters of your choosing; ` +
				'give each page the slug of its cluster.'
			: `Task: plan ${input.pageCount} pages of the cluster "${name}" (slug "${slug}"). Most of its routes start ` +
				`with "/${slug}/", under a hub page when the cluster needs one.`;
	return messages(input, `${scope}\n\n${PAGE_RULES}`, context);
}

/** An English name for a locale (`tr-TR` → `Turkish (Türkiye)`), or the code itself when none is known. */
export function languageName(languageCode: string): string {
	try {
		return new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' }).of(languageCode) ?? languageCode;
	} catch {
		return languageCode;
	}
}

function messages(input: PlanPromptBase, task: string, context: Record<string, unknown>): ChatMessage[] {
	const user = [
		`Website: ${defuse(input.pseo.website_url)}`,
		`Platform: ${defuse(input.pseo.website_software)}`,
		`Plan language: ${languageName(input.languageCode)} (${input.languageCode}).`,
		'',
		'Business description:',
		defuse(input.description),
		'',
		"Instructions from the website's owner:",
		defuse(input.pseo.master_prompt),
		'',
		task,
		'',
		'Structured context:',
		'```json',
		JSON.stringify(context, null, 2),
		'```',
	].join('\n');
	return [
		{ role: 'system', content: SYSTEM_MESSAGE },
		{ role: 'user', content: user },
	];
}

// User-supplied text must not open a code fence of its own: the last user message holds exactly one ```json block,
// and whoever reads the context takes it from there.
function defuse(text: string): string {
	return text.replace(/`{3,}/g, (run) => "'".repeat(run.length));
}
