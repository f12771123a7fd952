import { isProviderCallError } from '../provider/provider-call-error.ts';
import { PROVIDER_NAMES, isProviderKind } from '../shared/provider-kinds.ts';
import type { CapacityWait } from './batch-capacity.ts';
import { failJob, type EndJobDeps } from './end-job.ts';
import { recordCapacityWait } from './job-store.ts';
import type { JobHead } from './job-types.ts';
import { capacityRecord } from './step-failure.ts';

/*
 * Waiting is not failing. A provider that answers "not now" (a batch failed for its queue limit, a create refused with
 * 429 or RESOURCE_EXHAUSTED, a call still rate limited after its waits) fails no page and refunds nothing: the job is
 * handed back with the wait on its record (`last_error.code` `provider_capacity`, `attention` off) and goes again at
 * its next step. A wait still ends: after PSEO_PROVIDER_CAPACITY_WAIT_MS without progress, the job's remaining pages
 * fail with the reason and are refunded.
 */

export interface CapacitySettings {
	/** PSEO_PROVIDER_CAPACITY_WAIT_MS */
	capacityWaitMs: number;
}

/** Whether a provider error means "not now": the provider's rate or queue limit, not a refusal of the request. */
export function isCapacityError(error: unknown): boolean {
	return isProviderCallError(error) && error.reason === 'rate_limited';
}

/**
 * Hands the job back to wait for its provider (due again at `pollAt`, in the queue of `waitingFor` for batch
 * capacity), or fails what is left of it when it has waited too long without progress.
 */
export async function waitForCapacity(
	job: JobHead,
	deps: EndJobDeps,
	settings: CapacitySettings,
	message: string,
	progress: boolean,
	next: { waitingFor: string | null; pollAt: number },
): Promise<void> {
	const now = Date.now();
	const record = capacityRecord(progress ? null : job.last_error, message, now);
	if (now - record.since >= settings.capacityWaitMs) {
		const waited = `${Math.round((now - record.since) / 1000)} s`;
		await failJob(job, deps, {
			...record,
			message: `${message} The job waited ${waited} for provider capacity without progress (PSEO_PROVIDER_CAPACITY_WAIT_MS); its remaining pages failed and were refunded.`,
		});
		return;
	}
	await recordCapacityWait(deps.database, job.id, deps.worker, record, next.waitingFor, next.pollAt);
	deps.logger.info({ jobId: job.id, waitingFor: next.waitingFor, waitedMs: now - record.since }, 'pseo job waits for provider capacity');
}

function providerName(key: string): string {
	return isProviderKind(key) ? PROVIDER_NAMES[key] : key;
}

const tokens = (count: number) => count.toLocaleString('en-US');

/** Why a bulk job's next part waits, in words. */
export function batchWaitMessage(wait: CapacityWait, key: string): string {
	const name = providerName(key);
	switch (wait.reason) {
		case 'full':
			return `Waiting for provider capacity: ${name}'s batch queue holds ${tokens(wait.enqueued)} of ${tokens(wait.limit)} enqueued tokens; the next part goes when a running part ends.`;
		case 'refused':
			return `Waiting for provider capacity: ${name} refused a part because its batch queue was full; the queue is taken to hold ${tokens(wait.limit)} tokens, and the part goes again when there is room.`;
		case 'turn':
			return `Waiting for provider capacity: ${wait.ahead} other job${wait.ahead === 1 ? '' : 's'} go${wait.ahead === 1 ? 'es' : ''} first in ${name}'s batch queue (${tokens(wait.enqueued)} of ${tokens(wait.limit)} enqueued tokens in use).`;
		case 'busy':
			return `Waiting for provider capacity: another instance is submitting a part to ${name}'s batch queue.`;
	}
}

/** Why a job's pages wait after the provider kept answering 429, in words. */
export function rateWaitMessage(key: string, pages: number, detail: string): string {
	return `Waiting for provider capacity: ${providerName(key)} kept answering that its rate limit was reached for ${pages} page${pages === 1 ? '' : 's'}; they go again at the job's next step. (${detail})`;
}
