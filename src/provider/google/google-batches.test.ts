import { existsSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../../../test/support/fake-provider/server.ts';
import { linesOf, pageRequest, partMetadata, recordingLogger, untilFinal } from '../../../test/support/batch-provider-kit.ts';
import { GoogleGenAI } from '@google/genai';
import { createRetrier } from '../retry-policy.ts';
import { createGoogleBatches, statusOf } from './google-batches.ts';
import { createGoogleProvider } from './google-provider.ts';

/*
 * The Google provider's batches through the Gemini Batch API against the fake over loopback: the requests go inline,
 * the engine's metadata travels in the display name and is read back from any batch the key lists (a running one
 * too, so a lost create is adopted), the states map onto the engine's, results of every kind are read by their key,
 * and deleting a batch's results deletes it.
 */
const API_KEY = 'AIza-test-0123456789SECRET';

let fake: FakeProvider;
const logger = recordingLogger();

beforeAll(async () => {
	fake = await startFakeProvider();
});
afterEach(() => {
	fake.reset();
	logger.lines.length = 0;
});
afterAll(async () => {
	await fake.close();
});

const provider = () =>
	createGoogleProvider({ apiKey: API_KEY, baseURL: fake.url.replace(/\/v1$/, ''), model: 'gemini-2.5-flash', backoff: { baseMs: 1, maxMs: 2 }, logger });

async function submit(routes: string[], tags = partMetadata(41, 0)) {
	const batches = provider();
	const lines = routes.map((route) => batches.buildBatchLine(route, pageRequest(route)));
	const input = await batches.uploadBatchFile(lines, 'pseo-generation-41-part-0.jsonl');
	const batch = await batches.createBatch(input, tags);
	return { batches, input, batch };
}

const creates = () => fake.requests.filter((entry) => entry.method === 'POST' && entry.path.endsWith(':batchGenerateContent'));

describe('statusOf', () => {
	it('maps the SDK\'s job states onto the engine\'s', () => {
		expect(statusOf('JOB_STATE_PENDING')).toBe('validating');
		expect(statusOf('JOB_STATE_RUNNING')).toBe('in_progress');
		expect(statusOf('JOB_STATE_SUCCEEDED')).toBe('completed');
		expect(statusOf('JOB_STATE_CANCELLED')).toBe('cancelled');
		expect(statusOf('JOB_STATE_EXPIRED')).toBe('expired');
		expect(statusOf('JOB_STATE_FAILED')).toBe('failed');
	});
});

describe('Gemini batches', () => {
	it('creates a batch inline from the spool, removes the spool, and reads every result back by its route', async () => {
		fake.configure({ failRoutes: { '/broken': 'error' } });
		const { batches, input, batch } = await submit(['/a', '/b', '/broken']);
		expect(batches.limits).toEqual({ maxRequests: 100_000, maxBytes: 19_000_000 });
		expect(input).toMatch(/^spool:/);
		expect(existsSync(input.slice('spool:'.length))).toBe(false);
		expect(batch).toMatchObject({ status: 'validating', inputFileId: null, outputFileId: null, errorFileId: null });
		expect(batch.id).toMatch(/^batches\//);
		expect(batch.metadata).toEqual({ pseo_generation_id: '41', pseo_generation_part: '41:0', route_start: '0', route_end: '3', resubmit_of: 'none' });
		expect(creates().map((entry) => [entry.path, entry.customIds, entry.metadata])).toEqual([
			['/v1beta/models/gemini-2.5-flash:batchGenerateContent', ['/a', '/b', '/broken'], { display_name: 'g41_p0_s0_e3_rn__part' }],
		]);

		const ended = await untilFinal(batches, batch.id);
		expect(ended).toMatchObject({ status: 'completed', outputFileId: `results:${batch.id}`, requestCounts: { total: 3, completed: 2, failed: 1 } });
		// The results come with the retrieve that found the batch ended: they are not downloaded again.
		const gets = () => fake.requests.filter((entry) => entry.method === 'GET' && entry.path === `/v1beta/${batch.id}`).length;
		const before = gets();
		const results = await linesOf(batches, ended.outputFileId!);
		expect(gets()).toBe(before);
		expect(results.map((result) => result.customId).sort()).toEqual(['/a', '/b', '/broken']);
		const answered = results.filter((result) => result.ok);
		expect(answered).toHaveLength(2);
		expect(answered[0]!.usage?.prompt_tokens).toBeGreaterThan(0);
		expect(answered[0]!.usage?.completion_tokens).toBeGreaterThan(0);
		expect(answered[0]!.ok && answered[0]!.content).toMatchObject({ title: expect.any(String) });
		const errored = results.find((result) => !result.ok)!;
		expect(errored).toMatchObject({ customId: '/broken', ok: false });
		expect(errored.ok ? '' : errored.error).toMatch(/^Batch request failed \(/);
		expect(JSON.stringify(results)).not.toContain(API_KEY);
	});

	it('builds each batch line with the body of a direct call: the page schema and the system instruction', async () => {
		await submit(['/a']);
		const sent = creates()[0]!;
		expect(sent.routes).toEqual(['/a']);
		expect(sent.apiKey).toBe(API_KEY);
		const line = JSON.parse(provider().buildBatchLine('/a', pageRequest('/a'))) as { key: string; request: { config: Record<string, unknown> } };
		expect(line.key).toBe('/a');
		expect(line.request.config).toMatchObject({ responseMimeType: 'application/json', systemInstruction: expect.any(String), maxOutputTokens: expect.any(Number) });
		expect(line.request.config['responseJsonSchema']).toMatchObject({ additionalProperties: false });
	});

	it('an expired batch leaves its unanswered requests out of the results', async () => {
		fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.5 });
		const { batches, batch } = await submit(['/a', '/b', '/c', '/d']);
		const ended = await untilFinal(batches, batch.id);
		expect(ended.status).toBe('expired');
		const results = await linesOf(batches, ended.outputFileId!);
		expect(results).toHaveLength(2);
		expect(results.every((result) => result.ok)).toBe(true);
	});

	it('a failed batch ends with no results', async () => {
		fake.configure({ batchEndState: 'failed' });
		const { batches, batch } = await submit(['/a']);
		const ended = await untilFinal(batches, batch.id);
		expect(ended.status).toBe('failed');
		// The SDK passes no reason on: the pages fail with what is known.
		expect(ended.errors).toEqual([{ code: 'batch_failed', message: 'Gemini ended the batch as failed without a reason', line: null }]);
		expect(await linesOf(batches, ended.outputFileId!)).toEqual([]);
	});

	it('cancels a running batch, which ends cancelled with what it had answered', async () => {
		fake.configure({ holdBatches: true, batchPartialFraction: 0.5 });
		const { batches, batch } = await submit(['/a', '/b']);
		await batches.cancelBatch(batch.id);
		const ended = await untilFinal(batches, batch.id);
		expect(ended.status).toBe('cancelled');
		expect(await linesOf(batches, ended.outputFileId!)).toHaveLength(1);
		expect(fake.requests.filter((entry) => entry.path === `/v1beta/${batch.id}:cancel`)).toHaveLength(1);
	});

	it('finds a running batch by its metadata from a fresh provider (a lost create is adopted); deleting its results deletes it', async () => {
		fake.configure({ holdBatches: true });
		const { batch } = await submit(['/a', '/b'], partMetadata(41, 0));
		const other = await submit(['/c'], partMetadata(41, 1, '0'));
		await submit(['/d'], partMetadata(42, 0));
		const fresh = provider();
		const found = await fresh.findBatchByMetadata('pseo_generation_part', '41:0');
		expect(found).toMatchObject({ id: batch.id, metadata: { pseo_generation_id: '41', route_start: '0', route_end: '3', resubmit_of: 'none' } });
		expect(['validating', 'in_progress']).toContain(found!.status);
		expect((await fresh.findBatchesByMetadata('pseo_generation_id', '41')).map((info) => info.id)).toEqual([other.batch.id, batch.id]);
		expect((await fresh.findBatchByMetadata('pseo_generation_part', '41:1'))?.metadata['resubmit_of']).toBe('0');
		expect(await fresh.findBatchByMetadata('pseo_generation_part', '43:0')).toBeNull();

		// A running batch cannot be deleted; an ended one can, once.
		await expect(fresh.deleteFile(`results:${batch.id}`)).rejects.toMatchObject({ status: 400 });
		fake.releaseBatches();
		await untilFinal(fresh, batch.id);
		await fresh.deleteFile(`results:${batch.id}`);
		await fresh.deleteFile(`results:${batch.id}`); // already gone
		expect(await fresh.findBatchByMetadata('pseo_generation_part', '41:0')).toBeNull();
		await expect(fresh.retrieveBatch(batch.id)).rejects.toMatchObject({ status: 404 });
	});

	it('a lookup pages through the list', async () => {
		const batches = provider();
		for (let part = 0; part < 101; part++) {
			const input = await batches.uploadBatchFile([batches.buildBatchLine('/a', pageRequest('/a'))], `pseo-generation-50-part-${part}.jsonl`);
			await batches.createBatch(input, partMetadata(50, part));
		}
		// 101 batches take two pages of 100; the oldest is on the second.
		const found = await provider().findBatchesByMetadata('pseo_generation_id', '50');
		expect(found).toHaveLength(101);
		expect(found.at(-1)?.metadata['pseo_generation_part']).toBe('50:0');
		expect(fake.requests.filter((entry) => entry.method === 'GET' && entry.path === '/v1beta/batches')).toHaveLength(2);
	});

	it('a lookup that stops at its scan limit with more listed says so, once', async () => {
		for (let part = 0; part < 3; part++) await submit(['/a'], partMetadata(60, part));
		const client = new GoogleGenAI({ apiKey: API_KEY, vertexai: false, apiVersion: 'v1beta', httpOptions: { baseUrl: fake.url.replace(/\/v1$/, '') } });
		const withRetries = createRetrier({ maxAttempts: 1, backoff: { baseMs: 1, maxMs: 2 }, maxRetryAfterMs: 0, sleep: async () => {}, logger, secrets: [API_KEY] });
		const batches = createGoogleBatches({ client, withRetries, model: 'gemini-2.5-flash', maxTokens: 1000, maxRetryAfterMs: 0, secrets: [API_KEY], logger, maxBatchScan: 2 });
		logger.lines.length = 0;
		// The two newest are looked at; the oldest, part 0, is beyond the limit.
		expect(await batches.findBatchByMetadata('pseo_generation_part', '60:0')).toBeNull();
		expect(await batches.findBatchByMetadata('pseo_generation_part', '60:2')).not.toBeNull();
		expect(await batches.findBatchByMetadata('pseo_generation_part', '60:0')).toBeNull();
		const warnings = logger.lines.filter((line) => JSON.stringify(line).includes('stopped at its limit'));
		expect(warnings).toHaveLength(1);
	});

	it('metadata that is not a part\'s is refused before anything is sent, and the spool is removed', async () => {
		const batches = provider();
		const input = await batches.uploadBatchFile([batches.buildBatchLine('/a', pageRequest('/a'))], 'pseo-generation-1-part-0.jsonl');
		await expect(batches.createBatch(input, { ...partMetadata(1, 0), pseo_generation_part: '2:0' })).rejects.toThrow(TypeError);
		expect(existsSync(input.slice('spool:'.length))).toBe(false);
		expect(creates()).toEqual([]);
	});

	it('a refused create is not sent again', async () => {
		fake.configure({ refuseBatchCreates: 400 });
		await expect(submit(['/a'])).rejects.toMatchObject({ status: 400, reason: 'bad_request' });
		expect(creates()).toHaveLength(1);
		// The failure was logged, without the key.
		expect(logger.lines.length).toBeGreaterThan(0);
		expect(JSON.stringify(logger.lines)).not.toContain(API_KEY);
	});
});
