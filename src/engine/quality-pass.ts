import type { PageContent } from '../posts/post-store.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import type { PagePlace, QualityGate, QualityReport } from '../quality/quality-gate.ts';
import type { QualityIssue } from '../quality/page-checks.ts';
import type { Logger } from '../shared/logger.ts';
import { isAbortError } from '../shared/abort-error.ts';

/** How a page that failed the gate is written once more: the same request, with the issues named in the prompt. */
export type Rewrite = (issues: readonly QualityIssue[]) => Promise<PageContent>;

export interface GateOptions {
	gate: QualityGate;
	logger: Logger;
	jobId: number;
	signal: AbortSignal;
}

/** A page with the gate's first verdict on it; `failed` when it must be written once more. */
export interface FirstVerdict {
	content: PageContent;
	failed: boolean;
	issues: QualityIssue[];
	place: PagePlace;
}

/**
 * Runs a page through the quality gate. A page that fails is written once more, with the failed checks named in
 * the prompt, at no extra charge (the page was paid for once); the second version is kept whatever its verdict,
 * and stored with `quality_status: fail` if it fails again. A rewrite that errors keeps the first version, unless
 * the instance is stopping (then the page is left for the job's next worker).
 */
export async function passQualityGate(
	content: PageContent,
	item: PlanPage,
	allowedRoutes: ReadonlySet<string>,
	rewrite: Rewrite,
	options: GateOptions,
): Promise<PageContent> {
	const [first] = await assessDrafts([{ content, item }], allowedRoutes, options.gate);
	return first!.failed ? rewriteFailed(first!, rewrite, options) : first!.content;
}

/** The gate's first verdict on pages, in one pass over the index. */
export async function assessDrafts(
	drafts: readonly { content: PageContent; item: PlanPage }[],
	allowedRoutes: ReadonlySet<string>,
	gate: QualityGate,
): Promise<FirstVerdict[]> {
	const entries = drafts.map(({ content, item }) => ({
		page: content,
		place: { route: item.route, title: item.title, primaryKeyword: item.primary_keyword, planRoutes: allowedRoutes, facts: item.facts ?? null, parentRoute: item.parent_route ?? null },
	}));
	const reports = await gate.assess(entries);
	return reports.map((report, i) => ({
		content: withQuality(drafts[i]!.content, report, entries[i]!.place),
		failed: report.status === 'fail',
		issues: report.issues,
		place: entries[i]!.place,
	}));
}

/** The second and last version of a page that failed the gate, with its verdict. */
export async function rewriteFailed(first: FirstVerdict, rewrite: Rewrite, options: GateOptions): Promise<PageContent> {
	const { gate, logger, jobId } = options;
	const route = first.place.route;
	const failed = first.issues.filter((found) => found.severity === 'fail').map((found) => found.check);
	logger.info({ jobId, route, issues: failed }, 'pseo page failed the quality gate; writing it once more');
	let second: PageContent;
	try {
		second = await rewrite(first.issues);
	} catch (error) {
		// A stopping instance: its signal aborted, or its queue dropped the rewrite (a bulk ingest queues its
		// rewrites, and drain clears the queue before it aborts the jobs). Keeping the first version would store a
		// page that failed the gate without its second chance; the page is left for the worker that resumes the job.
		if (options.signal.aborted || isAbortError(error)) throw error;
		logger.warn({ jobId, route, err: error }, 'pseo quality rewrite failed; the first version is kept');
		return first.content;
	}
	const [report] = await gate.assess([{ page: second, place: first.place }]);
	if (report?.status === 'fail') logger.info({ jobId, route }, 'pseo page failed the quality gate twice; stored as failed');
	return withQuality(second, report, first.place);
}

/** The page as it is stored: with the gate's verdict, the facts it was written from and checked against, and its JSON-LD. */
function withQuality(content: PageContent, report: QualityReport | undefined, place: PagePlace): PageContent {
	const facts = place.facts && Object.keys(place.facts).length > 0 ? place.facts : null;
	if (!report) return { ...content, facts };
	return {
		...content,
		facts,
		...(report.structuredData ? { structured_data: report.structuredData } : {}),
		quality: {
			status: report.status,
			score: report.score,
			issues: report.issues.map(({ check, severity, detail }) => ({ check, severity, detail })),
			signature: report.signature,
		},
	};
}
