import type { BatchLineResult, JsonCompletionRequest } from '../provider/types.ts';
import type { GenerationProvider } from '../provider/generation-provider.ts';
import type { JobContext } from './job-context.ts';
import type { PageContent } from '../posts/post-store.ts';
import type { PageOutcome } from './job-store.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import { makeValidator, validatePageOutput } from '../page/page-output.ts';
import { buildPageMessages } from '../page/page-prompt.ts';
import { PAGE_SCHEMA, PAGE_SCHEMA_NAME, type PageOutput } from '../page/page-schema.ts';
import type { QualityIssue } from '../quality/page-checks.ts';

const SIBLINGS_PER_PAGE = 8;

/**
 * The chat request for one page: master prompt, plan language and description, the item and its siblings, and
 * for a second version after the quality gate, the issues of the first.
 */
export async function buildPageRequest(context: JobContext, item: PlanPage, qualityIssues: readonly QualityIssue[] = []): Promise<JsonCompletionRequest> {
	const siblings = await context.siblingPicker();
	return {
		schemaName: PAGE_SCHEMA_NAME,
		schema: PAGE_SCHEMA as Record<string, unknown>,
		messages: buildPageMessages({
			masterPrompt: context.masterPrompt,
			websiteUrl: context.websiteUrl,
			language: context.language,
			businessDescription: context.businessDescription,
			item,
			siblings: siblings(item, SIBLINGS_PER_PAGE),
			instructions: context.instructions,
			qualityIssues: qualityIssues.map((found) => `${found.check}: ${found.detail}`),
		}),
		validate: makeValidator(context.allowedRoutes, item.route),
	};
}

function toContent(page: PageOutput): PageContent {
	return {
		title: page.title,
		meta_title: page.meta_title,
		meta_description: page.meta_description,
		h1: page.h1,
		body: page.body_markdown,
		faq: page.faq,
		internal_links: page.internal_links,
	};
}

/** One page through chat completions; the provider retries transient faults and invalid output, then throws. */
export async function generatePage(
	provider: GenerationProvider,
	context: JobContext,
	item: PlanPage,
	options: Pick<JsonCompletionRequest, 'signal' | 'logContext' | 'onUsage'> & { qualityIssues?: readonly QualityIssue[] } = {},
): Promise<PageContent> {
	const { qualityIssues, ...call } = options;
	const raw = await provider.completeJson({ ...(await buildPageRequest(context, item, qualityIssues)), ...call });
	const checked = validatePageOutput(raw, context.allowedRoutes, item.route);
	if (!checked.ok) throw new Error(checked.error);
	return toContent(checked.page);
}

/** A batch line's page outcome; `unanswered` when the batch ended before the provider ran the request. */
export type BatchLineOutcome = PageOutcome & { unanswered?: boolean };

/**
 * A batch result line, as its provider read it, as a page outcome; null for a line that names no request. A line the
 * provider never ran stays `unanswered`: it is resubmitted or failed, never retried through chat (a cancelled batch
 * of 50,000 lines would otherwise become 50,000 chat calls).
 */
export function pageFromBatchLine(parsed: BatchLineResult, context: JobContext): BatchLineOutcome | null {
	if (!parsed.customId) return null;
	const route = parsed.customId;
	const usage = parsed.usage ? { ...parsed.usage, requests: 1 } : undefined;
	const billed = usage ? { usage } : {};
	if (!parsed.ok) return { route, error: parsed.error, ...billed, ...(parsed.unanswered ? { unanswered: true } : {}) };
	const checked = validatePageOutput(parsed.content, context.allowedRoutes, route);
	if (!checked.ok) return { route, error: checked.error, ...billed };
	return { route, content: toContent(checked.page), language: context.language, ...billed };
}
