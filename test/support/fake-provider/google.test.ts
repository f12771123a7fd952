import { ApiError, FinishReason, GoogleGenAI } from '@google/genai';
import type { GenerateContentParameters } from '@google/genai';
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
