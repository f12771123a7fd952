import { redact } from '../provider-failure.ts';
import type { ProviderFailure } from '../provider-failure.ts';

export type CompletionContent = { ok: true; value: Record<string, unknown> } | { ok: false; failure: ProviderFailure };

/**
 * Reads the JSON object out of a chat.completion body (from a direct call or a batch output line): the first
 * choice's message content, parsed. Refusals, content filtering, truncation at the length limit and content
 * that is not a JSON object are failures.
 */
export function readCompletionContent(completion: unknown): CompletionContent {
	const choices = isRecord(completion) ? completion.choices : undefined;
	const choice = Array.isArray(choices) ? choices[0] : undefined;
	if (!isRecord(choice)) return malformed('the response has no choices');
	const message = isRecord(choice.message) ? choice.message : undefined;
	const refusal = message?.refusal;
	if (typeof refusal === 'string' && refusal.trim() !== '') {
		return { ok: false, failure: { reason: 'refusal', retryable: true, detail: redact(refusal) } };
	}
	if (choice.finish_reason === 'content_filter') {
		return { ok: false, failure: { reason: 'refusal', retryable: true, detail: 'stopped by the content filter' } };
	}
	if (choice.finish_reason === 'length') return { ok: false, failure: { reason: 'truncated', retryable: true } };
	const content = message?.content;
	if (typeof content !== 'string' || content.trim() === '') return malformed('the message has no content');
	let value: unknown;
	try {
		value = JSON.parse(content);
	} catch {
		return malformed();
	}
	if (!isRecord(value)) return malformed('the content is not a JSON object');
	return { ok: true, value };
}

function malformed(detail?: string): CompletionContent {
	return { ok: false, failure: { reason: 'malformed_output', retryable: true, ...(detail ? { detail } : {}) } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}
