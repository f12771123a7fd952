import { describe, expect, it } from 'vitest';
import { readCompletionContent } from './read-completion.ts';

const body = (message: Record<string, unknown>, finish_reason = 'stop') => ({ choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason }] });

describe('readCompletionContent', () => {
	it('parses the JSON object in the first choice', () => {
		expect(readCompletionContent(body({ content: '{"a":[1,2]}', refusal: null }))).toEqual({ ok: true, value: { a: [1, 2] } });
	});

	it('classifies refusals, content filtering and truncation as retryable failures', () => {
		expect(readCompletionContent(body({ content: null, refusal: 'No.' }))).toEqual({ ok: false, failure: { reason: 'refusal', retryable: true, detail: 'No.' } });
		expect(readCompletionContent(body({ content: '' }, 'content_filter'))).toMatchObject({ ok: false, failure: { reason: 'refusal' } });
		expect(readCompletionContent(body({ content: '{"a":' }, 'length'))).toEqual({ ok: false, failure: { reason: 'truncated', retryable: true } });
	});

	it('classifies missing, non-JSON and non-object content as malformed', () => {
		for (const completion of [null, {}, { choices: [] }, body({ content: null }), body({ content: 'hello' }), body({ content: '"text"' }), body({ content: 'null' })]) {
			const result = readCompletionContent(completion);
			expect(result.ok).toBe(false);
			expect(!result.ok && result.failure.reason).toBe('malformed_output');
		}
	});
});
