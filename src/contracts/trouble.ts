import { z } from 'zod';
import { doc, named } from './contract-registry.ts';
import { Timestamp } from './field-rules.ts';

const StepError = named(
	'StepError',
	z.strictObject({
		code: doc(z.string(), {
			description: 'What failed: the provider\'s failure (`bad_request`, `not_found`, `unauthorized`, `forbidden`, `server_error`, `timeout`, `connection`...), `missing_api_key`, `model_not_allowed` (Settings → AI no longer allows the job\'s model), `quota_exhausted` (the provider account\'s credit or spend limit, which waiting does not mend), or `internal`; or `provider_capacity` while a job only waits for its provider (a full batch queue, a rate limit), with `attention` off.',
			examples: ['bad_request'],
		}),
		message: doc(z.string(), { description: 'What happened, for people; never a key.' }),
		at: Timestamp,
		attempts: doc(z.int().min(1), { description: 'Steps of the job that failed (or waited) in a row.' }),
		// When the streak began: for `provider_capacity`, since when the job has waited without progress (after
		// PSEO_PROVIDER_CAPACITY_WAIT_MS its remaining pages fail and are refunded); the record's description says so.
		since: Timestamp,
	}),
	{
		description:
			'The failures of the latest steps in a row of a job or a publication (a provider call of a bulk job, a database fault), the latest at `at`, the first at `since`. A failure no retry mends (400, 404, 422) fails a job after `PSEO_PROVIDER_MAX_STEP_FAILURES` of them; a 401 or 403 only after `PSEO_AUTH_FAILURE_GRACE_MS` too. Others are retried, later each time. A job that only waits for its provider (`provider_capacity`) waits at most `PSEO_PROVIDER_CAPACITY_WAIT_MS` from `since` without progress; then its remaining pages fail and are refunded.',
	},
);

/** The trouble of a job or a publication (engine/step-failure.ts), after the fields of the interface. */
export const troubleFields = {
	last_error: doc(StepError.nullable(), { description: 'Null while all is well; kept when its failures ended it.' }),
	attention: doc(z.boolean(), { description: 'True while its steps keep failing: someone should look at `last_error`.' }),
};
