import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeOnVendors, insertPendingJob, insertUser, insertWebsite, silentLogger } from '../../test/support/db-under-test.ts';
import { startFakeProvider, type FakeProvider } from '../../test/support/fake-provider/server.ts';
import { createOpenAiProvider } from '../provider/openai/openai-provider.ts';
import { createAnthropicProvider } from '../provider/anthropic/anthropic-provider.ts';
import type { BatchCapableProvider } from '../provider/generation-provider.ts';
import { runCancel } from './end-job.ts';
import { claimJob, JOBS, readJobHead } from './job-store.ts';
import { BATCH_PART_KEY, PARTS, readParts, savePart } from './part-store.ts';
import { settleStrayParts, stopTwins } from './stray-batches.ts';

/*
 * Batches no part will ingest, over HTTP against the fake: the running batches of a cancelled job are settled once
 * they have stopped (what they billed counted once, their files deleted), and a twin of a stored part is cancelled.
 */
describeOnVendors('stray batches', (database) => {
	let fake: FakeProvider;
	let provider: BatchCapableProvider;
	beforeAll(async () => {
		fake = await startFakeProvider();
		provider = createOpenAiProvider({ apiKey: 'test-key', baseURL: fake.url, model: 'test-model', timeoutMs: 5000, backoff: { baseMs: 10, maxMs: 10 }, logger: silentLogger });
	});
	afterAll(async () => fake?.close());

	const schema = { type: 'object', properties: { title: { type: 'string' } }, required: ['title'], additionalProperties: false };
	const lines = (routes: string[]) => routes.map((route) => provider.buildBatchLine(route, { schemaName: 'page', schema, messages: [{ role: 'user', content: `Write ${route}` }] }));
	async function batchFor(jobId: number, part: number, routes: string[]) {
		const input = await provider.uploadBatchFile(lines(routes), `pseo-generation-${jobId}-part-${part}.jsonl`);
		return provider.createBatch(input, { [BATCH_PART_KEY]: `${jobId}:${part}`, route_start: '0', route_end: String(routes.length) });
	}
	async function files(): Promise<string[]> {
		const ids: string[] = [];
		for await (const file of provider.listBatchFiles()) ids.push(file.id);
		return ids;
	}

	it('settles the running part of a cancelled job once its batch has stopped: its answered lines in the usage once, its files deleted', async () => {
		const knex = database().knex;
		fake.reset();
		fake.configure({ holdBatches: true, batchPartialFraction: 0.5 });
		const userId = await insertUser(knex, 1000);
		const pseoId = await insertWebsite(knex, userId);
		const routes = ['/a', '/b', '/c', '/d'];
		const id = await insertPendingJob(knex, { userId, pseoId, routes });
		expect(await claimJob(knex, id, 'w', 60_000, silentLogger)).toBe(true);
		const batch = await batchFor(id, 0, routes);
		await savePart(knex, id, 'w', { part: 0, route_start: 0, route_end: 4, batch_id: batch.id, input_file_id: batch.inputFileId, resubmit_of: null });
		await provider.retrieveBatch(batch.id); // validating → in_progress, where it is held

		// Running: nothing to settle.
		expect(await settleStrayParts(knex, async () => provider, silentLogger)).toBe(0);
		await runCancel((await readJobHead(knex, id))!, { database: knex, logger: silentLogger, worker: 'w', provider, batchMode: true });
		expect((await provider.retrieveBatch(batch.id)).status).toBe('cancelled');

		expect(await settleStrayParts(knex, async () => provider, silentLogger)).toBe(1);
		const stopped = await provider.retrieveBatch(batch.id);
		expect(stopped.requestCounts.completed).toBe(2);
		const job = (await knex(JOBS).where('id', id).first('usage_requests', 'usage_prompt_tokens', 'created_count', 'status')) as Record<string, unknown>;
		expect({ requests: Number(job['usage_requests']), created: Number(job['created_count']), status: job['status'] }).toEqual({ requests: 2, created: 0, status: 'failed' });
		expect(Number(job['usage_prompt_tokens'])).toBeGreaterThan(0);
		expect((await readParts(knex, id)).map((part) => part.status)).toEqual(['ingested']);
		expect(await files()).toEqual([]);
		// Settled once: the next sweep finds nothing, and the usage stays.
		expect(await settleStrayParts(knex, async () => provider, silentLogger)).toBe(0);
		expect(Number(((await knex(JOBS).where('id', id).first('usage_requests')) as Record<string, unknown>)['usage_requests'])).toBe(2);
	});

	it('a part whose batch the provider no longer knows is settled with nothing counted', async () => {
		const knex = database().knex;
		fake.reset();
		const userId = await insertUser(knex, 1000);
		const id = await insertPendingJob(knex, { userId, pseoId: await insertWebsite(knex, userId), routes: ['/x'] });
		await knex(PARTS).insert({ generation_id: id, part: 0, route_start: 0, route_end: 1, batch_id: 'batch_gone', input_file_id: null, status: 'running', resubmit_of: null });
		await knex(JOBS).where('id', id).update({ status: 'failed', active_pseo_id: null });
		expect(await settleStrayParts(knex, async () => provider, silentLogger)).toBe(1);
		expect((await readParts(knex, id)).map((part) => part.status)).toEqual(['ingested']);
	});

	it('cancels a twin of a stored part and deletes its input; the stored batch and other parts\' batches run on', async () => {
		fake.reset();
		fake.configure({ holdBatches: true });
		const older = await batchFor(77, 0, ['/a']);
		const kept = await batchFor(77, 0, ['/a']);
		const other = await batchFor(77, 1, ['/b']);
		expect(await stopTwins(provider, 77, '77:0', kept.id, silentLogger)).toBe(1);
		expect((await provider.retrieveBatch(older.id)).status).toMatch(/^cancell/);
		expect((await provider.retrieveBatch(kept.id)).status).not.toMatch(/^cancell/);
		expect((await provider.retrieveBatch(other.id)).status).not.toMatch(/^cancell/);
		expect((await files()).sort()).toEqual([kept.inputFileId, other.inputFileId].sort());
		expect(await stopTwins(provider, 77, '77:1', other.id, silentLogger)).toBe(0);
	});

	describe('with Anthropic message batches', () => {
		let claude: BatchCapableProvider;
		beforeAll(() => {
			claude = createAnthropicProvider({ apiKey: 'sk-ant-test-key', baseURL: fake.url.replace(/\/v1$/, ''), model: 'claude-haiku-4-5', backoff: { baseMs: 10, maxMs: 10 }, logger: silentLogger });
		});
		async function messageBatchFor(jobId: number, part: number, routes: string[]) {
			const requests = routes.map((route, position) => claude.buildBatchLine(claude.customIdFor!(route, position), { schemaName: 'page', schema, messages: [{ role: 'user', content: `Write ${route}` }] }));
			const input = await claude.uploadBatchFile(requests, `pseo-generation-${jobId}-part-${part}.jsonl`);
			return claude.createBatch(input, { pseo_generation_id: String(jobId), [BATCH_PART_KEY]: `${jobId}:${part}`, route_start: '0', route_end: String(routes.length), resubmit_of: 'none' });
		}

		it('settles the part of a cancelled job once its batch has ended: its answered lines, named by position, in the usage once, the batch deleted', async () => {
			const knex = database().knex;
			fake.reset();
			fake.configure({ holdBatches: true, batchPartialFraction: 0.5 });
			const userId = await insertUser(knex, 1000);
			const routes = ['/a', '/b', '/c', '/d'];
			const id = await insertPendingJob(knex, { userId, pseoId: await insertWebsite(knex, userId), routes });
			expect(await claimJob(knex, id, 'w', 60_000, silentLogger)).toBe(true);
			const batch = await messageBatchFor(id, 0, routes);
			await savePart(knex, id, 'w', { part: 0, route_start: 0, route_end: 4, batch_id: batch.id, input_file_id: null, resubmit_of: null });
			await runCancel((await readJobHead(knex, id))!, { database: knex, logger: silentLogger, worker: 'w', provider: claude, batchMode: true });
			// Asked to stop, it ends at the sweep's retrieve, which settles it.
			expect(await settleStrayParts(knex, async () => claude, silentLogger)).toBe(1);
			const job = (await knex(JOBS).where('id', id).first('usage_requests', 'usage_prompt_tokens')) as Record<string, unknown>;
			expect(Number(job['usage_requests'])).toBe(2);
			expect(Number(job['usage_prompt_tokens'])).toBeGreaterThan(0);
			await expect(claude.retrieveBatch(batch.id)).rejects.toMatchObject({ status: 404 });
			expect(await settleStrayParts(knex, async () => claude, silentLogger)).toBe(0);
		});

		it('a twin of a stored part is found once it has ended, and deleted', async () => {
			fake.reset();
			fake.configure({ holdBatches: true });
			const older = await messageBatchFor(78, 0, ['/a']);
			const kept = await messageBatchFor(78, 0, ['/a']);
			// A provider that did not create the twin sees no metadata while it runs.
			const fresh = createAnthropicProvider({ apiKey: 'sk-ant-test-key', baseURL: fake.url.replace(/\/v1$/, ''), model: 'claude-haiku-4-5', backoff: { baseMs: 10, maxMs: 10 }, logger: silentLogger });
			expect(await stopTwins(fresh, 78, '78:0', kept.id, silentLogger)).toBe(0);
			fake.releaseBatches();
			expect((await fresh.retrieveBatch(older.id)).status).toBe('completed');
			expect((await fresh.retrieveBatch(kept.id)).status).toBe('completed');
			expect(await stopTwins(fresh, 78, '78:0', kept.id, silentLogger)).toBe(1);
			await expect(fresh.retrieveBatch(older.id)).rejects.toMatchObject({ status: 404 });
			expect((await fresh.retrieveBatch(kept.id)).status).toBe('completed');
		});
	});
});
