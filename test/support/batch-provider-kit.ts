import { buildPageMessages } from '../../src/page/page-prompt.ts';
import { PAGE_SCHEMA, PAGE_SCHEMA_NAME } from '../../src/page/page-schema.ts';
import type { Logger } from '../../src/shared/logger.ts';
import type { BatchInfo, BatchLineResult, BatchProvider, JsonCompletionRequest } from '../../src/provider/types.ts';

/* What the tests of every vendor's batch operations share: a page's request, a part's metadata, and their polling. */

/** A logger that keeps what it is given, so that a test can scan it for a key. */
export function recordingLogger(): Logger & { lines: unknown[] } {
	const lines: unknown[] = [];
	const keep = (...args: unknown[]) => void lines.push(args);
	return { lines, debug: keep, info: keep, warn: keep, error: keep };
}

/** The request of one page, as the engine builds it. */
export function pageRequest(route: string): JsonCompletionRequest {
	const messages = buildPageMessages({
		masterPrompt: 'Warm tone.',
		websiteUrl: 'https://bakery.example',
		language: 'en-GB',
		businessDescription: 'A bakery in Lyon.',
		item: { route, title: `Page ${route}`, priority: 1 },
		siblings: [],
	});
	return { schemaName: PAGE_SCHEMA_NAME, schema: { ...PAGE_SCHEMA }, messages };
}

/** The metadata the engine tags a part's batch with (batch-submit.ts). */
export const partMetadata = (job: number, part: number, resubmitOf: string = 'none') => ({
	pseo_generation_id: String(job),
	pseo_generation_part: `${job}:${part}`,
	pseo_id: '7',
	route_start: '0',
	route_end: '3',
	resubmit_of: resubmitOf,
});

/** Polls a batch until it ends (the fake moves a batch on as it is polled). */
export async function untilFinal(batches: BatchProvider, id: string): Promise<BatchInfo> {
	for (let i = 0; i < 10; i++) {
		const batch = await batches.retrieveBatch(id);
		if (['completed', 'expired', 'cancelled', 'failed'].includes(batch.status)) return batch;
	}
	throw new Error(`batch ${id} did not end`);
}

/** Every line of a batch's results file, read as the engine reads them. */
export async function linesOf(batches: BatchProvider, fileId: string): Promise<BatchLineResult[]> {
	const results: BatchLineResult[] = [];
	for await (const line of batches.streamFileLines(fileId)) results.push(batches.parseBatchLine(line));
	return results;
}
