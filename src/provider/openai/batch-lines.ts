import { describeFailure, redact } from '../provider-failure.ts';
import { readCompletionContent } from './read-completion.ts';
import { readUsage, type BatchLineResult } from '../types.ts';

/** Error codes of lines the provider never ran: the batch expired, or was cancelled, before their turn. */
const UNANSWERED_CODES = new Set(['batch_expired', 'batch_cancelled', 'batch_canceled']);

/**
 * Reads one line of a batch output or error file. A success is a `response` with `status_code` 200 whose
 * chat.completion body holds the page as JSON content. Everything else becomes a short, human `error`: an
 * `error: {code, message}` line (as the error file carries for `batch_expired`), a non-200 response, a refusal,
 * a truncated or malformed answer, or a line that is not JSON at all (then `customId` is null when unknown).
 */
export function parseBatchOutputLine(line: string): BatchLineResult {
	let parsed: unknown;
	try {
		parsed = JSON.parse(line);
	} catch {
		return { customId: null, ok: false, error: 'Unreadable line in the batch result file' };
	}
	if (!isRecord(parsed)) return { customId: null, ok: false, error: 'Unreadable line in the batch result file' };
	const customId = typeof parsed.custom_id === 'string' && parsed.custom_id !== '' ? parsed.custom_id : null;
	const fail = (error: string): BatchLineResult => ({ customId, ok: false, error });

	if (isRecord(parsed.error)) {
		const code = typeof parsed.error.code === 'string' ? parsed.error.code : null;
		const message = typeof parsed.error.message === 'string' ? redact(parsed.error.message) : '';
		const error = `Batch request failed${code ? ` (${code})` : ''}${message ? `: ${message}` : ''}`;
		return { customId, ok: false, error, code, ...(code && UNANSWERED_CODES.has(code) ? { unanswered: true } : {}) };
	}
	const response = parsed.response;
	if (!isRecord(response)) return fail('Batch line has neither a response nor an error');
	const status = typeof response.status_code === 'number' ? response.status_code : null;
	if (status !== 200) {
		const body = isRecord(response.body) ? response.body : {};
		const error = isRecord(body.error) ? body.error : {};
		const message = typeof error.message === 'string' ? redact(error.message) : '';
		return fail(`Provider answered HTTP ${status ?? 'without a status'}${message ? `: ${message}` : ''}`);
	}
	// Billed whether or not the answer is usable.
	const usage = readUsage(isRecord(response.body) ? response.body.usage : null);
	const content = readCompletionContent(response.body);
	if (!content.ok) return { ...fail(describeFailure(content.failure, 1)), usage };
	if (customId === null) return { ...fail('Batch line has no custom_id'), usage };
	return { customId, ok: true, content: content.value, usage };
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}
