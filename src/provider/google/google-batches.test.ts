import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../../../test/support/fake-provider/server.ts';
import type { RequestLogEntry } from '../../../test/support/fake-provider/request-log.ts';
import { linesOf, pageRequest, partMetadata, recordingLogger, untilFinal } from '../../../test/support/batch-provider-kit.ts';
import { GoogleGenAI } from '@google/genai';
import { ProviderCallError } from '../provider-call-error.ts';
import { createRetrier } from '../retry-policy.ts';
import { encodeTag } from '../batch-tag.ts';
import { createGoogleBatches, statusOf } from './google-batches.ts';
import { generateParams } from './google-message.ts';
import { createGoogleProvider } from './google-provider.ts';

/*
 * The Google provider's batches through the Gemini Batch API and its Files API, against the fake over loopback: a
 * part goes up as a JSONL file through the resumable upload, the batch is created from it with the engine's metadata
 * and the file in its display name, read back from any batch the key lists (a running one too, so a lost create is
 * adopted), the states map onto the engine's, the results file is streamed line by line and read by its keys, and
 * deleting a batch's results deletes the file and the batch. A batch of inline requests, as made before the Files
 * API was used, is still read.
 */
const API_KEY = 'AIza-test-0123456789SECRET';
const MODEL = 'gemini-2.5-flash';

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

const root = () => fake.url.replace(/\/v1$/, '');
const provider = () => createGoogleProvider({ apiKey: API_KEY, baseURL: root(), model: MODEL, backoff: { baseMs: 1, maxMs: 2 }, logger });

async function submit(routes: string[], tags = partMetadata(41, 0)) {
	const batches = provider();
	const lines = routes.map((route) => batches.buildBatchLine(route, pageRequest(route)));
	const input = await batches.uploadBatchFile(lines, 'pseo-generation-41-part-0.jsonl');
	const batch = await batches.createBatch(input, tags);
	return { batches, input, batch };
}

const creates = () => fake.requests.filter((entry) => entry.method === 'POST' && entry.path.endsWith(':batchGenerateContent'));
const uploads = () => fake.requests.filter((entry) => entry.method === 'POST' && entry.path === '/upload/v1beta/files');
const uploadCommand = (entry: RequestLogEntry) => entry.extraHeaders?.['x-goog-upload-command'];

/** The key's files and batches at the fake, as Google lists them. */
async function held(kind: 'files' | 'batches'): Promise<{ name: string }[]> {
	const response = await fetch(`${root()}/v1beta/${kind}?pageSize=100`, { headers: { 'x-goog-api-key': API_KEY } });
	const body = (await response.json()) as Record<string, { name: string }[] | undefined>;
	return body[kind === 'files' ? 'files' : 'operations'] ?? [];
}

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
	it('uploads a part through the resumable upload, creates the batch from the file, and reads every result back by its route', async () => {
		fake.configure({ failRoutes: { '/broken': 'error' } });
		const { batches, input, batch } = await submit(['/a', '/b', '/broken']);
		expect(batches.limits).toEqual({ maxRequests: 100_000, maxBytes: 1_800_000_000 });
		expect(input).toMatch(/^files\/[a-z0-9-]+$/);
		// A start, then the bytes in one request that finalizes the upload; the engine's file name is its display name.
		expect(uploads().map((entry) => [uploadCommand(entry), entry.status])).toEqual([
			['start', 200],
			['upload, finalize', 200],
		]);
		expect(uploads()[1]).toMatchObject({ fileId: input, apiKey: API_KEY });
		expect((await held('files')).map((file) => [file.name, (file as { displayName?: string }).displayName])).toEqual([[input, 'pseo-generation-41-part-0.jsonl']]);
		expect(batch).toMatchObject({ status: 'validating', inputFileId: input, outputFileId: null, errorFileId: null });
		expect(batch.id).toMatch(/^batches\//);
		expect(batch.metadata).toEqual({ pseo_generation_id: '41', pseo_generation_part: '41:0', route_start: '0', route_end: '3', resubmit_of: 'none' });
		expect(creates().map((entry) => [entry.path, entry.customIds, entry.metadata, entry.fileId])).toEqual([
			[`/v1beta/models/${MODEL}:batchGenerateContent`, ['/a', '/b', '/broken'], { display_name: `g41_p0_s0_e3_rn__part:${input}` }, input],
		]);

		const ended = await untilFinal(batches, batch.id);
		expect(ended).toMatchObject({ status: 'completed', inputFileId: input, outputFileId: expect.stringMatching(new RegExp(`^results:${batch.id}:files/batch-[a-z0-9]+$`)) });
		const resultsFile = ended.outputFileId!.split(':').at(-1)!;
		const results = await linesOf(batches, ended.outputFileId!);
		// The results file was downloaded where Google documents it, with the key.
		expect(fake.requests.filter((entry) => entry.path.startsWith('/download/')).map((entry) => [entry.path, entry.status, entry.apiKey])).toEqual([
			[`/download/v1beta/${resultsFile}:download`, 200, API_KEY],
		]);
		// The fake writes the results in reverse, as the real service need not keep the input's order.
		expect(results.map((result) => result.customId)).toEqual(['/broken', '/b', '/a']);
		const answered = results.filter((result) => result.ok);
		expect(answered).toHaveLength(2);
		expect(answered[0]!.usage?.prompt_tokens).toBeGreaterThan(0);
		expect(answered[0]!.usage?.completion_tokens).toBeGreaterThan(0);
		expect(answered[0]!.ok && answered[0]!.content).toMatchObject({ title: expect.any(String) });
		const errored = results.find((result) => !result.ok)!;
		expect(errored).toMatchObject({ customId: '/broken', ok: false, code: 'INTERNAL' });
		expect(errored.ok ? '' : errored.error).toMatch(/^Batch request failed \(INTERNAL\)/);
		expect(JSON.stringify(results)).not.toContain(API_KEY);

		// The engine deletes the input, then the results: the file, then the batch.
		await batches.deleteFile(ended.inputFileId!);
		await batches.deleteFile(ended.outputFileId!);
		expect(await held('files')).toEqual([]);
		expect(await held('batches')).toEqual([]);
		expect(fake.requests.filter((entry) => entry.method === 'DELETE').map((entry) => entry.path)).toEqual([
			`/v1beta/${input}`,
			`/v1beta/${resultsFile}`,
			`/v1beta/${batch.id}`,
		]);
		// Already gone: what was asked for holds.
		await batches.deleteFile(ended.outputFileId!);
		await batches.deleteFile(input);
	});

	it('builds each batch line as the request a direct call sends: the page schema and the system instruction', async () => {
		const sent: unknown[] = [];
		// The SDK's own body for a direct call, as it goes over the wire.
		const capture: typeof fetch = async (_input, init) => {
			sent.push(JSON.parse(String(init?.body)));
			return new Response(JSON.stringify({ candidates: [] }), { headers: { 'content-type': 'application/json' } });
		};
		const client = new GoogleGenAI({ apiKey: API_KEY, vertexai: false, apiVersion: 'v1beta', httpOptions: { baseUrl: 'http://127.0.0.1:9', fetch: capture } });
		const { contents, config } = generateParams(16_000, pageRequest('/a'));
		await client.models.generateContent({ model: MODEL, contents, config });
		const line = JSON.parse(provider().buildBatchLine('/a', pageRequest('/a'))) as { key: string; request: Record<string, unknown> };
		expect(line.key).toBe('/a');
		expect(line.request).toEqual(sent[0]);
		expect(line.request).toMatchObject({
			systemInstruction: { parts: [{ text: expect.any(String) }] },
			generationConfig: { responseMimeType: 'application/json', maxOutputTokens: 16_000, responseJsonSchema: { additionalProperties: false } },
		});
	});

	it('uploads a large part in requests of 8 MB at increasing offsets, the last one finalizing', async () => {
		const batches = provider();
		const request = pageRequest('/big');
		const padded = { ...request, messages: [{ role: 'system' as const, content: 'x'.repeat(100_000) }, ...request.messages] };
		const lines = Array.from({ length: 180 }, (_, index) => batches.buildBatchLine(`/big-${index}`, padded));
		const bytes = lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
		expect(bytes).toBeGreaterThan(16 * 1024 * 1024);
		const input = await batches.uploadBatchFile(lines, 'pseo-generation-42-part-0.jsonl');
		const chunk = 8 * 1024 * 1024;
		expect(uploads().map((entry) => [uploadCommand(entry), entry.extraHeaders?.['x-goog-upload-offset']])).toEqual([
			['start', undefined],
			['upload', '0'],
			['upload', String(chunk)],
			['upload, finalize', String(2 * chunk)],
		]);
		const batch = await batches.createBatch(input, partMetadata(42, 0));
		expect(creates().at(-1)?.customIds?.at(-1)).toBe('/big-179');
		expect(fake.countBatchedRoute('/big')).toBe(180);
		expect(batch.inputFileId).toBe(input);
	});

	it('streams a results file: its first lines are read while the rest is still held at the provider', async () => {
		const { batches, batch } = await submit(['/a', '/b', '/c']);
		const ended = await untilFinal(batches, batch.id);
		fake.configure({ holdFileAfterLines: 1 });
		const lines = batches.streamFileLines(ended.outputFileId!)[Symbol.asyncIterator]();
		const first = await lines.next();
		expect(batches.parseBatchLine(first.value as string)).toMatchObject({ customId: '/c', ok: true });
		expect(fake.heldFiles()).toBe(1);
		expect(fake.releaseFiles()).toBe(1);
		const rest: string[] = [];
		for (let next = await lines.next(); !next.done; next = await lines.next()) rest.push(next.value);
		expect(rest.map((line) => batches.parseBatchLine(line).customId)).toEqual(['/b', '/a']);
	});

	it('a results file gone before it is read fails the read as not found', async () => {
		const { batches, batch } = await submit(['/a']);
		const ended = await untilFinal(batches, batch.id);
		const resultsFile = ended.outputFileId!.split(':').at(-1)!;
		await fetch(`${root()}/v1beta/${resultsFile}`, { method: 'DELETE', headers: { 'x-goog-api-key': API_KEY } });
		const read = linesOf(batches, ended.outputFileId!);
		await expect(read).rejects.toBeInstanceOf(ProviderCallError);
		await expect(read).rejects.toMatchObject({ status: 404, reason: 'not_found' });
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

	it('a failed batch ends with no results, and deleting them deletes the batch', async () => {
		fake.configure({ batchEndState: 'failed' });
		const { batches, batch } = await submit(['/a']);
		const ended = await untilFinal(batches, batch.id);
		expect(ended.status).toBe('failed');
		expect(ended.outputFileId).toBe(`results:${batch.id}`);
		// The SDK passes no reason on: the pages fail with what is known.
		expect(ended.errors).toEqual([{ code: 'batch_failed', message: 'Gemini ended the batch as failed without a reason', line: null }]);
		expect(await linesOf(batches, ended.outputFileId!)).toEqual([]);
		await batches.deleteFile(ended.outputFileId!);
		expect(await held('batches')).toEqual([]);
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

	it('finds a running batch by its metadata from a fresh provider (a lost create is adopted), its input file with it', async () => {
		fake.configure({ holdBatches: true });
		const { batch, input } = await submit(['/a', '/b'], partMetadata(41, 0));
		const other = await submit(['/c'], partMetadata(41, 1, '0'));
		await submit(['/d'], partMetadata(42, 0));
		const fresh = provider();
		const found = await fresh.findBatchByMetadata('pseo_generation_part', '41:0');
		expect(found).toMatchObject({ id: batch.id, inputFileId: input, metadata: { pseo_generation_id: '41', route_start: '0', route_end: '3', resubmit_of: 'none' } });
		expect(['validating', 'in_progress']).toContain(found!.status);
		expect((await fresh.findBatchesByMetadata('pseo_generation_id', '41')).map((info) => info.id)).toEqual([other.batch.id, batch.id]);
		expect((await fresh.findBatchByMetadata('pseo_generation_part', '41:1'))?.metadata['resubmit_of']).toBe('0');
		expect(await fresh.findBatchByMetadata('pseo_generation_part', '43:0')).toBeNull();

		// A running batch cannot be deleted; an ended one can, once.
		await expect(fresh.deleteFile(`results:${batch.id}`)).rejects.toMatchObject({ status: 400 });
		fake.releaseBatches();
		const ended = await untilFinal(fresh, batch.id);
		await fresh.deleteFile(ended.outputFileId!);
		expect(await fresh.findBatchByMetadata('pseo_generation_part', '41:0')).toBeNull();
		await expect(fresh.retrieveBatch(batch.id)).rejects.toMatchObject({ status: 404 });
	});

	it('lists the key\'s files by the names the engine gave them, with their upload time', async () => {
		fake.configure({ uploadAgeS: 3600 });
		const { input } = await submit(['/a']);
		const listed = [];
		for await (const file of provider().listBatchFiles()) listed.push(file);
		expect(listed).toHaveLength(1);
		expect(listed[0]).toMatchObject({ id: input, filename: 'pseo-generation-41-part-0.jsonl' });
		expect(Math.abs(listed[0]!.createdAt - (Date.now() / 1000 - 3600))).toBeLessThan(60);
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
		const client = new GoogleGenAI({ apiKey: API_KEY, vertexai: false, apiVersion: 'v1beta', httpOptions: { baseUrl: root() } });
		const withRetries = createRetrier({ maxAttempts: 1, backoff: { baseMs: 1, maxMs: 2 }, maxRetryAfterMs: 0, sleep: async () => {}, logger, secrets: [API_KEY] });
		const batches = createGoogleBatches({
			client,
			withRetries,
			model: MODEL,
			maxTokens: 1000,
			maxRetryAfterMs: 0,
			apiKey: API_KEY,
			baseURL: root(),
			apiVersion: 'v1beta',
			headers: undefined,
			timeoutMs: 5000,
			secrets: [API_KEY],
			logger,
			maxBatchScan: 2,
		});
		logger.lines.length = 0;
		// The two newest are looked at; the oldest, part 0, is beyond the limit.
		expect(await batches.findBatchByMetadata('pseo_generation_part', '60:0')).toBeNull();
		expect(await batches.findBatchByMetadata('pseo_generation_part', '60:2')).not.toBeNull();
		expect(await batches.findBatchByMetadata('pseo_generation_part', '60:0')).toBeNull();
		const warnings = logger.lines.filter((line) => JSON.stringify(line).includes('stopped at its limit'));
		expect(warnings).toHaveLength(1);
	});

	it('metadata that is not a part\'s, or an input that is not an uploaded file, is refused before anything is sent', async () => {
		const batches = provider();
		const input = await batches.uploadBatchFile([batches.buildBatchLine('/a', pageRequest('/a'))], 'pseo-generation-1-part-0.jsonl');
		await expect(batches.createBatch(input, { ...partMetadata(1, 0), pseo_generation_part: '2:0' })).rejects.toThrow(TypeError);
		await expect(batches.createBatch('spool:/tmp/pseo-batch-x/input.jsonl', partMetadata(1, 0))).rejects.toThrow(TypeError);
		await expect(batches.uploadBatchFile([], 'pseo-generation-1-part-1.jsonl')).rejects.toThrow(TypeError);
		expect(creates()).toEqual([]);
		expect(uploads()).toHaveLength(2);
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

describe('Gemini batches of inline requests, made before the Files API was used', () => {
	it('are found by their display name, read from the batch, and deleted with their results; their spooled input is gone', async () => {
		const client = new GoogleGenAI({ apiKey: API_KEY, vertexai: false, apiVersion: 'v1beta', httpOptions: { baseUrl: root() } });
		const src = ['/a', '/b'].map((route) => {
			const { contents, config } = generateParams(16_000, pageRequest(route));
			return { contents, config, metadata: { key: route } };
		});
		const made = await client.batches.create({ model: MODEL, src, config: { displayName: `${encodeTag(partMetadata(70, 0))}part` } });
		const batches = provider();
		const found = await batches.findBatchByMetadata('pseo_generation_part', '70:0');
		expect(found).toMatchObject({ id: made.name, inputFileId: null, metadata: { pseo_generation_id: '70' } });
		const ended = await untilFinal(batches, made.name!);
		expect(ended).toMatchObject({ status: 'completed', outputFileId: `results:${made.name}`, requestCounts: { total: 2, completed: 2, failed: 0 } });
		// Read from the retrieve that found the batch ended: not downloaded again.
		const gets = () => fake.requests.filter((entry) => entry.method === 'GET' && entry.path === `/v1beta/${made.name}`).length;
		const before = gets();
		const results = await linesOf(batches, ended.outputFileId!);
		expect(gets()).toBe(before);
		expect(results.map((result) => [result.customId, result.ok])).toEqual([
			['/b', true],
			['/a', true],
		]);
		await batches.deleteFile(ended.outputFileId!);
		expect(await held('batches')).toEqual([]);
		// The part's input was a local spool, which its create removed.
		await batches.deleteFile('spool:/tmp/pseo-batch-gone/input.jsonl');
	});
});
