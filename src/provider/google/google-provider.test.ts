import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeProvider } from '../../../test/support/fake-provider/server.ts';
import type { FakeProvider } from '../../../test/support/fake-provider/server.ts';
import { validateJsonSchema } from '../../../test/support/fake-provider/json-schema.ts';
import type { JsonSchema } from '../../../test/support/fake-provider/json-schema.ts';
import { PAGE_SCHEMA, PAGE_SCHEMA_NAME } from '../../page/page-schema.ts';
import { PLAN_CLUSTERS_SCHEMA_NAME, planClustersSchema } from '../../plan/plan-schema.ts';
import type { Logger } from '../../shared/logger.ts';
import { ProviderCallError } from '../provider-call-error.ts';
import { defaultSleep } from '../backoff.ts';
import { createPacer } from '../pacing/pacer.ts';
import { createMemoryPacingStore } from '../pacing/pacing-store.ts';
import type { JsonCompletionRequest, ReportedUsage } from '../types.ts';
import { createGoogleProvider } from './google-provider.ts';
import { readGeminiContent, readGeminiUsage } from './google-message.ts';
import type { GoogleProviderOptions } from './google-provider.ts';

const API_KEY = 'AIzaSy-test-0123456789-SECRET';
const HEADER_SECRET = 'tenant-header-SECRET-42';
const MODEL = 'gemini-2.5-flash';

let fake: FakeProvider;

beforeAll(async () => {
	fake = await startFakeProvider();
});

afterAll(async () => {
	await fake.close();
});

beforeEach(() => {
	fake.reset();
});

interface LogLine {
	level: string;
	obj: object;
	msg?: string | undefined;
}

function recordingLogger(lines: LogLine[]): Logger {
	const at = (level: string) => (obj: object, msg?: string) => {
		lines.push({ level, obj, msg });
	};
	return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A provider pointed at the fake's root (the SDK adds `/v1beta` itself), with recorded sleeps and log lines. */
function provider(overrides: Partial<GoogleProviderOptions> = {}) {
	const sleeps: number[] = [];
	const lines: LogLine[] = [];
	const instance = createGoogleProvider({
		apiKey: API_KEY,
		baseURL: fake.url.replace(/\/v1$/, ''),
		model: MODEL,
		timeoutMs: 5000,
		maxAttempts: 3,
		backoff: { baseMs: 100, maxMs: 1000 },
		logger: recordingLogger(lines),
		sleep: async (ms) => {
			sleeps.push(ms);
		},
		...overrides,
	});
	return { instance, sleeps, lines };
}

function pageRequest(route: string, extra: Partial<JsonCompletionRequest> = {}): JsonCompletionRequest {
	const context = { task: 'page', route, title: `Page ${route}`, primary_keyword: 'emergency plumber', language: 'en-GB' };
	return {
		schemaName: PAGE_SCHEMA_NAME,
		schema: PAGE_SCHEMA as Record<string, unknown>,
		messages: [
			{ role: 'system', content: 'You write pages for a website.' },
			{ role: 'system', content: 'Answer with the JSON the schema asks for.' },
			{ role: 'user', content: `Write the page described below.\n\n\`\`\`json\n${JSON.stringify(context, null, 2)}\n\`\`\`` },
		],
		validate: (value) => ((value as { title?: unknown }).title === '' ? 'title is empty' : null),
		...extra,
	};
}

async function failure(promise: Promise<unknown>): Promise<ProviderCallError> {
	const error = await promise.then(
		() => null,
		(caught: unknown) => caught,
	);
	expect(error).toBeInstanceOf(ProviderCallError);
	return error as ProviderCallError;
}

describe('createGoogleProvider', () => {
	it('writes a page through completeJson: the answer validates against the page schema and the request reaches the fake with the key', async () => {
		const { instance, sleeps } = provider();
		const page = await instance.completeJson<Record<string, unknown>>(pageRequest('/plumbing/emergency-plumber'));
		expect(validateJsonSchema(PAGE_SCHEMA as JsonSchema, page)).toEqual([]);
		expect(page.title).not.toBe('');
		expect(sleeps).toEqual([]);
		expect(fake.requests).toHaveLength(1);
		expect(fake.requests[0]).toMatchObject({
			method: 'POST',
			path: `/v1beta/models/${MODEL}:generateContent`,
			apiKey: API_KEY,
			task: 'page',
			route: '/plumbing/emergency-plumber',
			status: 200,
		});
	});

	it('writes a plan through completeJson against the plan schema', async () => {
		const { instance } = provider();
		const context = { task: 'plan_clusters', cluster_count: 3, total_pages: 9, topic: 'plumbing' };
		const plan = await instance.completeJson<{ clusters: unknown[] }>({
			schemaName: PLAN_CLUSTERS_SCHEMA_NAME,
			schema: planClustersSchema,
			messages: [{ role: 'user', content: `Plan the site.\n\n\`\`\`json\n${JSON.stringify(context)}\n\`\`\`` }],
		});
		expect(validateJsonSchema(planClustersSchema as JsonSchema, plan)).toEqual([]);
		expect(plan.clusters.length).toBeGreaterThan(0);
		expect(fake.countChat()).toBe(1);
	});

	it('sends the system messages as one system instruction and assistant turns as model turns', async () => {
		let seen: readonly { role: string; content?: unknown }[] = [];
		fake.configure({
			responders: {
				page: ({ messages }) => {
					seen = messages;
					return { title: 'T', meta_title: 'M', meta_description: 'D', h1: 'H', body_markdown: 'B', faq: [], internal_links: [] };
				},
			},
		});
		const { instance } = provider();
		const request = pageRequest('/turns');
		const [first, second, last] = request.messages;
		await instance.completeJson({ ...request, messages: [first!, second!, { role: 'user', content: 'Earlier question' }, { role: 'assistant', content: 'Earlier answer' }, last!] });
		expect(seen.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'user']);
		expect(seen[0]?.content).toBe('You write pages for a website.\n\nAnswer with the JSON the schema asks for.');
		expect(seen[2]?.content).toBe('Earlier answer');
	});

	it('reports the usage of every answer through onUsage, as the fake logged it', async () => {
		const usages: ReportedUsage[] = [];
		const { instance } = provider();
		await instance.completeJson(pageRequest('/usage', { onUsage: (usage) => usages.push(usage) }));
		expect(usages).toHaveLength(1);
		expect(usages[0]?.prompt_tokens).toBeGreaterThan(0);
		expect(usages[0]?.completion_tokens).toBeGreaterThan(0);
		expect(usages[0]).toEqual(fake.requests.at(-1)?.usage);
	});

	it('retries after a 429, waiting the RetryInfo delay the answer asks for', async () => {
		fake.configure({ rateLimit: { count: 1, retryAfterS: 7 } });
		const { instance, sleeps, lines } = provider();
		const page = await instance.completeJson<Record<string, unknown>>(pageRequest('/limited'));
		expect(page.title).not.toBe('');
		expect(sleeps).toEqual([7000]);
		expect(fake.countChat('/limited')).toBe(2);
		expect(lines.find((line) => line.msg?.includes('retrying'))?.obj).toMatchObject({ reason: 'rate_limited', status: 429, delayMs: 7000 });
	});

	it('without limit headers, learns the pace from the 429s\' RetryInfo and gets every page through', async () => {
		fake.configure({ requestRate: { requests: 3, perMs: 1000, headers: false } });
		const pacer = createPacer({ key: 'google:unit', provider: 'google', configured: { requestsPerMinute: null, tokensPerMinute: null }, store: createMemoryPacingStore(), logger: recordingLogger([]), sleep: defaultSleep });
		const { instance } = provider({ pacer, sleep: defaultSleep, maxAttempts: 1 });
		const pages = await Promise.all(Array.from({ length: 12 }, (_, i) => instance.completeJson<Record<string, unknown>>(pageRequest(`/paced-${i}`))));
		expect(pages.every((page) => typeof page.title === 'string')).toBe(true);
		expect(fake.rateAdmitted('google')).toBe(12);
		// Refused calls are retried however many there are (maxAttempts is 1); the pacer keeps them few.
		expect(fake.rateLimited('google')).toBeLessThan(12);
	});

	it('caps the wait a 429 asks for at maxRetryAfterMs', async () => {
		fake.configure({ rateLimit: { count: 1, retryAfterS: 600 } });
		const { instance, sleeps } = provider({ maxRetryAfterMs: 2000 });
		await instance.completeJson(pageRequest('/capped'));
		expect(sleeps).toEqual([2000]);
	});

	it('retries after malformed output, and counts the usage of both answers', async () => {
		fake.configure({ failRoutes: { '/malformed': 'malformed' }, failRoutesTimes: 1 });
		const usages: ReportedUsage[] = [];
		const { instance, sleeps, lines } = provider();
		const page = await instance.completeJson<Record<string, unknown>>(pageRequest('/malformed', { onUsage: (usage) => usages.push(usage) }));
		expect(validateJsonSchema(PAGE_SCHEMA as JsonSchema, page)).toEqual([]);
		expect(fake.countChat('/malformed')).toBe(2);
		expect(sleeps).toHaveLength(1);
		expect(usages).toHaveLength(2);
		expect(lines[0]?.obj).toMatchObject({ reason: 'malformed_output', attempt: 1 });
	});

	it('retries output the validator rejects, then fails with invalid_output', async () => {
		fake.configure({ failRoutes: { '/invalid': 'invalid' } });
		const { instance } = provider();
		const error = await failure(instance.completeJson(pageRequest('/invalid')));
		expect(error).toMatchObject({ reason: 'invalid_output', retryable: true, attempts: 3 });
		expect(error.message).toContain('title is empty');
		expect(fake.countChat('/invalid')).toBe(3);
	});

	it('retries a refusal (finishReason SAFETY), then fails with a ProviderCallError', async () => {
		fake.configure({ failRoutes: { '/refused': 'refusal' } });
		const { instance, sleeps } = provider();
		const error = await failure(instance.completeJson(pageRequest('/refused')));
		expect(error).toMatchObject({ reason: 'refusal', retryable: true, attempts: 3 });
		expect(error.message).toContain('SAFETY');
		expect(fake.countChat('/refused')).toBe(3);
		expect(sleeps).toHaveLength(2);
	});

	it('makes one request per attempt: the SDK does not retry a 503 behind the policy', async () => {
		fake.configure({ serverErrors: { count: 10, status: 503 } });
		const { instance } = provider({ maxAttempts: 2 });
		const error = await failure(instance.completeJson(pageRequest('/down')));
		expect(error).toMatchObject({ reason: 'server_error', status: 503, attempts: 2 });
		expect(error.message).toContain('overloaded');
		expect(fake.countChat()).toBe(2);
	});

	it('fails a 400 at once as bad_request, with the API\'s message', async () => {
		fake.configure({ chatErrorsForTask: { page: 400 } });
		const { instance, sleeps } = provider();
		const error = await failure(instance.completeJson(pageRequest('/bad')));
		expect(error).toMatchObject({ reason: 'bad_request', status: 400, retryable: false, attempts: 1 });
		expect(error.message).toContain('Forced 400 for task page.');
		expect(sleeps).toEqual([]);
		expect(fake.countChat()).toBe(1);
	});

	it('classifies an attempt cut by timeoutMs as a timeout, and retries it', async () => {
		fake.configure({ hangChat: true });
		const { instance } = provider({ timeoutMs: 150, maxAttempts: 2 });
		const error = await failure(instance.completeJson(pageRequest('/hung')));
		expect(error).toMatchObject({ reason: 'timeout', retryable: true, attempts: 2 });
		expect(fake.countChat('/hung')).toBe(2);
	});

	it('classifies a call the caller aborts as aborted, without retrying it', async () => {
		fake.configure({ hangChat: true });
		const { instance } = provider();
		const controller = new AbortController();
		const pending = failure(instance.completeJson(pageRequest('/aborted', { signal: controller.signal })));
		await expect.poll(() => fake.countChat('/aborted')).toBe(1);
		controller.abort();
		const error = await pending;
		expect(error).toMatchObject({ reason: 'aborted', retryable: false });
		expect(fake.countChat('/aborted')).toBe(1);
	});

	it('sends the configured headers, and keeps the key and header values out of every error and log line', async () => {
		// An answer that echoes the secrets, as a model might echo its prompt, and a validator that quotes the answer.
		fake.configure({ responders: { page: () => ({ title: `key ${API_KEY} header ${HEADER_SECRET}` }) } });
		const { instance, lines } = provider({ headers: { 'x-tenant': HEADER_SECRET } });
		const error = await failure(instance.completeJson(pageRequest('/echo', { validate: (value) => `rejected ${JSON.stringify(value)}` })));
		expect(error.reason).toBe('invalid_output');
		expect(fake.requests.at(-1)).toMatchObject({ apiKey: API_KEY, extraHeaders: { 'x-tenant': HEADER_SECRET } });
		const texts = [error.message, ...lines.map((line) => `${line.msg} ${JSON.stringify(line.obj)}`)];
		expect(error.message).toContain('[redacted]');
		for (const text of texts) {
			expect(text).not.toContain(API_KEY);
			expect(text).not.toContain(HEADER_SECRET);
		}
	});

	it('checks its options and requests before any network use', async () => {
		expect(() => createGoogleProvider({ apiKey: ' ', model: MODEL, logger: recordingLogger([]) })).toThrow(TypeError);
		expect(() => createGoogleProvider({ apiKey: API_KEY, model: '', logger: recordingLogger([]) })).toThrow(TypeError);
		expect(() => provider({ maxTokens: 0 })).toThrow(TypeError);
		const { instance } = provider();
		await expect(instance.completeJson({ ...pageRequest('/x'), messages: [] })).rejects.toThrow(TypeError);
		expect(fake.countChat()).toBe(0);
	});
});

describe('readGeminiContent', () => {
	const answer = (finishReason: string, parts: unknown[]) => ({ candidates: [{ finishReason, index: 0, content: { role: 'model', parts } }] });

	it('joins the text parts of the first candidate and leaves thoughts out', () => {
		const result = readGeminiContent(answer('STOP', [{ text: 'thinking...', thought: true }, { text: '{"a":' }, { text: '1}' }]));
		expect(result).toEqual({ ok: true, value: { a: 1 } });
	});

	it('reads MAX_TOKENS as truncated, the policy finish reasons as refusals, and a blocked prompt as a refusal', () => {
		expect(readGeminiContent(answer('MAX_TOKENS', [{ text: '{"a":' }]))).toMatchObject({ ok: false, failure: { reason: 'truncated', retryable: true } });
		for (const reason of ['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST']) {
			expect(readGeminiContent(answer(reason, []))).toMatchObject({ ok: false, failure: { reason: 'refusal', retryable: true } });
		}
		expect(readGeminiContent({ promptFeedback: { blockReason: 'SAFETY' } })).toMatchObject({ ok: false, failure: { reason: 'refusal', detail: 'the prompt was blocked (SAFETY)' } });
	});

	it('reads no candidate, no text, text that is not JSON, and JSON that is not an object as malformed', () => {
		for (const response of [{}, answer('STOP', []), answer('STOP', [{ text: 'Sure! Here it is' }]), answer('STOP', [{ text: '[1, 2]' }])]) {
			expect(readGeminiContent(response)).toMatchObject({ ok: false, failure: { reason: 'malformed_output', retryable: true } });
		}
	});
});

describe('readGeminiUsage', () => {
	it('counts the prompt as prompt tokens, and the answer with the thinking as completion tokens', () => {
		expect(readGeminiUsage({ promptTokenCount: 120, candidatesTokenCount: 80, thoughtsTokenCount: 40, totalTokenCount: 240 })).toEqual({ prompt_tokens: 120, completion_tokens: 120 });
		expect(readGeminiUsage({ promptTokenCount: 5 })).toEqual({ prompt_tokens: 5, completion_tokens: 0 });
		expect(readGeminiUsage(undefined)).toBeNull();
	});
});
