import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ProviderCallError } from './provider-call-error.ts';
import type { ProviderFailureReason } from './provider-call-error.ts';

/** One failed attempt, classified. */
export interface ProviderFailure {
	reason: ProviderFailureReason;
	retryable: boolean;
	status?: number;
	/** A short, already redacted detail (provider message, refusal text, validator message). */
	detail?: string;
	/** How long the provider asked us to wait before the next attempt. */
	retryAfterMs?: number;
}

const MAX_DETAIL = 200;

/**
 * Makes provider-supplied text safe to store: masks anything shaped like an API key (and the given secrets),
 * collapses whitespace and truncates.
 */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
	let out = text;
	for (const secret of secrets) {
		if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
	}
	out = out
		.replace(/\b(sk|rk|sess)-[A-Za-z0-9_*.-]{6,}/g, '[redacted]')
		// Google API keys.
		.replace(/\bAIza[0-9A-Za-z_-]{20,}/g, '[redacted]')
		.replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]')
		.replace(/\s+/g, ' ')
		.trim();
	return out.length > MAX_DETAIL ? `${out.slice(0, MAX_DETAIL - 1).trimEnd()}…` : out;
}

/** An API error of a vendor's SDK: the vendors' official SDKs are generated alike and share these fields. */
interface SdkApiError extends Error {
	status: number | undefined;
	headers: Headers | undefined;
	error: unknown;
}

/** The error classes of a vendor's official SDK that the classification tells apart. */
export interface SdkErrorClasses {
	APIUserAbortError: abstract new (...args: never[]) => Error;
	APIConnectionTimeoutError: abstract new (...args: never[]) => Error;
	APIConnectionError: abstract new (...args: never[]) => Error;
	APIError: abstract new (...args: never[]) => SdkApiError;
}

const OPENAI_ERRORS: SdkErrorClasses = { APIUserAbortError, APIConnectionTimeoutError, APIConnectionError, APIError: APIError as unknown as SdkErrorClasses['APIError'] };

/**
 * Classifies an error thrown by a vendor's SDK (or by the network under it) for the retry policy. `sdk` names that
 * SDK's error classes; the OpenAI SDK's by default.
 */
export function classifyError(error: unknown, secrets: readonly (string | undefined)[] = [], sdk: SdkErrorClasses = OPENAI_ERRORS): ProviderFailure {
	if (error instanceof sdk.APIUserAbortError) return { reason: 'aborted', retryable: false };
	if (error instanceof sdk.APIConnectionTimeoutError) return { reason: 'timeout', retryable: true };
	if (error instanceof sdk.APIConnectionError) return { reason: 'connection', retryable: true };
	if (error instanceof sdk.APIError && typeof error.status === 'number') {
		const status = error.status;
		const detail = providerMessage(error, secrets);
		if (status === 429 && spentQuota(error.error)) return { reason: 'quota_exhausted', retryable: false, status, ...(detail ? { detail } : {}) };
		const failure = statusFailure(status, detail);
		const hint = error.headers?.get('x-should-retry');
		// The server's explicit verdict wins, as it does in the SDK's own policy, except that we never retry a 401.
		if (hint === 'true' && status !== 401) failure.retryable = true;
		if (hint === 'false') failure.retryable = false;
		return failure;
	}
	if (error instanceof Error && error.name === 'AbortError') return { reason: 'aborted', retryable: false };
	// A body that cannot be parsed as the JSON the SDK expects, or a socket dropped while reading it.
	if (error instanceof SyntaxError) return { reason: 'malformed_output', retryable: true, detail: 'unreadable response body' };
	return { reason: 'connection', retryable: true };
}

/** The failure an HTTP error status means, whichever SDK saw it. */
export function statusFailure(status: number, detail: string | undefined): ProviderFailure {
	const withDetail = (failure: ProviderFailure): ProviderFailure => (detail ? { ...failure, detail } : failure);
	if (status === 429) return withDetail({ reason: 'rate_limited', retryable: true, status });
	if (status === 408) return withDetail({ reason: 'timeout', retryable: true, status });
	if (status === 409 || status >= 500) return withDetail({ reason: 'server_error', retryable: true, status });
	// 401 texts echo part of the key; say nothing more than the status.
	if (status === 401) return { reason: 'unauthorized', retryable: false, status };
	if (status === 403) return withDetail({ reason: 'forbidden', retryable: false, status });
	if (status === 404) return withDetail({ reason: 'not_found', retryable: false, status });
	if (status === 400 || status === 422) return withDetail({ reason: 'bad_request', retryable: false, status });
	return withDetail({ reason: 'rejected', retryable: false, status });
}

/**
 * Whether a 429's body says money rather than rate: OpenAI's `insufficient_quota` (no credit left, or the billing
 * cap), Anthropic's `enforced_spend_limit_reached` (the spend limit of the month). Waiting does not clear either.
 */
function spentQuota(body: unknown): boolean {
	if (typeof body !== 'object' || body === null) return false;
	// OpenAI's SDK keeps the body's `error` object; Anthropic's keeps the whole `{ type, error }` body.
	const openai = body as { code?: unknown; type?: unknown };
	if (openai.code === 'insufficient_quota' || openai.type === 'insufficient_quota') return true;
	const anthropic = (body as { error?: { details?: { error_code?: unknown } } }).error;
	return anthropic?.details?.error_code === 'enforced_spend_limit_reached';
}

function providerMessage(error: SdkApiError, secrets: readonly (string | undefined)[]): string | undefined {
	// OpenAI's SDK keeps the body's `error` object; Anthropic's keeps the whole `{ type, error }` body.
	const body = error.error as { message?: unknown; error?: { message?: unknown } } | undefined;
	const raw = body?.message ?? body?.error?.message;
	const message = typeof raw === 'string' ? raw : undefined;
	return message ? redact(message, secrets) : undefined;
}

const HEADLINES: Record<ProviderFailureReason, string> = {
	missing_api_key: 'OPENAI_API_KEY is not set',
	rate_limited: 'Provider rate limit',
	quota_exhausted: 'Provider quota or spending limit reached (add credit or raise the limit at the provider)',
	server_error: 'Provider server error',
	timeout: 'Provider timed out',
	connection: 'Could not reach the provider',
	malformed_output: 'Provider returned malformed JSON',
	refusal: 'Provider refused the request',
	truncated: 'Provider output was cut off at the length limit',
	invalid_output: 'Provider output failed validation',
	bad_request: 'Provider rejected the request',
	unauthorized: 'Provider rejected the API key',
	forbidden: 'Provider denied access',
	not_found: 'Provider does not know this model or endpoint',
	rejected: 'Provider rejected the request',
	aborted: 'Provider call was aborted',
};

/** A short human sentence for a failure, e.g. `Provider rate limit (HTTP 429) after 4 attempts`. */
export function describeFailure(failure: ProviderFailure, attempts: number): string {
	let text = HEADLINES[failure.reason];
	if (failure.status !== undefined) text += ` (HTTP ${failure.status})`;
	if (attempts > 1) text += ` after ${attempts} attempts`;
	if (failure.detail) text += `: ${failure.detail}`;
	return text;
}

/**
 * The error of a call still rate limited when its wait budget (`PSEO_PROVIDER_RATE_WAIT_MS`) ran out: retryable, for
 * the engine hands its page back to be tried at a later step. `failure` is the last 429, null when the call never got
 * a slot of its key's pacing.
 */
export function rateWaitError(failure: ProviderFailure | null, attempts: number, budgetMs: number): ProviderCallError {
	const waited = `${Math.round(budgetMs / 1000)} s (PSEO_PROVIDER_RATE_WAIT_MS)`;
	const text = failure
		? `${HEADLINES.rate_limited}${failure.status !== undefined ? ` (HTTP ${failure.status})` : ''}: still limited after waiting ${waited} and ${attempts} attempts${failure.detail ? `: ${failure.detail}` : ''}`
		: `${HEADLINES.rate_limited}: no request slot within ${waited}`;
	return new ProviderCallError(text, { reason: 'rate_limited', retryable: true, ...(failure?.status !== undefined ? { status: failure.status } : {}), attempts });
}

/** The final error for a failure. */
export function toCallError(failure: ProviderFailure, attempts: number): ProviderCallError {
	return new ProviderCallError(describeFailure(failure, attempts), {
		reason: failure.reason,
		retryable: failure.retryable,
		...(failure.status !== undefined ? { status: failure.status } : {}),
		attempts,
	});
}
