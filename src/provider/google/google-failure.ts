import { ApiError } from '@google/genai';
import { redact, statusFailure, type ProviderFailure } from '../provider-failure.ts';

/**
 * Classifies an error thrown by `@google/genai` (or by the fetch under it) for the retry policy. That SDK is not
 * generated like the OpenAI and Anthropic ones: its one error class, `ApiError`, carries the status and the whole
 * error body serialised as its message, no headers, and a timeout or an abort reaches us as fetch's own
 * `AbortError`. So the two are told apart by the caller's signal: aborted by the caller, or cut by the SDK's timer.
 */
export function classifyGoogleError(error: unknown, secrets: readonly (string | undefined)[], callerAborted: boolean, maxRetryAfterMs: number): ProviderFailure {
	if (callerAborted) return { reason: 'aborted', retryable: false };
	if (error instanceof ApiError && typeof error.status === 'number') {
		const body = readErrorBody(error.message);
		const message = body?.message;
		const failure = statusFailure(error.status, typeof message === 'string' && message !== '' ? redact(message, secrets) : undefined);
		if (failure.reason === 'rate_limited' || failure.reason === 'server_error') {
			const wait = retryDelayMs(body?.details, maxRetryAfterMs);
			if (wait !== null) failure.retryAfterMs = wait;
		}
		return failure;
	}
	if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return { reason: 'timeout', retryable: true };
	// A body that cannot be parsed as the JSON the SDK expects, or a socket dropped while reading it.
	if (error instanceof SyntaxError) return { reason: 'malformed_output', retryable: true, detail: 'unreadable response body' };
	// The SDK refuses an argument it cannot send (an invalid batch name) with a plain Error, before any network use:
	// no retry would mend it. A network failure reaches us as fetch's TypeError, or with the socket's error as cause.
	if (Object.getPrototypeOf(error) === Error.prototype && (error as Error).cause === undefined) {
		return { reason: 'bad_request', retryable: false, detail: redact((error as Error).message, secrets) };
	}
	return { reason: 'connection', retryable: true };
}

/** The `error` object of a Google error body, which the SDK keeps serialised as its message; null when it is not JSON. */
function readErrorBody(text: string): { message?: unknown; details?: unknown } | null {
	try {
		const parsed: unknown = JSON.parse(text);
		const inner = typeof parsed === 'object' && parsed !== null ? (parsed as { error?: unknown }).error : undefined;
		return typeof inner === 'object' && inner !== null ? (inner as { message?: unknown; details?: unknown }) : null;
	} catch {
		return null;
	}
}

/**
 * The wait a `google.rpc.RetryInfo` detail asks for (`retryDelay: "7s"`, or `"0.5s"`), capped at `maxMs`: the Gemini
 * API says how long to back off there rather than in a `retry-after` header, which the SDK would not pass on anyway.
 */
function retryDelayMs(details: unknown, maxMs: number): number | null {
	if (!Array.isArray(details)) return null;
	for (const detail of details) {
		if (typeof detail !== 'object' || detail === null) continue;
		const { '@type': type, retryDelay } = detail as Record<string, unknown>;
		if (typeof type !== 'string' || !type.endsWith('google.rpc.RetryInfo') || typeof retryDelay !== 'string') continue;
		const match = /^(\d+(?:\.\d+)?)s$/.exec(retryDelay.trim());
		if (!match) continue;
		return Math.min(Math.round(Number(match[1]) * 1000), maxMs);
	}
	return null;
}
