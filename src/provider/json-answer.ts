import type { ProviderFailure } from './provider-failure.ts';
import type { Attempt } from './retry-policy.ts';

/** A failed read of a model's answer: unreadable output, retried like any transient fault. */
export function malformedOutput(detail?: string): { ok: false; failure: ProviderFailure } {
	return { ok: false, failure: { reason: 'malformed_output', retryable: true, ...(detail ? { detail } : {}) } };
}

/**
 * The JSON object a model answered as text: every provider asks for one object, and an answer that is empty, not
 * JSON, or JSON of another shape is unusable. `empty` says what was empty, in the provider's words.
 */
export function jsonObjectAnswer(text: string, empty: string): Attempt<Record<string, unknown>> {
	if (text.trim() === '') return malformedOutput(empty);
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch {
		return malformedOutput();
	}
	if (typeof value !== 'object' || value === null || Array.isArray(value)) return malformedOutput('the text is not a JSON object');
	return { ok: true, value: value as Record<string, unknown> };
}
