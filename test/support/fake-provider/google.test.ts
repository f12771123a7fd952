import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApiError, FinishReason, GoogleGenAI, JobState } from '@google/genai';
import type { BatchJob, File as GoogleFile, GenerateContentParameters, InlinedRequest } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { validateJsonSchema } from './json-schema.ts';
import type { JsonSchema } from './json-schema.ts';
import { startFakeProvider } from './server.ts';
import type { FakeProvider } from './server.ts';

const strictObject = (properties: Record<string, JsonSchema>): JsonSchema => ({
	type: 'object',
	additionalProperties: false,
	required: Object.keys(properties),
	properties,
});

const PAGE_SCHEMA = strictObject({
	title: { type: 'string' },
	meta_title: { type: 'string' },
	meta_description: { type: 'string' },
	h1: { type: 'string' },
	body_markdown: { type: 'string' },
	faq: { type: 'array', items: strictObject({ question: { type: 'string' }, answer: { type: 'string' } }) },
	internal_links: { type: 'array', items: strictObject({ anchor: { type: 'string' }, route: { type: 'string' } }) },
});

const MODEL = 'gemini-2.5-flash';
const SYSTEM = 'You write pages for a website. Answer with the JSON the schema asks for.';

function pageContext(route: string): Record<string, unknown> {
	return { task: 'page', route, title: `Page ${route}`, primary_keyword: 'emergency plumber', language: 'en-GB' };
}

/** The call the product makes: the system instruction apart, the prompt context fenced in the last user turn. */
function pageParams(route: string): GenerateContentParameters {
	return {
		model: MODEL,
		contents: [{ role: 'user', parts: [{ text: `Write the page described below.\n\n\`\`\`json\n${JSON.stringify(pageContext(route), null, 2)}\n\`\`\`` }] }],
		config: { systemInstruction: SYSTEM, responseMimeType: 'application/json', responseJsonSchema: PAGE_SCHEMA },
	};
}

let fake: FakeProvider;
let ai: GoogleGenAI;

/** The fake's root: the Gemini SDK adds `/v1beta/...` to its base URL itself. */
function rootUrl(): string {
	return fake.url.replace(/\/v1$/, '');
}

function client(apiKey: string): GoogleGenAI {
	// vertexai and apiVersion are pinned so that no GOOGLE_GENAI_* variable of the environment redirects the calls.
	return new GoogleGenAI({ apiKey, vertexai: false, apiVersion: 'v1beta', httpOptions: { baseUrl: rootUrl() } });
}

beforeAll(async () => {
	fake = await startFakeProvider();
	ai = client('test-key');
});

afterAll(async () => {
	await fake.close();
});

beforeEach(() => {
	fake.reset();
});

async function caught(promise: Promise<unknown>): Promise<unknown> {
	return promise.then(
		() => null,
		(error: unknown) => error,
	);
}

/** The JSON body of an SDK error: the SDK puts the whole error response, serialised, in its message. */
function errorBody(error: unknown): { error: { code: number; message: string; status: string; details?: unknown[] } } {
	expect(error).toBeInstanceOf(ApiError);
	return JSON.parse((error as ApiError).message) as never;
}

describe('POST /v1beta/models/{model}:generateContent', () => {
	it('answers a page request with text that parses and validates against responseJsonSchema', async () => {
		const response = await ai.models.generateContent(pageParams('/plumbing/emergency-plumber'));
		expect(response.candidates).toHaveLength(1);
		expect(response.candidates?.[0]).toMatchObject({ finishReason: FinishReason.STOP, index: 0, content: { role: 'model' } });
		expect(response.modelVersion).toBe(MODEL);
		const value = JSON.parse(response.text ?? '') as Record<string, unknown>;
		expect(validateJsonSchema(PAGE_SCHEMA, value)).toEqual([]);
		expect(value.title).not.toBe('');
		expect(fake.requests.at(-1)).toMatchObject({
			method: 'POST',
			path: `/v1beta/models/${MODEL}:generateContent`,
			task: 'page',
			route: '/plumbing/emergency-plumber',
			apiKey: 'test-key',
			status: 200,
		});
		// The key travels in its own header, which the log keeps as the key and not among the extra headers.
		expect(fake.requests.at(-1)?.extraHeaders).not.toHaveProperty('x-goog-api-key');
	});

	it('takes a schema given as responseSchema, which the SDK rewrites into Google\'s subset without additionalProperties', async () => {
		const params = pageParams('/response-schema');
		params.config = { systemInstruction: SYSTEM, responseMimeType: 'application/json', responseSchema: PAGE_SCHEMA };
		const response = await ai.models.generateContent(params);
		const value = JSON.parse(response.text ?? '') as Record<string, unknown>;
		// Every required field is there, but `additionalProperties: false` was lost on the way, so extra fields pass.
		expect(Object.keys(value)).toEqual(expect.arrayContaining(['title', 'meta_title', 'meta_description', 'h1', 'body_markdown', 'faq', 'internal_links']));
		const problems = validateJsonSchema(PAGE_SCHEMA, value);
		expect(problems.length).toBeGreaterThan(0);
		expect(problems.every((problem) => problem.includes('unexpected property'))).toBe(true);
	});

	it('reports usage, and the log records it and counts the call as a chat call', async () => {
		const response = await ai.models.generateContent(pageParams('/usage'));
		const usage = response.usageMetadata;
		expect(usage?.promptTokenCount).toBeGreaterThan(0);
		expect(usage?.candidatesTokenCount).toBeGreaterThan(0);
		expect(usage?.totalTokenCount).toBe((usage?.promptTokenCount ?? 0) + (usage?.candidatesTokenCount ?? 0));
		expect(fake.requests.at(-1)?.usage).toEqual({ prompt_tokens: usage?.promptTokenCount, completion_tokens: usage?.candidatesTokenCount });
		expect(fake.countChat()).toBe(1);
		expect(fake.countChat('/usage')).toBe(1);
		expect(fake.countChat('/other')).toBe(0);
	});

	it('sees the system instruction and model turns as the prompt the responders read', async () => {
		fake.configure({ responders: { page: ({ messages }) => ({ seen: messages.map((message) => message.role) }) } });
		const params = pageParams('/turns');
		params.contents = [
			{ role: 'user', parts: [{ text: 'First question' }] },
			{ role: 'model', parts: [{ text: 'First answer' }] },
			...(params.contents as object[]),
		] as GenerateContentParameters['contents'];
		params.config = { systemInstruction: SYSTEM, responseMimeType: 'application/json' };
		const response = await ai.models.generateContent(params);
		expect(JSON.parse(response.text ?? '')).toEqual({ seen: ['system', 'user', 'assistant', 'user'] });
	});

	it('refuses a call without a key with 403 PERMISSION_DENIED, in Google\'s error shape', async () => {
		const error = await caught(client('').models.generateContent(pageParams('/no-key')));
		expect((error as ApiError).status).toBe(403);
		expect(errorBody(error).error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
		expect(fake.requests.at(-1)).toMatchObject({ path: `/v1beta/models/${MODEL}:generateContent`, apiKey: null, status: 403 });
		expect(fake.countChat()).toBe(1);
	});

	it('takes the key from the key query parameter too, as the Gemini API does', async () => {
		const body = { contents: [{ role: 'user', parts: [{ text: `\`\`\`json\n${JSON.stringify(pageContext('/query-key'))}\n\`\`\`` }] }] };
		const response = await fetch(`${rootUrl()}/v1beta/models/${MODEL}:generateContent?key=query-key`, { method: 'POST', body: JSON.stringify(body) });
		expect(response.status).toBe(200);
		expect(fake.requests.at(-1)).toMatchObject({ route: '/query-key', apiKey: 'query-key', status: 200 });
	});

	it('answers 429 RESOURCE_EXHAUSTED with retry-after and a RetryInfo detail, then answers again', async () => {
		fake.configure({ rateLimit: { count: 1, retryAfterS: 7 } });
		const error = await caught(ai.models.generateContent(pageParams('/limited')));
		expect((error as ApiError).status).toBe(429);
		expect(errorBody(error).error).toMatchObject({
			code: 429,
			status: 'RESOURCE_EXHAUSTED',
			details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }],
		});
		expect(fake.requests.at(-1)).toMatchObject({ route: '/limited', status: 429 });
		await expect(ai.models.generateContent(pageParams('/limited'))).resolves.toMatchObject({ candidates: [{ finishReason: FinishReason.STOP }] });
		expect(fake.countChat('/limited')).toBe(2);
	});

	it('answers 5xx server errors as INTERNAL and UNAVAILABLE', async () => {
		fake.configure({ serverErrors: { count: 2, status: 503 } });
		const first = await caught(ai.models.generateContent(pageParams('/down')));
		expect(errorBody(first).error).toMatchObject({ code: 503, status: 'UNAVAILABLE' });
		fake.configure({ serverErrors: { count: 1, status: 500 } });
		const second = await caught(ai.models.generateContent(pageParams('/down')));
		expect(errorBody(second).error).toMatchObject({ code: 500, status: 'INTERNAL' });
	});

	it('refuses a route with finishReason SAFETY and no text', async () => {
		fake.configure({ failRoutes: { '/refused': 'refusal' } });
		const response = await ai.models.generateContent(pageParams('/refused'));
		expect(response.candidates?.[0]?.finishReason).toBe(FinishReason.SAFETY);
		expect(response.candidates?.[0]?.content).toBeUndefined();
		expect(response.text).toBeUndefined();
	});

	it('answers a malformed route with text that is not JSON, then answers well once failRoutesTimes is used up', async () => {
		fake.configure({ failRoutes: { '/malformed': 'malformed' }, failRoutesTimes: 1 });
		const bad = await ai.models.generateContent(pageParams('/malformed'));
		expect(bad.candidates?.[0]?.finishReason).toBe(FinishReason.STOP);
		expect(() => JSON.parse(bad.text ?? '')).toThrow(SyntaxError);
		const good = await ai.models.generateContent(pageParams('/malformed'));
		expect(validateJsonSchema(PAGE_SCHEMA, JSON.parse(good.text ?? ''))).toEqual([]);
	});

	it('answers an error route with 500 INTERNAL and an invalid route with blank fields', async () => {
		fake.configure({ failRoutes: { '/error': 'error', '/invalid': 'invalid' } });
		const error = await caught(ai.models.generateContent(pageParams('/error')));
		expect(errorBody(error).error).toMatchObject({ code: 500, status: 'INTERNAL' });
		const invalid = await ai.models.generateContent(pageParams('/invalid'));
		expect(JSON.parse(invalid.text ?? '')).toMatchObject({ title: '', body_markdown: '', faq: [] });
	});

	it('fails plan calls with planFail and a task with chatErrorsForTask', async () => {
		fake.configure({ planFail: true, chatErrorsForTask: { page: { status: 400, count: 1 } } });
		const params = pageParams('/plan');
		params.contents = [{ role: 'user', parts: [{ text: `\`\`\`json\n${JSON.stringify({ task: 'plan_pages' })}\n\`\`\`` }] }];
		expect(errorBody(await caught(ai.models.generateContent(params))).error).toMatchObject({ code: 500, status: 'INTERNAL' });
		const forced = await caught(ai.models.generateContent(pageParams('/forced')));
		expect(errorBody(forced).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: 'Forced 400 for task page.' });
		await expect(ai.models.generateContent(pageParams('/forced'))).resolves.toMatchObject({ candidates: [{ finishReason: FinishReason.STOP }] });
	});

	it('holds calls until releaseChat, and lets a client that gives up on a hang go', async () => {
		fake.configure({ holdChat: true });
		const held = ai.models.generateContent(pageParams('/held'));
		await expect.poll(() => fake.heldChat()).toBe(1);
		expect(fake.releaseChat()).toBe(1);
		await expect(held).resolves.toMatchObject({ candidates: [{ finishReason: FinishReason.STOP }] });
		fake.configure({ holdChat: false, hangChat: true });
		const controller = new AbortController();
		const hung = caught(ai.models.generateContent({ ...pageParams('/hung'), config: { ...pageParams('/hung').config, abortSignal: controller.signal } }));
		await expect.poll(() => fake.countChat('/hung')).toBe(1);
		controller.abort();
		expect(await hung).toMatchObject({ name: 'AbortError' });
		expect(fake.requests.at(-1)).toMatchObject({ route: '/hung', status: null });
	});

	it('waits latencyMs before answering', async () => {
		fake.configure({ latencyMs: 150 });
		const started = performance.now();
		await ai.models.generateContent(pageParams('/slow'));
		expect(performance.now() - started).toBeGreaterThanOrEqual(140);
	});

	it('rejects a schema without responseMimeType application/json, and an unknown role, as INVALID_ARGUMENT', async () => {
		const params = pageParams('/bad-mime');
		params.config = { responseJsonSchema: PAGE_SCHEMA };
		const error = await caught(ai.models.generateContent(params));
		expect(errorBody(error).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
		const roles = pageParams('/bad-role');
		roles.contents = [{ role: 'assistant', parts: [{ text: 'hello' }] }];
		expect(errorBody(await caught(ai.models.generateContent(roles))).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
	});

	it('answers an unknown /v1beta path with 404 NOT_FOUND in Google\'s shape', async () => {
		const response = await fetch(`${rootUrl()}/v1beta/models/${MODEL}:countTokens`, { method: 'POST', headers: { 'x-goog-api-key': 'test-key' }, body: '{}' });
		expect(response.status).toBe(404);
		expect(((await response.json()) as { error: unknown }).error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
	});
});

/** A batch request for a page, as the product would send it, with its route as the metadata key. */
function inlinedPage(route: string, key: string): InlinedRequest {
	return {
		contents: [{ role: 'user', parts: [{ text: `Write the page described below.\n\n\`\`\`json\n${JSON.stringify(pageContext(route))}\n\`\`\`` }] }],
		config: { systemInstruction: SYSTEM, responseMimeType: 'application/json', responseJsonSchema: PAGE_SCHEMA },
		metadata: { key },
	};
}

/** `count` page requests keyed p0, p1, ... for routes /page-0, /page-1, ... */
function inlinedPages(count: number): InlinedRequest[] {
	return Array.from({ length: count }, (_, index) => inlinedPage(`/page-${index}`, `p${index}`));
}

async function createBatch(src: InlinedRequest[], displayName = 'g1_p0_s0_e2_rn__part'): Promise<BatchJob> {
	return ai.batches.create({ model: MODEL, src, config: { displayName } });
}

/** The raw Operation of a batch, for what the SDK does not map (batchStats, the Operation's error, done). */
async function rawOperation(name: string): Promise<{ status: number; body: Record<string, unknown> & { metadata: Record<string, unknown> } }> {
	const response = await fetch(`${rootUrl()}/v1beta/${name}`, { headers: { 'x-goog-api-key': 'test-key' } });
	return { status: response.status, body: (await response.json()) as never };
}

function keysOf(job: BatchJob): (string | undefined)[] {
	return (job.dest?.inlinedResponses ?? []).map((entry) => entry.metadata?.key);
}

describe('Gemini Batch API (inline requests)', () => {
	it('creates a PENDING batch with the display name, and logs its keys, routes and display name', async () => {
		const job = await createBatch([inlinedPage('/a', 'p0'), inlinedPage('/b', 'p1')]);
		expect(job.state).toBe(JobState.JOB_STATE_PENDING);
		expect(job.displayName).toBe('g1_p0_s0_e2_rn__part');
		expect(job.name).toMatch(/^batches\/[a-z0-9]+$/);
		expect(job.model).toBe(`models/${MODEL}`);
		expect(Number.isNaN(Date.parse(job.createTime ?? ''))).toBe(false);
		expect(job.dest).toBeUndefined();
		const id = (job.name ?? '').replace('batches/', '');
		expect(fake.requests.at(-1)).toMatchObject({
			method: 'POST',
			path: `/v1beta/models/${MODEL}:batchGenerateContent`,
			status: 200,
			apiKey: 'test-key',
			batchId: id,
			customIds: ['p0', 'p1'],
			routes: ['/a', '/b'],
			metadata: { display_name: 'g1_p0_s0_e2_rn__part' },
		});
		expect(fake.countBatchesCreated()).toBe(1);
		expect(fake.countBatchedRoute('/b')).toBe(1);
		// A batch's requests are not chat calls.
		expect(fake.countChat()).toBe(0);
		const raw = await rawOperation(job.name ?? '');
		expect(raw.body).toMatchObject({
			name: job.name,
			metadata: {
				'@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch',
				name: job.name,
				batchStats: { requestCount: '2', pendingRequestCount: '2' },
				state: 'BATCH_STATE_RUNNING',
			},
		});
		expect(raw.body).not.toHaveProperty('done');
	});

	it('runs, then succeeds with one inline response per request, an invalid request ending as an error entry', async () => {
		const invalid: InlinedRequest = { ...inlinedPage('/bad', 'p2'), config: { responseJsonSchema: PAGE_SCHEMA } };
		const job = await createBatch([inlinedPage('/a', 'p0'), inlinedPage('/b', 'p1'), invalid]);
		const running = await ai.batches.get({ name: job.name ?? '' });
		expect(running.state).toBe(JobState.JOB_STATE_RUNNING);
		expect(running.dest).toBeUndefined();
		const done = await ai.batches.get({ name: job.name ?? '' });
		expect(done.state).toBe(JobState.JOB_STATE_SUCCEEDED);
		expect(Number.isNaN(Date.parse(done.endTime ?? ''))).toBe(false);
		const entries = done.dest?.inlinedResponses ?? [];
		// batchOutputOrder defaults to reversed.
		expect(keysOf(done)).toEqual(['p2', 'p1', 'p0']);
		for (const entry of entries.slice(1)) {
			const candidate = entry.response?.candidates?.[0];
			expect(candidate?.finishReason).toBe(FinishReason.STOP);
			const value = JSON.parse(candidate?.content?.parts?.[0]?.text ?? '') as Record<string, unknown>;
			expect(validateJsonSchema(PAGE_SCHEMA, value)).toEqual([]);
			expect(entry.response?.usageMetadata?.promptTokenCount).toBeGreaterThan(0);
			expect(entry.response?.usageMetadata?.candidatesTokenCount).toBeGreaterThan(0);
			expect(entry.error).toBeUndefined();
		}
		expect(entries[0]?.response).toBeUndefined();
		expect(entries[0]?.error).toMatchObject({ code: 3, message: expect.stringContaining('response_mime_type') });
		const raw = await rawOperation(job.name ?? '');
		expect(raw.body).toMatchObject({
			done: true,
			metadata: {
				state: 'BATCH_STATE_SUCCEEDED',
				batchStats: { requestCount: '3', successfulRequestCount: '2', failedRequestCount: '1', pendingRequestCount: '0' },
			},
		});
		expect(raw.body).not.toHaveProperty('error');
	});

	it('answers in input order with batchOutputOrder input, takes batchStepsPerPoll steps, and fails a route or key named in failRoutes', async () => {
		fake.configure({ batchOutputOrder: 'input', batchStepsPerPoll: 2, failRoutes: { '/page-1': 'error', p2: 'refusal' } });
		const job = await createBatch(inlinedPages(4));
		const done = await ai.batches.get({ name: job.name ?? '' });
		expect(done.state).toBe(JobState.JOB_STATE_SUCCEEDED);
		expect(keysOf(done)).toEqual(['p0', 'p1', 'p2', 'p3']);
		const entries = done.dest?.inlinedResponses ?? [];
		expect(entries[1]?.error).toMatchObject({ code: 13 });
		expect(entries[2]?.response?.candidates?.[0]?.finishReason).toBe(FinishReason.SAFETY);
		// An inline response is a plain object, not a GenerateContentResponse: it has no `text` getter.
		expect(entries[3]?.response?.text).toBeUndefined();
		expect(validateJsonSchema(PAGE_SCHEMA, JSON.parse(entries[3]?.response?.candidates?.[0]?.content?.parts?.[0]?.text ?? ''))).toEqual([]);
	});

	it('lists batches newest first, page by page through the Pager, without advancing them', async () => {
		const names: string[] = [];
		for (let i = 0; i < 5; i++) names.push((await createBatch([inlinedPage(`/l${i}`, `p${i}`)], `batch-${i}`)).name ?? '');
		const pager = await ai.batches.list({ config: { pageSize: 2 } });
		expect(pager.page.map((job) => job.name)).toEqual([names[4], names[3]]);
		expect(pager.hasNextPage()).toBe(true);
		const seen: (string | undefined)[] = [];
		for await (const job of pager) seen.push(job.name);
		expect(seen).toEqual([...names].reverse());
		expect(pager.hasNextPage()).toBe(false);
		expect(fake.requests.filter((entry) => entry.path === '/v1beta/batches')).toHaveLength(3);
		const raw = await rawOperation(names[0] ?? '');
		// Listing moved nothing: this get is the batch's first step.
		expect(raw.body.metadata.state).toBe('BATCH_STATE_RUNNING');
		const last = await fetch(`${rootUrl()}/v1beta/batches?pageSize=10`, { headers: { 'x-goog-api-key': 'test-key' } });
		const lastBody = (await last.json()) as { operations: unknown[]; nextPageToken?: string };
		expect(lastBody.operations).toHaveLength(5);
		expect(lastBody).not.toHaveProperty('nextPageToken');
		for (const bad of ['0', '1001', 'x']) {
			const response = await fetch(`${rootUrl()}/v1beta/batches?pageSize=${bad}`, { headers: { 'x-goog-api-key': 'test-key' } });
			expect(response.status).toBe(400);
			expect(((await response.json()) as { error: unknown }).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
		}
		const badToken = await fetch(`${rootUrl()}/v1beta/batches?pageToken=nonsense`, { headers: { 'x-goog-api-key': 'test-key' } });
		expect(badToken.status).toBe(400);
	});

	it('cancels a running batch: it ends CANCELLED with the first batchPartialFraction answered, and cannot be cancelled again', async () => {
		fake.configure({ holdBatches: true, batchOutputOrder: 'input' });
		const job = await createBatch(inlinedPages(4));
		const name = job.name ?? '';
		expect((await ai.batches.get({ name })).state).toBe(JobState.JOB_STATE_RUNNING);
		// Held: it stays RUNNING.
		expect((await ai.batches.get({ name })).state).toBe(JobState.JOB_STATE_RUNNING);
		await ai.batches.cancel({ name });
		expect(fake.requests.at(-1)).toMatchObject({ method: 'POST', path: `/v1beta/${name}:cancel`, status: 200 });
		const cancelled = await ai.batches.get({ name });
		expect(cancelled.state).toBe(JobState.JOB_STATE_CANCELLED);
		expect(keysOf(cancelled)).toEqual(['p0', 'p1']);
		expect((await rawOperation(name)).body.metadata.batchStats).toEqual({
			requestCount: '4',
			successfulRequestCount: '2',
			failedRequestCount: '0',
			pendingRequestCount: '2',
		});
		const again = await caught(ai.batches.cancel({ name }));
		expect((again as ApiError).status).toBe(400);
		expect(errorBody(again).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: 'Batch is already in a terminal state.' });
		const unknown = await caught(ai.batches.cancel({ name: 'batches/nosuchbatch' }));
		expect(errorBody(unknown).error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
	});

	it('cancels a PENDING batch at its next step, with no output when batchPartialFraction is 0', async () => {
		fake.configure({ batchPartialFraction: 0 });
		const job = await createBatch(inlinedPages(2));
		await ai.batches.cancel({ name: job.name ?? '' });
		const cancelled = await ai.batches.get({ name: job.name ?? '' });
		expect(cancelled.state).toBe(JobState.JOB_STATE_CANCELLED);
		expect(cancelled.dest).toBeUndefined();
		expect((await rawOperation(job.name ?? '')).body).not.toHaveProperty('metadata.output');
	});

	it('ends EXPIRED with partial output when batchEndState is expired', async () => {
		fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.25, batchOutputOrder: 'input' });
		const job = await createBatch(inlinedPages(4));
		await ai.batches.get({ name: job.name ?? '' });
		const expired = await ai.batches.get({ name: job.name ?? '' });
		expect(expired.state).toBe(JobState.JOB_STATE_EXPIRED);
		expect(keysOf(expired)).toEqual(['p0']);
	});

	it('ends FAILED with the Operation error and no output when batchEndState is failed', async () => {
		fake.configure({ batchEndState: 'failed', batchStepsPerPoll: 5 });
		const job = await createBatch(inlinedPages(3));
		const failed = await ai.batches.get({ name: job.name ?? '' });
		expect(failed.state).toBe(JobState.JOB_STATE_FAILED);
		expect(failed.dest).toBeUndefined();
		// The SDK does not map the Operation's error onto the BatchJob; the wire carries it.
		expect(failed.error).toBeUndefined();
		const raw = await rawOperation(job.name ?? '');
		expect(raw.body).toMatchObject({ done: true, error: { code: 13, message: 'Internal error encountered.' }, metadata: { state: 'BATCH_STATE_FAILED' } });
		expect(raw.body.metadata).not.toHaveProperty('output');
	});

	it('deletes an ended batch, after which it is a 404; refuses to delete a running one', async () => {
		fake.configure({ holdBatches: true });
		const job = await createBatch(inlinedPages(2));
		const name = job.name ?? '';
		await ai.batches.get({ name });
		const refused = await caught(ai.batches.delete({ name }));
		expect((refused as ApiError).status).toBe(400);
		expect(errorBody(refused).error).toMatchObject({ code: 400, message: 'Cannot delete a batch that is still running; cancel it first.' });
		fake.releaseBatches();
		expect((await ai.batches.get({ name })).state).toBe(JobState.JOB_STATE_SUCCEEDED);
		await ai.batches.delete({ name });
		expect(fake.requests.at(-1)).toMatchObject({ method: 'DELETE', path: `/v1beta/${name}`, status: 200 });
		const gone = await caught(ai.batches.get({ name }));
		expect(gone).toBeInstanceOf(ApiError);
		expect((gone as ApiError).status).toBe(404);
		expect(errorBody(gone).error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
		expect((await caught(ai.batches.delete({ name })) as ApiError).status).toBe(404);
		expect((await ai.batches.list()).page).toEqual([]);
	});

	it('lets /_fake/release-batches release a held batch, counting it', async () => {
		fake.configure({ holdBatches: true });
		const job = await createBatch(inlinedPages(1));
		await ai.batches.get({ name: job.name ?? '' });
		const released = (await (await fetch(`${rootUrl()}/_fake/release-batches`, { method: 'POST' })).json()) as { released: number };
		expect(released.released).toBe(1);
		expect((await ai.batches.get({ name: job.name ?? '' })).state).toBe(JobState.JOB_STATE_SUCCEEDED);
	});

	it('refuses creates with refuseBatchCreates, holds them with holdBatchCreates, and forgets batches on reset', async () => {
		fake.configure({ refuseBatchCreates: 429 });
		const refused = await caught(createBatch(inlinedPages(1)));
		expect((refused as ApiError).status).toBe(429);
		expect(errorBody(refused).error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
		expect(fake.countBatchesCreated()).toBe(0);
		expect((await ai.batches.list()).page).toEqual([]);
		fake.configure({ refuseBatchCreates: null, holdBatchCreates: true });
		const held = createBatch(inlinedPages(1));
		await expect.poll(() => fake.heldBatchCreates()).toBe(1);
		expect(fake.releaseBatchCreates()).toBe(1);
		const job = await held;
		expect(job.state).toBe(JobState.JOB_STATE_PENDING);
		fake.reset();
		expect((await caught(ai.batches.get({ name: job.name ?? '' })) as ApiError).status).toBe(404);
	});

	it('refuses calls without a key with 403 PERMISSION_DENIED', async () => {
		const job = await createBatch(inlinedPages(1));
		const noKey = client('');
		const create = await caught(noKey.batches.create({ model: MODEL, src: inlinedPages(1) }));
		expect((create as ApiError).status).toBe(403);
		expect(errorBody(create).error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
		expect((await caught(noKey.batches.get({ name: job.name ?? '' })) as ApiError).status).toBe(403);
		expect((await caught(noKey.batches.list()) as ApiError).status).toBe(403);
		expect(fake.countBatchesCreated()).toBe(1);
	});

	it('refuses an empty batch, and a body over the 20 MB inline limit with 400', async () => {
		const empty = await caught(ai.batches.create({ model: MODEL, src: [] }));
		expect((empty as ApiError).status).toBe(400);
		const padding = 'x'.repeat(20 * 1024 * 1024);
		const body = JSON.stringify({ batch: { inputConfig: { requests: { requests: [{ request: { contents: [{ parts: [{ text: padding }] }] } }] } } } });
		const response = await fetch(`${rootUrl()}/v1beta/models/${MODEL}:batchGenerateContent`, { method: 'POST', headers: { 'x-goog-api-key': 'test-key' }, body });
		expect(response.status).toBe(400);
		expect(((await response.json()) as { error: unknown }).error).toMatchObject({
			code: 400,
			status: 'INVALID_ARGUMENT',
			message: 'Request payload size exceeds the limit: 20971520 bytes.',
		});
		expect(fake.countBatchesCreated()).toBe(0);
	});
});

/** A JSONL input file of page requests in Google's batch format, `{ key, request }` a line, at a temporary path. */
function inputFile(routes: string[], extra: string[] = []): string {
	const lines = routes.map((route, index) => {
		const { contents, systemInstruction, ...generationConfig } = inlinedPage(route, `p${index}`).config as Record<string, unknown>;
		void contents;
		return JSON.stringify({
			key: `p${index}`,
			request: { contents: inlinedPage(route, `p${index}`).contents, systemInstruction: { parts: [{ text: systemInstruction }] }, generationConfig },
		});
	});
	const dir = mkdtempSync(path.join(os.tmpdir(), 'fake-google-files-'));
	temporary.push(dir);
	const file = path.join(dir, 'requests.jsonl');
	writeFileSync(file, [...lines, ...extra].map((line) => `${line}\n`).join(''));
	return file;
}

const temporary: string[] = [];
afterAll(() => {
	for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

async function upload(file: string | Blob, displayName = 'pseo-generation-1-part-0.jsonl'): Promise<GoogleFile> {
	return ai.files.upload({ file, config: { mimeType: 'application/jsonl', displayName } });
}

/** The lines of a file, downloaded by the SDK's `files.download` (which writes it to a path). */
async function downloaded(name: string): Promise<Record<string, unknown>[]> {
	const dir = mkdtempSync(path.join(os.tmpdir(), 'fake-google-download-'));
	temporary.push(dir);
	const target = path.join(dir, 'results.jsonl');
	await ai.files.download({ file: name, downloadPath: target });
	return readFileSync(target, 'utf8')
		.split('\n')
		.filter((line) => line !== '')
		.map((line) => JSON.parse(line) as Record<string, unknown>);
}

const uploadEntries = () => fake.requests.filter((entry) => entry.path === '/upload/v1beta/files');

describe('Gemini Files API', () => {
	it('takes the SDK\'s resumable upload: a start answered with the upload URL, then the bytes, finalized', async () => {
		const file = inputFile(['/a', '/b']);
		const size = statSync(file).size;
		const uploaded = await upload(file);
		expect(uploaded).toMatchObject({
			name: expect.stringMatching(/^files\/[a-z0-9]+$/),
			displayName: 'pseo-generation-1-part-0.jsonl',
			mimeType: 'application/jsonl',
			sizeBytes: String(size),
			state: 'ACTIVE',
			source: 'UPLOADED',
			uri: `${rootUrl()}/v1beta/${uploaded.name}`,
		});
		expect(uploaded).not.toHaveProperty('downloadUri');
		expect(Number.isNaN(Date.parse(uploaded.expirationTime ?? ''))).toBe(false);
		// The start declares the protocol, the size and the type; the bytes go in one request that finalizes.
		expect(uploadEntries().map((entry) => [entry.method, entry.status, entry.apiKey, entry.extraHeaders])).toEqual([
			[
				'POST',
				200,
				'test-key',
				expect.objectContaining({
					'x-goog-upload-protocol': 'resumable',
					'x-goog-upload-command': 'start',
					'x-goog-upload-header-content-length': String(size),
					'x-goog-upload-header-content-type': 'application/jsonl',
				}),
			],
			['POST', 200, 'test-key', expect.objectContaining({ 'x-goog-upload-command': 'upload, finalize', 'x-goog-upload-offset': '0' })],
		]);
		expect(uploadEntries()[1]?.fileId).toBe(uploaded.name);
		expect(await ai.files.get({ name: uploaded.name ?? '' })).toEqual(uploaded);
		// A Blob goes up the same way.
		const blob = await upload(new Blob([readFileSync(file)]), 'from-a-blob.jsonl');
		expect(blob).toMatchObject({ displayName: 'from-a-blob.jsonl', sizeBytes: String(size) });
	});

	it('lists files newest first, page by page through the Pager, and deletes them', async () => {
		const names: string[] = [];
		for (let i = 0; i < 3; i++) names.push((await upload(inputFile(['/a']), `file-${i}.jsonl`)).name ?? '');
		const pager = await ai.files.list({ config: { pageSize: 2 } });
		expect(pager.page.map((file) => file.name)).toEqual([names[2], names[1]]);
		const seen: (string | undefined)[] = [];
		for await (const file of pager) seen.push(file.name);
		expect(seen).toEqual([...names].reverse());
		expect(fake.requests.filter((entry) => entry.method === 'GET' && entry.path === '/v1beta/files')).toHaveLength(2);
		await ai.files.delete({ name: names[0] ?? '' });
		expect(fake.requests.at(-1)).toMatchObject({ method: 'DELETE', path: `/v1beta/${names[0]}`, status: 200, fileId: names[0] });
		expect(errorBody(await caught(ai.files.get({ name: names[0] ?? '' }))).error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
		expect((await caught(ai.files.delete({ name: names[0] ?? '' })) as ApiError).status).toBe(404);
		// refuseFileDeletes refuses as for a key that may not delete; reset forgets every file.
		fake.configure({ refuseFileDeletes: true });
		expect(errorBody(await caught(ai.files.delete({ name: names[1] ?? '' }))).error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
		fake.reset();
		expect((await ai.files.list()).page).toEqual([]);
	});

	it('refuses an upload sent at the wrong offset, of another size than declared, to an unknown session, or not resumable', async () => {
		const start = (headers: Record<string, string>) =>
			fetch(`${rootUrl()}/upload/v1beta/files`, {
				method: 'POST',
				headers: { 'x-goog-api-key': 'test-key', 'content-type': 'application/json', ...headers },
				body: JSON.stringify({ file: { displayName: 'raw.jsonl' } }),
			});
		const multipart = await start({ 'x-goog-upload-protocol': 'multipart' });
		expect(multipart.status).toBe(400);
		expect(((await multipart.json()) as { error: unknown }).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
		const started = await start({
			'x-goog-upload-protocol': 'resumable',
			'x-goog-upload-command': 'start',
			'x-goog-upload-header-content-length': '10',
			'x-goog-upload-header-content-type': 'application/jsonl',
		});
		expect(started.status).toBe(200);
		expect(started.headers.get('x-goog-upload-status')).toBe('active');
		const url = started.headers.get('x-goog-upload-url') ?? '';
		expect(url).toMatch(/\/upload\/v1beta\/files\?upload_id=[^&]+&upload_protocol=resumable$/);
		const send = (target: string, command: string, offset: number, body: string) =>
			fetch(target, { method: 'POST', headers: { 'x-goog-api-key': 'test-key', 'x-goog-upload-command': command, 'x-goog-upload-offset': String(offset) }, body });
		const first = await send(url, 'upload', 0, '{"a":');
		expect([first.status, first.headers.get('x-goog-upload-status')]).toEqual([200, 'active']);
		expect((await send(url, 'upload', 0, '1}\n')).status).toBe(400);
		expect((await send(url, 'upload, finalize', 5, '1}\n')).status).toBe(400);
		const last = await send(url, 'upload, finalize', 5, '1}\n\n\n');
		expect([last.status, last.headers.get('x-goog-upload-status')]).toEqual([200, 'final']);
		expect(((await last.json()) as { file: GoogleFile }).file).toMatchObject({ displayName: 'raw.jsonl', sizeBytes: '10' });
		// Finalized: the session is gone.
		const again = await send(url, 'upload', 10, 'x');
		expect(again.status).toBe(404);
		expect(((await again.json()) as { error: unknown }).error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
	});
});

describe('Gemini Batch API (an uploaded input file)', () => {
	it('creates a batch of an uploaded file, logging its keys and routes, and ends with a results file in a non-input order', async () => {
		const input = await upload(inputFile(['/a', '/b'], [JSON.stringify({ key: 'p2', request: { contents: [] } })]));
		const job = await ai.batches.create({ model: MODEL, src: input.name ?? '', config: { displayName: 'g1_p0_s0_e3_rn__part' } });
		expect(job.state).toBe(JobState.JOB_STATE_PENDING);
		expect(fake.requests.at(-1)).toMatchObject({
			path: `/v1beta/models/${MODEL}:batchGenerateContent`,
			status: 200,
			customIds: ['p0', 'p1', 'p2'],
			routes: ['/a', '/b', null],
			fileId: input.name,
			metadata: { display_name: 'g1_p0_s0_e3_rn__part' },
		});
		expect(fake.countBatchedRoute('/a')).toBe(1);
		// The input is read at the create: deleting it leaves the batch whole.
		await ai.files.delete({ name: input.name ?? '' });
		await ai.batches.get({ name: job.name ?? '' });
		const done = await ai.batches.get({ name: job.name ?? '' });
		expect(done.state).toBe(JobState.JOB_STATE_SUCCEEDED);
		expect(done.dest?.inlinedResponses).toBeUndefined();
		const resultsFile = done.dest?.fileName ?? '';
		expect(resultsFile).toMatch(/^files\/batch-[a-z0-9]+$/);
		const raw = await rawOperation(job.name ?? '');
		expect(raw.body).toMatchObject({
			done: true,
			metadata: {
				inputConfig: { fileName: input.name },
				output: { responsesFile: resultsFile },
				batchStats: { requestCount: '3', successfulRequestCount: '2', failedRequestCount: '1', pendingRequestCount: '0' },
			},
			response: { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput', responsesFile: resultsFile },
		});
		expect(await ai.files.get({ name: resultsFile })).toMatchObject({ source: 'GENERATED', mimeType: 'application/jsonl', downloadUri: expect.stringContaining(':download?alt=media') });
		// One line per answer, `{ key, response }` or `{ key, error }`, reversed.
		const lines = await downloaded(resultsFile);
		expect(lines.map((line) => line['key'])).toEqual(['p2', 'p1', 'p0']);
		expect(lines[0]).toEqual({ key: 'p2', error: expect.objectContaining({ code: 3, status: 'INVALID_ARGUMENT' }) });
		for (const line of lines.slice(1)) {
			const response = line['response'] as { candidates: { content: { parts: { text: string }[] } }[]; usageMetadata: { promptTokenCount: number } };
			expect(validateJsonSchema(PAGE_SCHEMA, JSON.parse(response.candidates[0]!.content.parts[0]!.text))).toEqual([]);
			expect(response.usageMetadata.promptTokenCount).toBeGreaterThan(0);
		}
		// The SDK's download asks for /v1beta/{name}:download?alt=media.
		expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: `/v1beta/${resultsFile}:download`, status: 200, fileId: resultsFile });
		// Deleting the batch leaves its results file.
		await ai.batches.delete({ name: job.name ?? '' });
		expect((await ai.files.get({ name: resultsFile })).name).toBe(resultsFile);
	});

	it('serves the documented download address, holding it after holdFileAfterLines lines until releaseFiles', async () => {
		fake.configure({ batchOutputOrder: 'input' });
		const input = await upload(inputFile(['/a', '/b', '/c']));
		const job = await ai.batches.create({ model: MODEL, src: input.name ?? '' });
		await ai.batches.get({ name: job.name ?? '' });
		const resultsFile = (await ai.batches.get({ name: job.name ?? '' })).dest?.fileName ?? '';
		fake.configure({ holdFileAfterLines: 1 });
		const response = await fetch(`${rootUrl()}/download/v1beta/${resultsFile}:download?alt=media`, { headers: { 'x-goog-api-key': 'test-key' } });
		expect(response.status).toBe(200);
		const reader = response.body!.getReader();
		const first = new TextDecoder().decode((await reader.read()).value);
		expect(JSON.parse(first.trim())).toMatchObject({ key: 'p0' });
		await expect.poll(() => fake.heldFiles()).toBe(1);
		expect(fake.releaseFiles()).toBe(1);
		let rest = '';
		for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
		expect(rest.trim().split('\n').map((line) => (JSON.parse(line) as { key: string }).key)).toEqual(['p1', 'p2']);
	});

	it('refuses to download an uploaded file, or without alt=media', async () => {
		const input = await upload(inputFile(['/a']));
		const uploaded = await caught(ai.files.download({ file: input.name ?? '', downloadPath: path.join(os.tmpdir(), 'never-written.jsonl') }));
		expect(errorBody(uploaded).error).toMatchObject({ code: 400, message: expect.stringContaining('Only generated files') });
		const noMedia = await fetch(`${rootUrl()}/download/v1beta/${input.name}:download`, { headers: { 'x-goog-api-key': 'test-key' } });
		expect(noMedia.status).toBe(400);
	});

	it('ends EXPIRED with the first batchPartialFraction in its results file, and CANCELLED with none answered without one', async () => {
		fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.5, batchOutputOrder: 'input' });
		const expired = await ai.batches.create({ model: MODEL, src: (await upload(inputFile(['/a', '/b', '/c', '/d']))).name ?? '' });
		await ai.batches.get({ name: expired.name ?? '' });
		const ended = await ai.batches.get({ name: expired.name ?? '' });
		expect(ended.state).toBe(JobState.JOB_STATE_EXPIRED);
		expect((await downloaded(ended.dest?.fileName ?? '')).map((line) => line['key'])).toEqual(['p0', 'p1']);
		fake.configure({ batchPartialFraction: 0 });
		const cancelled = await ai.batches.create({ model: MODEL, src: (await upload(inputFile(['/a']))).name ?? '' });
		await ai.batches.cancel({ name: cancelled.name ?? '' });
		const stopped = await ai.batches.get({ name: cancelled.name ?? '' });
		expect(stopped.state).toBe(JobState.JOB_STATE_CANCELLED);
		expect(stopped.dest).toBeUndefined();
	});

	it('refuses a file that does not exist, or whose lines are not { key, request } objects, with 400', async () => {
		const missing = await caught(ai.batches.create({ model: MODEL, src: 'files/nosuchfile' }));
		expect(errorBody(missing).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining('does not exist') });
		for (const bad of ['not json', JSON.stringify({ request: {} }), JSON.stringify({ key: 'p9' })]) {
			const input = await upload(inputFile(['/a'], [bad]));
			const refused = await caught(ai.batches.create({ model: MODEL, src: input.name ?? '' }));
			expect(errorBody(refused).error).toMatchObject({ code: 400, message: expect.stringContaining('line 2') });
		}
		expect(fake.countBatchesCreated()).toBe(0);
	});
});
