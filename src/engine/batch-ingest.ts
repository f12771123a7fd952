import { setImmediate } from 'node:timers/promises';
import type { BatchInfo, BatchCapableProvider } from '../provider/generation-provider.ts';
import { faultPoint } from '../shared/fault-injection.ts';
import type { JobContext } from './job-context.ts';
import { recordOutcomes, settledAmong, type PageOutcome } from './job-store.ts';
import type { JobHead } from './job-types.ts';
import { generatePage, pageFromBatchLine } from './page-request.ts';
import { errorMessage, type RunnerDeps } from './page-runner.ts';
import { isAbortError } from '../shared/abort-error.ts';
import type { JobPart } from './part-store.ts';
import { createQualityGate, type QualityGate } from '../quality/quality-gate.ts';
import type { QualityIssue } from '../quality/page-checks.ts';
import type { PlanPage } from '../plan/plan-page.ts';
import type { BatchLineResult, ReportedUsage } from '../provider/types.ts';
import { assessDrafts, rewriteFailed } from './quality-pass.ts';
import { refreshStatistics, type StatisticsSchedule, type StatisticsTarget } from '../shared/table-statistics.ts';
import { POSTS } from '../posts/post-store.ts';
import { BANDS_TABLE } from '../quality/similarity-index.ts';
import { JOB_ROUTES, readJobRouteRange } from './job-route-store.ts';
import { PLAN_PAGES } from '../plan/plan-page-store.ts';

/*
 * Ingesting one finished part of a bulk job (batch-runner.ts runs the step): its results streamed from the provider
 * into posts and failed routes, a chunk judged by the quality gate while the one before it is written, and the lines
 * the provider answered unusably written once more through chat.
 */

/** Results are written in chunks: big enough to be fast, small enough that memory stays flat. */
const INGEST_CHUNK = 250;
/**
 * Output lines parsed between two turns of the event loop. Lines the download has already buffered come out of
 * the stream as resolved promises, which never let I/O in: without a turn, a chunk's 250 lines were parsed and
 * validated in one go while every request on the instance waited.
 */
const LINES_PER_TURN = 25;

/**
 * Tables an ingest grows or rewrites quickly enough to outrun autovacuum, with the columns its statements filter on
 * (shared/table-statistics.ts). The band rows' re-indexing DELETE by route scanned every band row of the website
 * without them (127 ms a chunk at 100,000 pages, against 1.5 ms).
 */
export const INGESTED_TABLES: readonly StatisticsTarget[] = [
	{ table: POSTS, columns: ['pseo_id', 'route'] },
	{ table: BANDS_TABLE, columns: ['pseo_id', 'route', 'band_key'] },
	{ table: JOB_ROUTES, columns: ['generation_id', 'position', 'route', 'state'] },
	{ table: PLAN_PAGES, columns: ['pseo_id', 'route', 'has_post', 'priority'] },
];

/**
 * Where an ingest's time went, logged with each part: `pages` the outcomes it stored (posts and failures),
 * `judgeMs` the gate with its index lookups and any rewrites or retries through chat, `writeMs` the transactions
 * storing the chunks and the statistics refreshes between them, and `waitMs` how long judged chunks waited for the
 * write before them. Judging and writing overlap, so a large `waitMs` says the database paces the ingest.
 */
interface IngestTiming {
	pages: number;
	ms: number;
	judgeMs: number;
	writeMs: number;
	waitMs: number;
}

/**
 * Streams a finished part's output and error files into posts and failed routes. A line the provider answered
 * unusably is written once more through chat completions before it fails. Lines the batch left unanswered are
 * failed with the batch's reason, or, when `resubmit` holds, left for the resubmission, and counted as `unanswered`.
 */
export async function ingestPart(
	job: JobHead,
	part: JobPart,
	batch: BatchInfo,
	context: JobContext,
	statistics: StatisticsSchedule,
	deps: RunnerDeps,
	provider: BatchCapableProvider,
	resubmit: boolean,
): Promise<{ unanswered: number; timing: IngestTiming }> {
	const { database, worker, logger } = deps;
	const started = performance.now();
	const timing: IngestTiming = { pages: 0, ms: 0, judgeMs: 0, writeMs: 0, waitMs: 0 };
	const timed = async <T>(field: 'judgeMs' | 'writeMs' | 'waitMs', work: () => Promise<T>): Promise<T> => {
		const start = performance.now();
		try {
			return await work();
		} finally {
			timing[field] += performance.now() - start;
		}
	};
	const result = (unanswered: number) => ({
		unanswered,
		timing: { pages: timing.pages, ms: Math.round(performance.now() - started), judgeMs: Math.round(timing.judgeMs), writeMs: Math.round(timing.writeMs), waitMs: Math.round(timing.waitMs) },
	});
	// The part's own routes only: a job of several parts is never read whole.
	const slice = await readJobRouteRange(database, job.id, part.route_start, part.route_end);
	const items = new Map(slice.map(({ position: _position, ...item }) => [item.route, item]));
	// A provider whose custom ids cannot hold a route names each line by its route's position in the job.
	const routeOf = routesByCustomId(provider, slice);
	const settled = await settledAmong(
		database,
		job,
		slice.map((item) => item.route),
	);
	const gate = createQualityGate(database, job.pseo_id, deps.quality, context);
	const seen = new Set<string>();
	const unansweredRoutes = new Set<string>();
	let chunk: PageOutcome[] = [];
	// One chunk is written while the next is judged: the database and the gate's CPU work overlap. At most one
	// write is in flight, so chunks are stored in order and memory holds two chunks at most.
	let writing: Promise<void> = Promise.resolve();
	const record = (outcomes: PageOutcome[]) =>
		timed('writeMs', async () => {
			try {
				// A refresh's pages replace their posts, each keeping its previous version as a revision.
				await recordOutcomes(database, job, worker, outcomes, logger, deps.revise);
			} finally {
				gate.settle(outcomes.map((outcome) => outcome.route));
			}
			timing.pages += outcomes.length;
			faultPoint('mid-batch-ingest');
			if (statistics.add(outcomes.length)) await refreshStatistics(database, INGESTED_TABLES, logger);
		});
	const flush = async () => {
		if (chunk.length === 0) return;
		const outcomes = chunk;
		chunk = [];
		const { kept, abandoned } = await timed('judgeMs', async () => {
			const abandoned = await retryByChat(
				outcomes.filter((outcome) => !unansweredRoutes.has(outcome.route)),
				items,
				context,
				deps,
				provider,
				job.id,
			);
			// Lines whose retry the stopping instance dropped are left unsettled, for the ingest that resumes the part.
			const kept = abandoned.size > 0 ? outcomes.filter((outcome) => !abandoned.has(outcome.route)) : outcomes;
			if (!deps.signal.aborted) await gateChunk(kept, items, context, gate, deps, provider, job.id);
			return { kept, abandoned };
		});
		if (deps.signal.aborted) return;
		await timed('waitMs', () => writing);
		writing = record(kept);
		// A failed write surfaces at the next flush or at the end; this only keeps it from being reported unhandled.
		writing.catch(() => {});
		if (abandoned.size > 0) {
			// The instance is stopping: the step ends here, with the part still running, so that the worker resuming
			// the job ingests it again and reaches the lines left unsettled (settled ones are skipped).
			await writing;
			throw new DOMException(`The instance is stopping; ${abandoned.size} line(s) are left for the resumed ingest.`, 'AbortError');
		}
	};

	let parsed = 0;
	try {
		for (const fileId of [batch.outputFileId, batch.errorFileId]) {
			if (!fileId) continue;
			for await (const line of provider.streamFileLines(fileId)) {
				if (deps.signal.aborted) return result(0);
				if (++parsed % LINES_PER_TURN === 0) await setImmediate();
				const outcome = pageFromBatchLine(withRoute(provider.parseBatchLine(line), routeOf), context);
				if (!outcome || !items.has(outcome.route) || seen.has(outcome.route) || settled.has(outcome.route)) continue;
				if (outcome.unanswered && resubmit) continue;
				seen.add(outcome.route);
				const { unanswered, ...page } = outcome;
				if (unanswered) unansweredRoutes.add(page.route);
				chunk.push(page);
				if (chunk.length >= INGEST_CHUNK) await flush();
			}
		}
		await flush();
	} finally {
		// Never leave a write running behind the step, whatever ended it.
		await writing;
	}
	if (deps.signal.aborted) return result(0);

	const missing = [...items.keys()].filter((route) => !seen.has(route) && !settled.has(route));
	if (resubmit) return result(missing.length);
	const reason = missingReason(batch);
	for (let i = 0; i < missing.length; i += INGEST_CHUNK) {
		await recordOutcomes(database, job, worker, missing.slice(i, i + INGEST_CHUNK).map((route) => ({ route, error: reason })), logger);
	}
	return result(0);
}

/**
 * Lines the provider answered but unusably (invalid or truncated output, a refusal, a non-200 answer) are written
 * once more through chat completions, on the instance's queue, at no extra charge; a page that fails again keeps
 * the batch line's error. Unanswered lines (an expired or cancelled batch) are not retried here.
 */
async function retryByChat(
	outcomes: PageOutcome[],
	items: ReadonlyMap<string, PlanPage>,
	context: JobContext,
	deps: RunnerDeps,
	provider: BatchCapableProvider,
	jobId: number,
): Promise<Set<string>> {
	const { logger, signal, queue } = deps;
	const abandoned = new Set<string>();
	await Promise.all(
		outcomes.map(async (outcome) => {
			const item = items.get(outcome.route);
			if (outcome.content || !item || !outcome.error) return;
			const call = { signal, logContext: { jobId, route: item.route }, onUsage: countUsage(outcome) };
			try {
				const content = await queue.add(() => generatePage(provider, context, item, call), { signal });
				outcome.content = content;
				outcome.language = context.language;
				delete outcome.error;
			} catch (error) {
				if (signal.aborted) return;
				// Dropped from the queue by a shutdown (drain clears it before it aborts the jobs): not a second failure.
				if (isAbortError(error)) {
					abandoned.add(outcome.route);
					return;
				}
				logger.warn({ jobId, route: item.route, error: errorMessage(error) }, 'pseo batch line failed again through chat');
			}
		}),
	);
	return abandoned;
}

/**
 * The quality gate over a chunk of batch results, in place: one pass over the index for the whole chunk (whose
 * pages are also compared with each other); a page that fails is written once more through chat completions, on
 * the instance's queue, and the chunk is stored once those rewrites are done.
 */
async function gateChunk(
	outcomes: PageOutcome[],
	items: ReadonlyMap<string, PlanPage>,
	context: JobContext,
	gate: QualityGate,
	deps: RunnerDeps,
	provider: BatchCapableProvider,
	jobId: number,
): Promise<void> {
	const { logger, signal, queue } = deps;
	const drafts = outcomes.flatMap((outcome) => {
		const item = items.get(outcome.route);
		return outcome.content && item ? [{ outcome, item, content: outcome.content }] : [];
	});
	const verdicts = await assessDrafts(drafts, context.allowedRoutes, gate);
	const rewrites: Promise<void>[] = [];
	drafts.forEach(({ outcome, item }, i) => {
		const first = verdicts[i]!;
		outcome.content = first.content;
		if (!first.failed || signal.aborted) return;
		const call = { signal, logContext: { jobId, route: item.route }, onUsage: countUsage(outcome) };
		const rewrite = (qualityIssues: readonly QualityIssue[]) => queue.add(() => generatePage(provider, context, item, { ...call, qualityIssues }), { signal });
		rewrites.push(
			rewriteFailed(first, rewrite, { gate, logger, jobId, signal }).then((content) => {
				outcome.content = content;
			}),
		);
	});
	await Promise.all(rewrites);
}

/** Adds what each further answer for a page costs to the page's usage. */
function countUsage(outcome: PageOutcome): (reported: ReportedUsage) => void {
	const usage = (outcome.usage ??= { prompt_tokens: 0, completion_tokens: 0, requests: 0 });
	return (reported) => {
		usage.prompt_tokens += reported.prompt_tokens;
		usage.completion_tokens += reported.completion_tokens;
		usage.requests++;
	};
}

/** The routes of a part by their lines' custom ids, when those are not the routes themselves. */
export function routesByCustomId(provider: BatchCapableProvider, slice: readonly { route: string; position: number }[]): ReadonlyMap<string, string> | null {
	const customIdFor = provider.customIdFor?.bind(provider);
	return customIdFor ? new Map(slice.map(({ route, position }) => [customIdFor(route, position), route])) : null;
}

/** A result line named by its route; a custom id that names no route of the part names none. */
export function withRoute(result: BatchLineResult, routeOf: ReadonlyMap<string, string> | null): BatchLineResult {
	if (routeOf === null || result.customId === null) return result;
	const route = routeOf.get(result.customId);
	return route === undefined ? { ...result, ok: false, error: 'Batch line names no route of its part', customId: null } : { ...result, customId: route };
}

function missingReason(batch: BatchInfo): string {
	switch (batch.status) {
		case 'expired':
			return 'The provider batch expired before this page was generated.';
		case 'cancelled':
			return 'The provider batch was cancelled before this page was generated.';
		case 'failed': {
			const detail = batch.errors?.map((error) => error.message).filter(Boolean).join('; ');
			return errorMessage(`The provider rejected the batch${detail ? `: ${detail}` : '.'}`);
		}
		default:
			return 'The provider batch returned no result for this page.';
	}
}
