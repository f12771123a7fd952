import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from './logger.ts';

/**
 * Runs idempotent start-up work again when it fails, as it does when several instances start at once and race
 * to create the same rows. After `attempts` failures the last error is thrown.
 */
export async function retryOnRace<T>(work: () => Promise<T>, logger: Logger, what: string, attempts = 4): Promise<T> {
	for (let attempt = 1; ; attempt++) {
		try {
			return await work();
		} catch (error) {
			if (attempt >= attempts) throw error;
			logger.warn({ err: error, attempt }, `pseo-automation: ${what} failed, retrying`);
			await sleep(200 + Math.floor(Math.random() * 800));
		}
	}
}
