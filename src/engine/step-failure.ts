import type { ProviderUnavailable } from '../provider/generation-provider.ts';
import { isProviderCallError } from '../provider/provider-call-error.ts';

/*
 * A job's trouble, on its record. A step that throws (a refused batch create, a revoked key, a database fault) used to
 * be retried after the poll interval for ever, saying why only in the instance's log. Now each failed step is
 * counted on the job (`last_error`, `attention`), and a failure no retry can mend ends the job after a few steps,
 * refunding what it has not created, instead of holding the owner's tokens until someone cancels it.
 */

/** `last_error` of a job as the interface shows it (`GET /generations/:id`). */
export interface StepError {
	/** What failed: the provider's failure reason (`bad_request`, `unauthorized`...) or `internal`. */
	code: string;
	/** A sentence for people, redacted: never a key, never SQL. */
	message: string;
	/** When the last failure happened (ISO 8601). */
	at: string;
	/** Consecutive failed steps so far. */
	attempts: number;
	/** When the streak began (ISO 8601): for a job waiting for its provider, since when it has waited without progress. */
	since: string;
}

/** What the database keeps: the wire record, with since when the steps have been failing as epoch ms. */
export interface StoredStepError extends Omit<StepError, 'since'> {
	since: number;
}

export interface StepFailureSettings {
	/** PSEO_PROVIDER_MAX_STEP_FAILURES */
	providerMaxStepFailures: number;
	/** PSEO_AUTH_FAILURE_GRACE_MS */
	authFailureGraceMs: number;
}

/** A failed step, classified for the policy below. */
interface ClassifiedFailure {
	code: string;
	message: string;
	/** The provider refused the call in a way that a retry cannot mend. */
	permanent: boolean;
	/** A 401 or 403: permanent only once the grace for a key rotation has passed. */
	auth: boolean;
}

/**
 * Why a step failed. Provider errors carry a redacted, human message already (provider-failure.ts); anything else
 * (the database, a bug) is named only as internal, since its message may hold SQL or paths: the log has it.
 */
function classifyStepFailure(error: unknown): ClassifiedFailure {
	if (isProviderCallError(error)) {
		const auth = error.status === 401 || error.status === 403;
		return { code: error.reason, message: error.message, permanent: !error.retryable && error.reason !== 'aborted', auth };
	}
	return {
		code: 'internal',
		message: 'An internal error stopped this step of the job; it is tried again after the poll interval. The instance\'s log has the details.',
		permanent: false,
		auth: false,
	};
}

/**
 * The job's record after one more failed step, and whether the job must now fail: when the failure cannot be mended
 * by a retry and has now happened `providerMaxStepFailures` times in a row. A 401 or 403 is given `authFailureGraceMs` from
 * the first failure of the streak first, so that an admin can rotate a revoked key without losing the job.
 */
export function nextStepError(
	previous: StoredStepError | null,
	error: unknown,
	now: number,
	settings: StepFailureSettings,
): { record: StoredStepError; fail: boolean } {
	const failure = classifyStepFailure(error);
	const record = countFailure(previous, failure, now);
	const graceOver = !failure.auth || now - record.since >= settings.authFailureGraceMs;
	return { record, fail: failure.permanent && graceOver && record.attempts >= settings.providerMaxStepFailures };
}

/** The streak of failures after one more: the latest failure's code and message, and the streak's count and start. */
function countFailure(previous: StoredStepError | null, failure: Pick<ClassifiedFailure, 'code' | 'message'>, now: number): StoredStepError {
	return { code: failure.code, message: failure.message, at: new Date(now).toISOString(), attempts: (previous?.attempts ?? 0) + 1, since: previous?.since ?? now };
}

/** A stored record as the interface shows it. */
export function publicStepError(stored: StoredStepError | null): StepError | null {
	if (!stored) return null;
	return { code: stored.code, message: stored.message, at: stored.at, attempts: stored.attempts, since: new Date(stored.since).toISOString() };
}

/** `last_error.code` of a job that waits for its provider's capacity (capacity-wait.ts): not a failure, no attention. */
export const PROVIDER_CAPACITY = 'provider_capacity';

/**
 * The record of a job waiting for its provider's capacity: the wait goes on from `previous` (a wait without progress
 * since), or starts now.
 */
export function capacityRecord(previous: StoredStepError | null, message: string, now: number): StoredStepError {
	return countFailure(previous?.code === PROVIDER_CAPACITY ? previous : null, { code: PROVIDER_CAPACITY, message }, now);
}

/** A stored record read back from the database (a JSON column: a string on SQLite and MariaDB, an object on PostgreSQL). */
export function storedStepError(value: unknown): StoredStepError | null {
	let parsed = value;
	if (typeof value === 'string') {
		try {
			parsed = JSON.parse(value);
		} catch {
			return null;
		}
	}
	if (!parsed || typeof parsed !== 'object') return null;
	const record = parsed as Partial<StoredStepError>;
	if (typeof record.code !== 'string' || typeof record.message !== 'string' || typeof record.at !== 'string' || typeof record.attempts !== 'number') return null;
	return { code: record.code, message: record.message, at: record.at, attempts: record.attempts, since: typeof record.since === 'number' ? record.since : Date.parse(record.at) };
}

/**
 * The trouble of a job that fails at its first step: there is no provider to call at all (no API key), or Settings
 * → AI no longer allows the model it was accepted with.
 */
export function providerMissing(choice: ProviderUnavailable, now: number): StoredStepError {
	return countFailure(null, { code: choice.code ?? 'missing_api_key', message: choice.unavailable }, now);
}

/** The longest wait between two failed steps of a job, unless its poll interval is longer. */
const MAX_RETRY_DELAY_MS = 10 * 60_000;

/**
 * How long a job waits after its `attempts`-th failed step in a row: the poll interval, doubled at each failure, up
 * to ten minutes. A job whose provider is down is not hammered, and one refused for good reaches its end within a
 * few intervals (30 s, 1, 2 and 4 minutes with the defaults).
 */
export function stepRetryDelay(pollIntervalMs: number, attempts: number): number {
	const doubled = pollIntervalMs * 2 ** Math.min(Math.max(attempts - 1, 0), 20);
	return Math.min(doubled, Math.max(MAX_RETRY_DELAY_MS, pollIntervalMs));
}

/** The columns of a job's or a publication's trouble. */
export const TROUBLE_FIELDS: readonly string[] = ['last_error', 'attention'];

/** One of TROUBLE_FIELDS as the interface shows it, from its column's value (a boolean is 1 or '1' on some vendors). */
export function troubleValue(field: string, value: unknown): StepError | null | boolean {
	return field === 'last_error' ? publicStepError(storedStepError(value)) : value === true || value === 1 || value === '1';
}

/** A failed step of a publication: it has no provider, so it is named only as internal (its log has the rest). */
export function nextInternalError(previous: StoredStepError | null, now: number): StoredStepError {
	return countFailure(previous, classifyStepFailure(null), now);
}

/** `last_error.code` of a publication whose target could not be reached or refused for now (a 5xx, a 429, no answer). */
const TARGET_UNAVAILABLE = 'target_unavailable';

/** A failed step of a publication that its target caused: its reason, which names the site, never a secret. */
export function nextTargetError(previous: StoredStepError | null, message: string, now: number): StoredStepError {
	return countFailure(previous, { code: TARGET_UNAVAILABLE, message }, now);
}
