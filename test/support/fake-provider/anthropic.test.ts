import Anthropic, { APIError, AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError, RateLimitError } from '@anthropic-ai/sdk';
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

const MODEL = 'claude-sonnet-5';
const SYSTEM = 'You write pages for a website. Answer with the JSON the schema asks for.';

function pageContext(route: string): Record<string, unknown> {
	return { task: 'page', route, title: `Page ${route}`, primary_keyword: 'emergency plumber', language: 'en-GB' };
}

/** The body the product sends: the system prompt apart, the prompt context fenced in the last user message. */
function pageParams(route: string): Anthropic.MessageCreateParamsNonStreaming {
	return {
		model: MODEL,
		max_tokens: 4096,
		system: SYSTEM,
		messages: [{ role: 'user', content: `Write the page described below.\n\n\`\`\`json\n${JSON.stringify(pageContext(route), null, 2)}\n\`\`\`` }],
		output_config: { format: { type: 'json_schema', schema: PAGE_SCHEMA as Record<string, unknown> } },
	};
}

let fake: FakeProvider;
let client: Anthropic;

/** The fake's root: the Anthropic SDK adds `/v1/...` to its base URL itself. */
function rootUrl(): string {
	return fake.url.replace(/\/v1$/, '');
}

beforeAll(async () => {
	fake = await startFakeProvider();
	client = new Anthropic({ apiKey: 'test-key', baseURL: rootUrl(), maxRetries: 0 });
});

afterAll(async () => {
	await fake.close();
});

beforeEach(() => {
	fake.reset();
});

function page(route: string) {
	return client.messages.create(pageParams(route));
}

function textOf(message: Anthropic.Message): string {
	const block = message.content[0];
	return block?.type === 'text' ? block.text : '';
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
	return promise.then(
		() => null,
		(error: unknown) => error,
	);
}

async function createBatch(routes: string[]) {
	return client.messages.batches.create({ requests: routes.map((route, index) => ({ custom_id: `page-${index}`, params: pageParams(route) })) });
}

async function retrieveUntilEnded(id: string) {
	const seen: string[] = [];
	for (let i = 0; i < 10; i++) {
		const batch = await client.messages.batches.retrieve(id);
		seen.push(batch.processing_status);
		if (batch.processing_status === 'ended') return { batch, seen };
	}
	throw new Error(`batch ${id} did not end: ${seen.join(' > ')}`);
}

async function resultsOf(id: string): Promise<Map<string, Anthropic.Messages.MessageBatchResult>> {
	const results = new Map<string, Anthropic.Messages.MessageBatchResult>();
	for await (const line of await client.messages.batches.results(id)) results.set(line.custom_id, line.result);
	return results;
}

describe('POST /v1/messages', () => {
	it('answers a page request with text that parses and validates against output_config.format.schema', async () => {
		const message = await page('/plumbing/emergency-plumber');
		expect(message).toMatchObject({ type: 'message', role: 'assistant', model: MODEL, stop_reason: 'end_turn', stop_sequence: null });
		expect(message.id).toMatch(/^msg_/);
		expect(message.content).toHaveLength(1);
		const value = JSON.parse(textOf(message)) as Record<string, unknown>;
		expect(validateJsonSchema(PAGE_SCHEMA, value)).toEqual([]);
		expect(value.title).not.toBe('');
		expect(fake.requests.at(-1)).toMatchObject({ path: '/v1/messages', task: 'page', route: '/plumbing/emergency-plumber', apiKey: 'test-key', status: 200 });
	});

	it('takes the key from x-api-key as well as from Authorization: Bearer, and logs it without echoing the header', async () => {
		const headerKey = new Anthropic({ apiKey: null, baseURL: rootUrl(), maxRetries: 0, defaultHeaders: { authorization: null, 'x-api-key': 'header-key' } });
		await expect(headerKey.messages.create(pageParams('/header-key'))).resolves.toMatchObject({ stop_reason: 'end_turn' });
		expect(fake.requests.at(-1)).toMatchObject({ route: '/header-key', apiKey: 'header-key', status: 200 });
		expect(fake.requests.at(-1)?.extraHeaders).not.toHaveProperty('x-api-key');
	});

	it('reports usage, and the log records it and counts the call as a chat call', async () => {
		const message = await page('/usage');
		expect(message.usage.input_tokens).toBeGreaterThan(10);
		expect(message.usage.output_tokens).toBeGreaterThan(10);
		expect(message.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
		expect(fake.requests.at(-1)?.usage).toEqual({ prompt_tokens: message.usage.input_tokens, completion_tokens: message.usage.output_tokens });
		expect(fake.countChat('/usage')).toBe(1);
	});

	it('answers plain text without output_config.format', async () => {
		const message = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'Which boiler should I buy?' }] });
		expect(textOf(message)).toContain('Which boiler should I buy?');
		expect(() => JSON.parse(textOf(message))).toThrow();
	});

	it('answers 401 authentication_error without x-api-key, which the SDK throws as AuthenticationError', async () => {
		const keyless = new Anthropic({ apiKey: null, baseURL: rootUrl(), maxRetries: 0, defaultHeaders: { authorization: null } });
		const error = await caught(keyless.messages.create(pageParams('/no-key')));
		expect(error).toBeInstanceOf(AuthenticationError);
		expect((error as AuthenticationError).error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
		expect(fake.requests.at(-1)).toMatchObject({ path: '/v1/messages', status: 401, apiKey: null });
	});

	it('rejects stream: true and a system role in messages with 400 invalid_request_error', async () => {
		const streamed = await caught(client.messages.create({ ...pageParams('/stream'), stream: true }));
		expect(streamed).toBeInstanceOf(BadRequestError);
		expect((streamed as BadRequestError).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
		const withSystemRole = await caught(
			client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'system' as 'user', content: SYSTEM }] }),
		);
		expect(withSystemRole).toBeInstanceOf(BadRequestError);
	});
});

describe('faults on /v1/messages', () => {
	it('rateLimit answers 429 rate_limit_error with retry-after, surfaced as RateLimitError, then recovers', async () => {
		fake.configure({ rateLimit: { count: 1, retryAfterS: 7 } });
		const error = await caught(page('/limited'));
		expect(error).toBeInstanceOf(RateLimitError);
		expect((error as RateLimitError).headers?.get('retry-after')).toBe('7');
		expect((error as RateLimitError).error).toMatchObject({ error: { type: 'rate_limit_error' } });
		await expect(page('/limited')).resolves.toMatchObject({ stop_reason: 'end_turn' });
	});

	it('serverErrors 529 and failRoutes error answer overloaded_error and api_error', async () => {
		fake.configure({ serverErrors: { count: 1, status: 529 }, failRoutes: { '/broken': 'error' } });
		const overloaded = await caught(page('/fine'));
		expect((overloaded as APIError).status).toBe(529);
		expect((overloaded as APIError).error).toMatchObject({ error: { type: 'overloaded_error' } });
		const broken = await caught(page('/broken'));
		expect((broken as APIError).status).toBe(500);
		expect((broken as APIError).error).toMatchObject({ error: { type: 'api_error' } });
	});

	it('failRoutes refusal ends with stop_reason refusal and no text', async () => {
		fake.configure({ failRoutes: { '/refused': 'refusal' } });
		const message = await page('/refused');
		expect(message.stop_reason).toBe('refusal');
		expect(message.content).toEqual([]);
	});

	it('failRoutes malformed answers text that is not JSON, and invalid answers JSON with an empty title and body', async () => {
		fake.configure({ failRoutes: { '/malformed': 'malformed', '/invalid': 'invalid' } });
		const malformed = textOf(await page('/malformed'));
		expect(malformed).not.toBe('');
		expect(() => JSON.parse(malformed)).toThrow(SyntaxError);
		expect(JSON.parse(textOf(await page('/invalid')))).toMatchObject({ title: '', body_markdown: '' });
	});

	it('failRoutesTimes fails only the first attempts, and chatErrorsForTask and planFail apply', async () => {
		fake.configure({ failRoutes: { '/flaky': 'error' }, failRoutesTimes: 1, chatErrorsForTask: { page: { status: 503, count: 1 } } });
		expect((await caught(page('/other'))) as APIError).toMatchObject({ status: 503 });
		expect((await caught(page('/flaky'))) as APIError).toMatchObject({ status: 500 });
		await expect(page('/flaky')).resolves.toMatchObject({ stop_reason: 'end_turn' });
		fake.configure({ planFail: true });
		const plan = await caught(
			client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: '```json\n{"task":"plan_clusters"}\n```' }] }),
		);
		expect((plan as APIError).status).toBe(500);
	});

	it('holdChat keeps message calls waiting until releaseChat(), and latencyMs delays them', async () => {
		fake.configure({ holdChat: true });
		const call = page('/held');
		while (fake.heldChat() < 1) await new Promise((resolve) => setTimeout(resolve, 10));
		expect(fake.requests.at(-1)).toMatchObject({ route: '/held', status: null });
		fake.configure({ holdChat: false, latencyMs: 100 });
		const started = performance.now();
		expect(fake.releaseChat()).toBe(1);
		await expect(call).resolves.toMatchObject({ stop_reason: 'end_turn' });
		expect(performance.now() - started).toBeGreaterThanOrEqual(90);
	});
});

describe('message batches', () => {
	it('creates a batch, ends it at a retrieve, and serves results matched by custom_id', async () => {
		const created = await createBatch(['/a', '/b', '/c']);
		expect(created).toMatchObject({ type: 'message_batch', processing_status: 'in_progress', results_url: null, ended_at: null, archived_at: null });
		expect(created.id).toMatch(/^msgbatch_/);
		expect(created.request_counts).toEqual({ processing: 3, succeeded: 0, errored: 0, canceled: 0, expired: 0 });
		expect(Date.parse(created.expires_at) - Date.parse(created.created_at)).toBe(24 * 3600 * 1000);
		const { batch } = await retrieveUntilEnded(created.id);
		expect(batch.request_counts).toEqual({ processing: 0, succeeded: 3, errored: 0, canceled: 0, expired: 0 });
		expect(batch.results_url).toBe(`${fake.url}/messages/batches/${created.id}/results`);
		expect(Number.isNaN(Date.parse(batch.ended_at ?? ''))).toBe(false);
		const results = await resultsOf(created.id);
		expect([...results.keys()].sort()).toEqual(['page-0', 'page-1', 'page-2']);
		const second = results.get('page-1');
		expect(second?.type).toBe('succeeded');
		if (second?.type !== 'succeeded') return;
		const value = JSON.parse(textOf(second.message)) as Record<string, unknown>;
		expect(validateJsonSchema(PAGE_SCHEMA, value)).toEqual([]);
		expect(fake.countBatchesCreated()).toBe(1);
		expect(fake.countBatchedRoute('/b')).toBe(1);
		expect(fake.requests.find((entry) => entry.path === '/v1/messages/batches')).toMatchObject({ batchId: created.id, customIds: ['page-0', 'page-1', 'page-2'] });
	});

	it('holdBatches keeps a batch in_progress; a cancel ends it with canceled results', async () => {
		fake.configure({ holdBatches: true, batchPartialFraction: 0 });
		const created = await createBatch(['/a', '/b']);
		expect((await client.messages.batches.retrieve(created.id)).processing_status).toBe('in_progress');
		const canceling = await client.messages.batches.cancel(created.id);
		expect(canceling.processing_status).toBe('canceling');
		expect(canceling.cancel_initiated_at).not.toBeNull();
		const { batch } = await retrieveUntilEnded(created.id);
		expect(batch.request_counts).toMatchObject({ canceled: 2, succeeded: 0 });
		expect([...(await resultsOf(created.id)).values()].map((result) => result.type)).toEqual(['canceled', 'canceled']);
	});

	it('batchEndState expired answers the first part of the requests and expires the rest; failRoutes lines are errored', async () => {
		fake.configure({ batchEndState: 'expired', batchPartialFraction: 0.5, failRoutes: { '/broken': 'error' } });
		const created = await createBatch(['/broken', '/b', '/c', '/d']);
		const { batch } = await retrieveUntilEnded(created.id);
		expect(batch.request_counts).toEqual({ processing: 0, succeeded: 1, errored: 1, canceled: 0, expired: 2 });
		const results = await resultsOf(created.id);
		expect(results.get('page-0')).toMatchObject({ type: 'errored', error: { type: 'error', error: { type: 'api_error' } } });
		expect(results.get('page-1')?.type).toBe('succeeded');
		expect(results.get('page-2')?.type).toBe('expired');
		expect(results.get('page-3')?.type).toBe('expired');
	});

	it('lists batches newest first, with limit, after_id and before_id, and the SDK pages through all', async () => {
		const ids: string[] = [];
		for (const route of ['/1', '/2', '/3']) ids.push((await createBatch([route])).id);
		const first = await client.messages.batches.list({ limit: 2 });
		expect(first.data.map((batch) => batch.id)).toEqual([ids[2], ids[1]]);
		expect(first.has_more).toBe(true);
		expect(first.last_id).toBe(ids[1]);
		const next = await client.messages.batches.list({ limit: 2, after_id: ids[1] });
		expect(next.data.map((batch) => batch.id)).toEqual([ids[0]]);
		expect(next.has_more).toBe(false);
		const back = await client.messages.batches.list({ limit: 1, before_id: ids[1] });
		expect(back.data.map((batch) => batch.id)).toEqual([ids[2]]);
		const all: string[] = [];
		for await (const batch of client.messages.batches.list({ limit: 1 })) all.push(batch.id);
		expect(all).toEqual([...ids].reverse());
	});

	it('deletes an ended batch and refuses to delete a running one', async () => {
		const running = await createBatch(['/a']);
		const refused = await caught(client.messages.batches.delete(running.id));
		expect(refused).toBeInstanceOf(BadRequestError);
		await retrieveUntilEnded(running.id);
		await expect(client.messages.batches.delete(running.id)).resolves.toEqual({ id: running.id, type: 'message_batch_deleted' });
		const gone = await caught(client.messages.batches.retrieve(running.id));
		expect((gone as APIError).status).toBe(404);
		expect((gone as APIError).error).toMatchObject({ error: { type: 'not_found_error' } });
	});

	it('ends a request with invalid params as errored, and serves no results before the batch has ended', async () => {
		fake.configure({ holdBatches: true });
		const created = await client.messages.batches.create({
			requests: [
				{ custom_id: 'good', params: pageParams('/good') },
				{ custom_id: 'no-max-tokens', params: { ...pageParams('/bad'), max_tokens: 0 } },
			],
		});
		const early = await caught(client.get(`/v1/messages/batches/${created.id}/results`));
		expect(early).toBeInstanceOf(NotFoundError);
		fake.releaseBatches();
		const { batch } = await retrieveUntilEnded(created.id);
		expect(batch.request_counts).toMatchObject({ succeeded: 1, errored: 1 });
		const results = await resultsOf(created.id);
		expect(results.get('no-max-tokens')).toMatchObject({ type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error' } } });
		expect(results.get('good')?.type).toBe('succeeded');
	});

	it('refuseBatchCreates and holdBatchCreates apply to message batch creates', async () => {
		fake.configure({ refuseBatchCreates: 403 });
		const refused = await caught(createBatch(['/a']));
		expect(refused).toBeInstanceOf(PermissionDeniedError);
		expect((refused as PermissionDeniedError).error).toMatchObject({ error: { type: 'permission_error' } });
		fake.configure({ refuseBatchCreates: null, holdBatchCreates: true });
		const creating = createBatch(['/held']);
		while (fake.heldBatchCreates() < 1) await new Promise((resolve) => setTimeout(resolve, 10));
		expect(fake.countBatchesCreated()).toBe(0);
		expect(fake.releaseBatchCreates()).toBe(1);
		await expect(creating).resolves.toMatchObject({ processing_status: 'in_progress' });
		expect(fake.countBatchedRoute('/held')).toBe(1);
	});

	it('refuses a bad or duplicate custom_id with 400 and creates nothing', async () => {
		const bad = await caught(client.messages.batches.create({ requests: [{ custom_id: 'has spaces', params: pageParams('/a') }] }));
		expect(bad).toBeInstanceOf(BadRequestError);
		expect((bad as BadRequestError).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
		const duplicate = await caught(
			client.messages.batches.create({ requests: [{ custom_id: 'same', params: pageParams('/a') }, { custom_id: 'same', params: pageParams('/b') }] }),
		);
		expect(duplicate).toBeInstanceOf(BadRequestError);
		expect(fake.countBatchesCreated()).toBe(0);
	});
});
