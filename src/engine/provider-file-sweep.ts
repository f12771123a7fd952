import type { Knex } from 'knex';
import type { BatchCapableProvider } from '../provider/generation-provider.ts';
import type { Logger } from '../shared/logger.ts';
import { JOBS } from './job-store.ts';

/*
 * Nothing of ours left at the provider. A part's files are deleted once its results are stored, and an upload no
 * batch will run is deleted at once (batch-runner.ts); what still escapes (a cancel while a batch ran, a crash
 * between an upload and its part's row, a delete the provider refused) is found here: the batch files named as our
 * uploads are (`pseo-generation-<job>-part-<n>.jsonl`) whose job has ended, a day after their upload.
 */

/** How our uploads are named (batch-runner.ts `submitPart`). */
const OUR_UPLOAD = /^pseo-generation-(\d+)-part-\d+\.jsonl$/;

/** A file is left alone for a day: a step may be about to create its batch, or another instance to adopt it. */
const MIN_AGE_MS = 24 * 60 * 60 * 1000;

/** The jobs looked up at once. */
const JOBS_PER_QUERY = 500;

/** Deletes our uploads of ended jobs older than a day; returns how many. `now` is the sweep's clock. */
export async function sweepProviderFiles(knex: Knex, provider: BatchCapableProvider, logger: Logger, now = Date.now()): Promise<number> {
	const candidates: { id: string; jobId: number }[] = [];
	for await (const file of provider.listBatchFiles()) {
		const match = OUR_UPLOAD.exec(file.filename);
		if (match && file.createdAt * 1000 <= now - MIN_AGE_MS) candidates.push({ id: file.id, jobId: Number(match[1]) });
	}
	let deleted = 0;
	for (let i = 0; i < candidates.length; i += JOBS_PER_QUERY) {
		const chunk = candidates.slice(i, i + JOBS_PER_QUERY);
		const unfinished = new Set(
			((await knex(JOBS)
				.whereIn('id', [...new Set(chunk.map((file) => file.jobId))])
				.whereIn('status', ['pending', 'running'])
				.select('id')) as { id: number }[]).map((row) => Number(row.id)),
		);
		for (const file of chunk) {
			if (unfinished.has(file.jobId)) continue;
			try {
				await provider.deleteFile(file.id);
				deleted++;
				logger.info({ fileId: file.id, jobId: file.jobId }, 'pseo: a batch file of an ended job was left at the provider; deleted');
			} catch (error) {
				logger.warn({ err: error, fileId: file.id, jobId: file.jobId }, 'pseo: a batch file left at the provider could not be deleted; the next sweep tries again');
			}
		}
	}
	return deleted;
}
