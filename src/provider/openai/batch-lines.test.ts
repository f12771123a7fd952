import { describe, expect, it } from 'vitest';
import { parseBatchOutputLine } from './batch-lines.ts';

function chatBody(message: Record<string, unknown>, finishReason = 'stop') {
	return {
		id: 'chatcmpl-1',
		object: 'chat.completion',
		choices: [{ index: 0, message: { role: 'assistant', refusal: null, ...message }, finish_reason: finishReason }],
		usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 },
	};
}

function line(customId: string | undefined, response: unknown, error: unknown = null): string {
	return JSON.stringify({ id: 'batch_req_1', ...(customId === undefined ? {} : { custom_id: customId }), response, error });
}

describe('parseBatchOutputLine', () => {
	it('returns the parsed JSON content of a 200 chat.completion line under its custom_id', () => {
		const page = { title: 'Pricing', body_markdown: 'x' };
		const result = parseBatchOutputLine(line('/pricing', { status_code: 200, request_id: 'req_1', body: chatBody({ content: JSON.stringify(page) }) }));
		expect(result).toEqual({ customId: '/pricing', ok: true, content: page, usage: { prompt_tokens: 10, completion_tokens: 20 } });
	});

	it('keeps the usage of a billed answer that is unusable, and has none for an error line', () => {
		const refused = parseBatchOutputLine(line('/a', { status_code: 200, body: chatBody({ content: null, refusal: 'no' }) }));
		expect(refused).toMatchObject({ ok: false, usage: { prompt_tokens: 10, completion_tokens: 20 } });
		const expired = parseBatchOutputLine(line('/b', null, { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' }));
		expect(expired.usage ?? null).toBeNull();
	});

	it('reports the provider message of a non-200 line', () => {
		const result = parseBatchOutputLine(
			line('/a', { status_code: 400, body: { error: { message: "Invalid 'messages': empty array.", type: 'invalid_request_error' } } }),
		);
		expect(result).toEqual({ customId: '/a', ok: false, error: "Provider answered HTTP 400: Invalid 'messages': empty array." });
	});

	it('reports an error-file line such as batch_expired with its code and message', () => {
		const result = parseBatchOutputLine(
			line('/b', null, { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' }),
		);
		expect(result).toEqual({
			customId: '/b',
			ok: false,
			unanswered: true,
			error: 'Batch request failed (batch_expired): This request could not be executed before the completion window expired.',
			code: 'batch_expired',
		});
	});

	it('reports a refusal, a truncated answer and malformed JSON content', () => {
		expect(parseBatchOutputLine(line('/c', { status_code: 200, body: chatBody({ content: null, refusal: 'I will not write that.' }) }))).toMatchObject({
			customId: '/c',
			ok: false,
			error: 'Provider refused the request: I will not write that.',
		});
		expect(parseBatchOutputLine(line('/d', { status_code: 200, body: chatBody({ content: '{"title": "Pri' }, 'length') }))).toMatchObject({
			customId: '/d',
			ok: false,
			error: 'Provider output was cut off at the length limit',
		});
		expect(parseBatchOutputLine(line('/e', { status_code: 200, body: chatBody({ content: 'Sure! Here is your page.' }) }))).toMatchObject({
			customId: '/e',
			ok: false,
			error: 'Provider returned malformed JSON',
		});
		expect(parseBatchOutputLine(line('/f', { status_code: 200, body: chatBody({ content: '[1,2]' }) }))).toMatchObject({
			customId: '/f',
			ok: false,
			error: 'Provider returned malformed JSON: the content is not a JSON object',
		});
	});

	it('turns garbage into a failure without a custom_id', () => {
		for (const garbage of ['not json', '{"custom_id": "/x"', '[]', '42', '']) {
			expect(parseBatchOutputLine(garbage)).toEqual({ customId: null, ok: false, error: 'Unreadable line in the batch result file' });
		}
	});

	it('fails lines that lack a custom_id or both response and error', () => {
		const body = { status_code: 200, body: chatBody({ content: '{"a":1}' }) };
		expect(parseBatchOutputLine(line(undefined, body))).toMatchObject({ customId: null, ok: false, error: 'Batch line has no custom_id', usage: { prompt_tokens: 10, completion_tokens: 20 } });
		expect(parseBatchOutputLine(line('/g', null, null))).toEqual({ customId: '/g', ok: false, error: 'Batch line has neither a response nor an error' });
		expect(parseBatchOutputLine(line('/h', { status_code: 200, body: { choices: [] } }))).toMatchObject({
			customId: '/h',
			ok: false,
			error: 'Provider returned malformed JSON: the response has no choices',
		});
	});

	it('keeps key-like secrets out of error messages', () => {
		const result = parseBatchOutputLine(line('/i', { status_code: 401, body: { error: { message: 'Incorrect API key provided: sk-proj-abcdef123456.' } } }));
		expect(result.ok).toBe(false);
		expect(!result.ok && result.error).toBe('Provider answered HTTP 401: Incorrect API key provided: [redacted]');
	});
});
