import { describe, expect, it } from 'vitest';
import type { JobContext } from './job-context.ts';
import { parseBatchOutputLine } from '../provider/openai/batch-lines.ts';
import { pageFromBatchLine as fromResult } from './page-request.ts';

const pageFromBatchLine = (line: string, context: JobContext) => fromResult(parseBatchOutputLine(line), context);

/*
 * Batch lines as page outcomes: a line the provider never ran (its batch expired or was cancelled first) is
 * `unanswered`, so that it is resubmitted or failed but never retried through chat; a line it ran and answered
 * badly is a plain failure, which is retried through chat once.
 */
const context = { allowedRoutes: new Set(['/a']), language: 'en-US' } as unknown as JobContext;
const errorLine = (code: string) => JSON.stringify({ id: 'batch_req_1', custom_id: '/a', response: null, error: { code, message: 'Not run.' } });

describe('pageFromBatchLine', () => {
	it.each([['batch_expired'], ['batch_cancelled'], ['batch_canceled']])('a %s line is unanswered', (code) => {
		expect(pageFromBatchLine(errorLine(code), context)).toEqual({ route: '/a', error: `Batch request failed (${code}): Not run.`, unanswered: true });
	});

	it('a line the provider ran and refused is a plain failure', () => {
		const line = JSON.stringify({ id: 'batch_req_2', custom_id: '/a', response: { status_code: 500, body: { error: { message: 'Server error.' } } }, error: null });
		const outcome = pageFromBatchLine(line, context);
		expect(outcome).toMatchObject({ route: '/a' });
		expect(outcome?.error).toBeTruthy();
		expect(outcome).not.toHaveProperty('unanswered');
	});

	it('an error line of another code is a plain failure', () => {
		expect(pageFromBatchLine(errorLine('invalid_request'), context)).not.toHaveProperty('unanswered');
	});
});
