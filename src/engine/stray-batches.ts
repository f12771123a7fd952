import type { Knex } from 'knex';
import { FINAL_BATCH_STATES, type BatchInfo, type BatchCapableProvider } from '../provider/generation-provider.ts';
import { ProviderCallError } from '../provider/provider-call-error.ts';
import type { Logger } from '../shared/logger.ts';
import { batchParts } from '../metrics/metrics.ts';
import { discardFile } from './batch-files.ts';
import { routesByCustomId, withRoute } from './batch-ingest.ts';
import { JOB_ROUTES } from './job-route-store.ts';
import { JOBS, usageIncrement, type PageUsage } from './job-store.ts';
import { BATCH_PART_KEY, PARTS } from './part-store.ts';

/*
 * Batches that no part will ingest, and that would otherwise run, bill and keep their files at the provider:
 * - a twin: a second batch tagged with a part that is stored with another batch (two lost creates, or a create
 *   that outran a takeover), cancelled as soon as the stored part is known;
 * - the running batches of a job that ended early (a cancel, or a provider that refused it for good): end-job.ts
 *   asks the provider to stop them; once they have stopped, the lines they completed are counted in the job's
 *   usage (the provider bills them; their pages were refunded and are not stored), and their files are deleted.
 */

/** Parts of ended jobs looked at per sweep: each costs a retrieve, and a download once its batch has stopped. */
const PARTS_PER_SWEEP = 20;

/**
 * Cancels every batch tagged with `tag` other than `kept`, the one the part is stored with, and deletes its input.
 * Its output, if it answered lines before it stopped, is left to the provider's expiry: no stored part names it.
 */
export async function stopTwins(provider: BatchCapableProvider, jobId: number, tag: string, kept: string, logger: Logger): Promise<number> {
	const twins = (await provider.findBatchesByMetadata(BATCH_PART_KEY, tag)).filter((batch) => batch.id !== kept);
	for (const twin of twins) {
		if (provider.twinsDeletedOnceEnded && FINAL_BATCH_STATES.has(twin.status)) {
			// An ended twin cannot be stopped, and its results go with it: deleting them deletes the batch.
			for (const fileId of new Set([twin.inputFileId, twin.outputFileId, twin.errorFileId])) if (fileId) await deleteLogged(provider, fileId, { jobId, batchId: twin.id }, logger);
			logger.warn({ jobId, tag, batchId: twin.id, keptBatchId: kept }, 'pseo batch twin of a stored part had ended; deleted at the provider');
			continue;
		}
		await stopAtProvider(provider, twin, { jobId, tag, keptBatchId: kept }, logger);
		logger.warn({ jobId, tag, batchId: twin.id, keptBatchId: kept }, 'pseo batch twin of a stored part cancelled at the provider');
		if (twin.inputFileId) await deleteLogged(provider, twin.inputFileId, { jobId, batchId: twin.id }, logger);
	}
	return twins.length;
}

interface StrayPart {
	generation_id: number;
	part: number;
	route_start: number;
	route_end: number;
	batch_id: string;
	input_file_id: string | null;
}

/** The batch provider a job ran with, from its recorded provider and model; null when it can no longer be reached. */
export type JobBatchProvider = (job: { provider: string | null; model: string | null }) => Promise<BatchCapableProvider | null>;

/**
 * Settles the parts still `running` of jobs that have ended: each whose batch has stopped gets its billed lines
 * added to the job's usage and is marked `ingested` in one transaction (a conditional update, so that two instances
 * count it once), and then its files are deleted. A batch still running is asked to stop again. Each part is
 * settled at the provider its job ran with. Returns how many parts were settled.
 */
export async function settleStrayParts(knex: Knex, providerOf: JobBatchProvider, logger: Logger): Promise<number> {
	const rows = (await knex(`${PARTS} as p`)
		.join(`${JOBS} as g`, 'g.id', 'p.generation_id')
		.where('p.status', 'running')
		.whereIn('g.status', ['completed', 'failed'])
		.orderBy([{ column: 'p.generation_id' }, { column: 'p.part' }])
		.limit(PARTS_PER_SWEEP)
		.select('p.generation_id', 'p.part', 'p.route_start', 'p.route_end', 'p.batch_id', 'p.input_file_id', 'g.provider', 'g.model')) as Record<string, unknown>[];
	let settled = 0;
	// Jobs of one sweep mostly share a provider: each distinct one is resolved once.
	const providers = new Map<string, Promise<BatchCapableProvider | null>>();
	for (const row of rows) {
		const part: StrayPart = {
			generation_id: Number(row['generation_id']),
			part: Number(row['part']),
			route_start: Number(row['route_start']),
			route_end: Number(row['route_end']),
			batch_id: String(row['batch_id']),
			input_file_id: (row['input_file_id'] as string | null) ?? null,
		};
		const job = { provider: (row['provider'] as string | null) ?? null, model: (row['model'] as string | null) ?? null };
		const key = JSON.stringify(job);
		if (!providers.has(key)) providers.set(key, providerOf(job));
		try {
			const provider = await providers.get(key)!;
			if (!provider) {
				logger.debug({ jobId: part.generation_id, part: part.part, provider: job.provider }, 'pseo batch of an ended job: its provider is not configured; left for a later sweep');
				continue;
			}
			if (await settlePart(knex, provider, part, logger)) settled++;
		} catch (error) {
			logger.warn({ err: error, jobId: part.generation_id, part: part.part, batchId: part.batch_id }, 'pseo batch of an ended job could not be settled; the next sweep tries again');
		}
	}
	return settled;
}

async function settlePart(knex: Knex, provider: BatchCapableProvider, part: StrayPart, logger: Logger): Promise<boolean> {
	const context = { jobId: part.generation_id, part: part.part, batchId: part.batch_id };
	let batch: BatchInfo | null;
	try {
		batch = await provider.retrieveBatch(part.batch_id);
	} catch (error) {
		// Deleted, or the key now belongs to another project: nothing runs, nothing more is billed or can be read.
		if (!(error instanceof ProviderCallError) || error.status !== 404) throw error;
		batch = null;
	}
	if (batch && !FINAL_BATCH_STATES.has(batch.status)) {
		if (batch.status !== 'cancelling') await stopAtProvider(provider, batch, context, logger);
		return false;
	}
	const usage = batch?.outputFileId ? await billedLines(knex, provider, part, batch.outputFileId) : { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
	const claimed = await knex.transaction(async (trx) => {
		const updated = await trx(PARTS).where({ generation_id: part.generation_id, part: part.part, status: 'running' }).update({ status: 'ingested' });
		if (updated !== 1) return false;
		if (usage.requests > 0) await trx(JOBS).where('id', part.generation_id).update(usageIncrement(trx, usage));
		return true;
	});
	if (!claimed) return false;
	batchParts.inc({ state: 'stopped' });
	logger.info(
		{ ...context, batchStatus: batch?.status ?? 'unknown to the provider', billedLines: usage.requests, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens },
		"pseo batch of an ended job has stopped: the lines it billed are in the job's usage",
	);
	const files = batch ? [batch.inputFileId, batch.outputFileId, batch.errorFileId] : [part.input_file_id];
	for (const fileId of new Set(files)) if (fileId) await deleteLogged(provider, fileId, context, logger);
	return true;
}

/**
 * The tokens of the output lines that answered a route the job failed: billed by the provider, never stored as a
 * page, so never counted. A line of a route that has a post was counted when its page was stored.
 */
async function billedLines(knex: Knex, provider: BatchCapableProvider, part: StrayPart, outputFileId: string): Promise<PageUsage> {
	const rows = ((await knex(JOB_ROUTES)
		.where({ generation_id: part.generation_id, state: 'failed' })
		.andWhere('position', '>=', part.route_start)
		.andWhere('position', '<', part.route_end)
		.select('route', 'position')) as { route: string; position: number | string }[]).map((row) => ({ route: row.route, position: Number(row.position) }));
	const failed = new Set(rows.map((row) => row.route));
	const routeOf = routesByCustomId(provider, rows);
	const total: PageUsage = { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
	for await (const line of provider.streamFileLines(outputFileId)) {
		const result = withRoute(provider.parseBatchLine(line), routeOf);
		if (!result.usage || result.customId === null || !failed.has(result.customId)) continue;
		failed.delete(result.customId);
		total.prompt_tokens += result.usage.prompt_tokens;
		total.completion_tokens += result.usage.completion_tokens;
		total.requests++;
	}
	return total;
}

/** Asks the provider to stop a batch; a batch that has already finished cannot be, which is only logged. */
async function stopAtProvider(provider: BatchCapableProvider, batch: BatchInfo, context: Record<string, unknown>, logger: Logger): Promise<void> {
	try {
		await provider.cancelBatch(batch.id);
	} catch (error) {
		logger.warn({ err: error, ...context, batchId: batch.id }, 'pseo batch could not be cancelled at the provider (it may have finished)');
	}
}

async function deleteLogged(provider: BatchCapableProvider, fileId: string, context: Record<string, unknown>, logger: Logger): Promise<void> {
	if (await discardFile(provider, fileId, context, logger)) logger.info({ ...context, fileId }, 'pseo batch file deleted at the provider');
}
