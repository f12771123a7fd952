import { describe, expect, it } from 'vitest';
import { ProviderCallError } from '../provider/provider-call-error.ts';
import { nextStepError, nextTargetError, providerMissing, publicStepError, stepRetryDelay, storedStepError, type StoredStepError } from './step-failure.ts';

const settings = { providerMaxStepFailures: 3, authFailureGraceMs: 60_000 };
const refused = new ProviderCallError('Provider rejected the request (HTTP 400): unknown model', { reason: 'bad_request', retryable: false, status: 400 });
const revoked = new ProviderCallError('Provider rejected the API key (HTTP 401)', { reason: 'unauthorized', retryable: false, status: 401 });
const outage = new ProviderCallError('Provider server error (HTTP 503)', { reason: 'server_error', retryable: true, status: 503 });

/** The records of `errors` failing in a row, one second apart from `start`, and whether each one fails the job. */
function streak(errors: unknown[], start = 1_000_000, stepMs = 1000): { record: StoredStepError; fail: boolean }[] {
	const out: { record: StoredStepError; fail: boolean }[] = [];
	let previous: StoredStepError | null = null;
	errors.forEach((error, i) => {
		const next = nextStepError(previous, error, start + i * stepMs, settings);
		out.push(next);
		previous = next.record;
	});
	return out;
}

describe('nextStepError', () => {
	it('fails the job at the configured count of refusals in a row, counting every failure of the streak', () => {
		const steps = streak([outage, refused, refused]);
		expect(steps.map((step) => step.fail)).toEqual([false, false, true]);
		expect(steps.map((step) => step.record.attempts)).toEqual([1, 2, 3]);
		expect(steps[2]!.record).toMatchObject({ code: 'bad_request', message: refused.message, since: 1_000_000, at: new Date(1_002_000).toISOString() });
	});

	it('never fails the job for failures a retry may mend, however many', () => {
		expect(streak(Array.from({ length: 20 }, () => outage)).some((step) => step.fail)).toBe(false);
		expect(streak(Array.from({ length: 20 }, () => new Error('SQLITE_BUSY: database is locked'))).some((step) => step.fail)).toBe(false);
	});

	it('gives a 401 or 403 the grace from the first failure of the streak, then fails it like a refusal', () => {
		// One failure every 10 s: the grace of 60 s ends at the seventh.
		const steps = streak(Array.from({ length: 8 }, () => revoked), 0, 10_000);
		expect(steps.map((step) => step.fail)).toEqual([false, false, false, false, false, false, true, true]);
		const forbidden = new ProviderCallError('Provider denied access (HTTP 403)', { reason: 'forbidden', retryable: false, status: 403 });
		expect(streak([forbidden, forbidden, forbidden], 0, 30_000).map((step) => step.fail)).toEqual([false, false, true]);
	});

	it('names an internal fault without its message, which may hold SQL', () => {
		const { record } = nextStepError(null, new Error('insert into "pseo_posts" values … - duplicate key'), 5, settings);
		expect(record.code).toBe('internal');
		expect(record.message).not.toMatch(/pseo_posts|duplicate/);
	});

	it('an aborted call is not a refusal', () => {
		const aborted = new ProviderCallError('Provider call was aborted', { reason: 'aborted', retryable: false });
		expect(streak([aborted, aborted, aborted, aborted]).some((step) => step.fail)).toBe(false);
	});
});

describe('the stored record', () => {
	it('reads back from a JSON string or an object, and shows the interface its five fields only, its start as a date', () => {
		const { record } = nextStepError(null, refused, 1_000, settings);
		expect(storedStepError(JSON.stringify(record))).toEqual(record);
		expect(storedStepError(record)).toEqual(record);
		expect(publicStepError(record)).toEqual({ code: 'bad_request', message: refused.message, at: new Date(1_000).toISOString(), attempts: 1, since: new Date(1_000).toISOString() });
		expect(storedStepError(null)).toBeNull();
		expect(storedStepError('not json')).toBeNull();
		expect(storedStepError({ code: 'x' })).toBeNull();
		expect(publicStepError(null)).toBeNull();
	});
});

describe('stepRetryDelay', () => {
	it('doubles the poll interval at each failure, up to ten minutes, or the poll interval when it is longer', () => {
		expect([1, 2, 3, 4, 5].map((attempts) => stepRetryDelay(30_000, attempts))).toEqual([30_000, 60_000, 120_000, 240_000, 480_000]);
		expect(stepRetryDelay(30_000, 6)).toBe(600_000);
		expect(stepRetryDelay(30_000, 1000)).toBe(600_000);
		expect(stepRetryDelay(900_000, 3)).toBe(900_000);
	});
});

describe('providerMissing', () => {
	it('says why no provider can run the job: none configured, or a model Settings → AI no longer allows', () => {
		const now = Date.parse('2026-11-27T09:00:00Z');
		expect(providerMissing({ unavailable: 'No AI provider is configured.' }, now)).toMatchObject({ code: 'missing_api_key', message: 'No AI provider is configured.', attempts: 1 });
		expect(providerMissing({ unavailable: 'The model "x" is not allowed.', code: 'model_not_allowed' }, now)).toMatchObject({ code: 'model_not_allowed', message: 'The model "x" is not allowed.', attempts: 1 });
	});
});

describe('nextTargetError', () => {
	it('counts a publication\'s failed steps at its target in a row, with the target\'s reason, from the streak\'s start', () => {
		const first = nextTargetError(null, 'Webhook: the receiver answered HTTP 503 after 2 attempts', 1_000);
		expect(first).toEqual({ code: 'target_unavailable', message: 'Webhook: the receiver answered HTTP 503 after 2 attempts', at: new Date(1_000).toISOString(), attempts: 1, since: 1_000 });
		const second = nextTargetError(first, 'The site could not be reached: timeout', 5_000);
		expect(second).toMatchObject({ code: 'target_unavailable', message: 'The site could not be reached: timeout', attempts: 2, since: 1_000 });
		// The wait before the next step doubles with the streak, as a job's does.
		expect([first, second].map((record) => stepRetryDelay(30_000, record.attempts))).toEqual([30_000, 60_000]);
	});
});
