/** Why a provider call failed, in a word a caller can branch on. */
export type ProviderFailureReason =
	| 'missing_api_key'
	| 'rate_limited'
	| 'quota_exhausted'
	| 'server_error'
	| 'timeout'
	| 'connection'
	| 'malformed_output'
	| 'refusal'
	| 'truncated'
	| 'invalid_output'
	| 'bad_request'
	| 'unauthorized'
	| 'forbidden'
	| 'not_found'
	| 'rejected'
	| 'aborted';

export interface ProviderCallErrorOptions {
	reason: ProviderFailureReason;
	/** Whether the failure is of a transient kind (a later attempt, or a later job, may succeed). */
	retryable: boolean;
	/** The HTTP status the provider answered with, when it answered. */
	status?: number;
	/** Attempts made before giving up. */
	attempts?: number;
}

/**
 * A provider call that failed for good. The message is short and human, free of stacks and secrets, because it
 * is stored as the `error` of a failed route.
 */
export class ProviderCallError extends Error {
	override name = 'ProviderCallError';
	readonly reason: ProviderFailureReason;
	readonly retryable: boolean;
	readonly status?: number;
	readonly attempts: number;

	constructor(message: string, options: ProviderCallErrorOptions) {
		super(message);
		this.reason = options.reason;
		this.retryable = options.retryable;
		if (options.status !== undefined) this.status = options.status;
		this.attempts = options.attempts ?? 1;
	}
}

/** Whether a value is a {@link ProviderCallError}, also across duplicated module instances. */
export function isProviderCallError(value: unknown): value is ProviderCallError {
	return value instanceof ProviderCallError || (value instanceof Error && value.name === 'ProviderCallError' && 'reason' in value);
}
