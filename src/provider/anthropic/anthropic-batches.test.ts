import { existsSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../../../test/support/fake-provider/server.ts';
import { linesOf, pageRequest, partMetadata, recordingLogger, untilFinal } from '../../../test/support/batch-provider-kit.ts';
import { createAnthropicProvider } from './anthropic-provider.ts';
import { statusOf } from './anthropic-batches.ts';

/*
 * The Anthropic provider's Message Batches against the fake over loopback: the engine's metadata travels in the
 * custom ids and comes back, the batch states map onto the engine's, results of every kind are read, an ended batch
 * is found by its metadata, and deleting its results deletes it.
 */
const API_KEY = 'sk-ant-test-0123456789SECRET';

let fake: FakeProvider;
const logger = recordingLogger();
const logged = logger.lines;

beforeAll(async () => {
	fake = await startFakeProvider();
});
afterEach(() => {
	fake.reset();
	logged.length = 0;
});
afterAll(async () => {
	await fake.close();
});

const provider = () =>
	createAnthropicProvider({ apiKey: API_KEY, baseURL: fake.url.replace(/\/v1$/, ''), model: 'claude-haiku-4-5', backoff: { baseMs: 1, maxMs: 2 }, logger });

const metadata = partMetadata;

async function submit(routes: string[], tags = metadata(41, 0)) {
	const batches = provider();
	const lines = routes.map((route, position) => batches.buildBatchLine(batches.customIdFor!(route, position), pageRequest(route)));
	const input = await batches.uploadBatchFile(lines, 'pseo-generation-41-part-0.jsonl');
	const batch = await batches.createBatch(input, tags);
	return { batches, input, batch };
}

describe('custom ids', () => {
	it('name a line by its position, never by its route', () => {
		const batches = provider();
		expect(batches.customIdFor!('/page-1', 4)).toBe('p4');
		expect(() => batches.buildBatchLine('/page-1', pageRequest('/page-1'))).toThrow(TypeError);
		expect(batches.limits).toEqual({ maxRequests: 100_000, maxBytes: 256_000_000 });
	});
});

describe('statusOf', () => {
	const counts = { processing: 0, succeeded: 2, errored: 0, canceled: 0, expired: 0 };
	it('maps the processing states and what an ended batch came to', () => {
		expect(statusOf({ processing_status: 'in_progress', cancel_initiated_at: null, request_counts: counts })).toBe('in_progress');
		expect(statusOf({ processing_status: 'canceling', cancel_initiated_at: 'x', request_counts: counts })).toBe('cancelling');
		expect(statusOf({ processing_status: 'ended', cancel_initiated_at: null, request_counts: counts })).toBe('completed');
		expect(statusOf({ processing_status: 'ended', cancel_initiated_at: null, request_counts: { ...counts, expired: 1 } })).toBe('expired');
		expect(statusOf({ processing_status: 'ended', cancel_initiated_at: '2026-01-01T00:00:00Z', request_counts: { ...counts, canceled: 1 } })).toBe('cancelled');
	});
});

describe('message batches', () => {
	it('creates a batch from the spool, removes the spool, and reads every result back by the engine\'s custom id', async () => {
		fake.configure({ failRoutes: { '/broken': 'error' } });
		const { batches, input, batch } = await submit(['/a', '/b', '/broken']);
		expect(input).toMatch(/^spool:/);
		expect(existsSync(input.slice('spool:'.length))).toBe(false);
		expect(batch).toMatchObject({ status: 'in_progress', inputFileId: null, outputFileId: null, errorFileId: null, requestCounts: { total: 3, completed: 0, failed: 0 } });
		expect(batch.metadata).toMatchObject({ pseo_generation_part: '41:0', route_end: '3' });
		const sent = fake.requests.find((entry) => entry.path === '/v1/messages/batches' && entry.method === 'POST');
		expect(sent?.customIds).toEqual(['g41_p0_s0_e3_rn__p0', 'g41_p0_s0_e3_rn__p1', 'g41_p0_s0_e3_rn__p2']);

		const ended = await untilFinal(batches, batch.id);
		expect(ended).toMatchObject({ status: 'completed', outputFileId: `results:${batch.id}`, errorFileId: null, requestCounts: { total: 3, completed: 2, failed: 1 } });
		const results = await linesOf(batches, ended.outputFileId!);
		expect(results.map((result) => result.customId).sort()).toEqual(['p0', 'p1', 'p2']);
		const ok = results.filter((result) => result.ok);
		expect(ok).toHaveLength(2);
		expect(ok[0]!.usage?.prompt_tokens).toBeGreaterThan(0);
		const errored = results.find((result) => !result.ok)!;
		expect(errored).toMatchObject({ customId: 'p2', ok: false });
		expect(errored.ok ? '' : errored.error).toMatch(/^Batch request failed/);
		expect(JSON.stringify(results)).not.toContain(API_KEY);
	});

	it('maps an expired batch and its expired lines, which are unanswered', async () => {
		fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.5 });
		const { batches, batch } = await submit(['/a', '/b', '/c', '/d']);
		const ended = await untilFinal(batches, batch.id);
		expect(ended.status).toBe('expired');
		const results = await linesOf(batches, ended.outputFileId!);
		expect(results.filter((result) => result.ok)).toHaveLength(2);
		expect(results.filter((result) => !result.ok)).toEqual([
			expect.objectContaining({ ok: false, unanswered: true, code: 'batch_expired' }),
			expect.objectContaining({ ok: false, unanswered: true, code: 'batch_expired' }),
		]);
	});

	it('cancels a running batch: cancelling, then cancelled with canceled lines', async () => {
		fake.configure({ holdBatches: true, batchPartialFraction: 0 });
		const { batches, batch } = await submit(['/a', '/b']);
		expect((await batches.cancelBatch(batch.id)).status).toBe('cancelling');
		const ended = await untilFinal(batches, batch.id);
		expect(ended.status).toBe('cancelled');
		const results = (await linesOf(batches, ended.outputFileId!)).sort((a, b) => String(a.customId).localeCompare(String(b.customId)));
		expect(results).toEqual([
			expect.objectContaining({ customId: 'p0', ok: false, unanswered: true, code: 'batch_cancelled' }),
			expect.objectContaining({ customId: 'p1', ok: false, unanswered: true, code: 'batch_cancelled' }),
		]);
	});

	it('finds an ended batch by its metadata from a fresh provider, but not a running one; deleting its results deletes it', async () => {
		fake.configure({ holdBatches: true });
		const { batch } = await submit(['/a', '/b'], metadata(41, 0));
		const other = await submit(['/c'], metadata(41, 1, '0'));
		// A provider that did not create them cannot read the metadata of running batches.
		const fresh = provider();
		expect(await fresh.findBatchByMetadata('pseo_generation_part', '41:0')).toBeNull();
		fake.releaseBatches();
		await untilFinal(fresh, batch.id);
		await untilFinal(fresh, other.batch.id);
		const found = await fresh.findBatchByMetadata('pseo_generation_part', '41:0');
		expect(found).toMatchObject({ id: batch.id, status: 'completed', metadata: { pseo_generation_id: '41', route_start: '0', route_end: '3', resubmit_of: 'none' } });
		expect((await fresh.findBatchesByMetadata('pseo_generation_id', '41')).map((info) => info.id)).toEqual([other.batch.id, batch.id]);
		expect((await fresh.findBatchByMetadata('pseo_generation_part', '41:1'))?.metadata['resubmit_of']).toBe('0');
		// The tags are remembered: a second lookup reads no results again.
		const reads = fake.requests.filter((entry) => entry.path.endsWith('/results')).length;
		await fresh.findBatchesByMetadata('pseo_generation_id', '41');
		expect(fake.requests.filter((entry) => entry.path.endsWith('/results')).length).toBe(reads);

		await fresh.deleteFile(`results:${batch.id}`);
		await fresh.deleteFile(`results:${batch.id}`); // already gone
		expect(await fresh.findBatchByMetadata('pseo_generation_part', '41:0')).toBeNull();
		await expect(fresh.retrieveBatch(batch.id)).rejects.toMatchObject({ status: 404 });
		// The 404 was logged, without the key.
		expect(logged.length).toBeGreaterThan(0);
		expect(JSON.stringify(logged)).not.toContain(API_KEY);
	});
});
