import Anthropic, { RateLimitError } from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI, JobState } from '@google/genai';
import type { InlinedRequest } from '@google/genai';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { estimateInputTokens, goDuration } from './limits.ts';
import { startFakeProvider } from './server.ts';
import type { FakeProvider } from './server.ts';

const OPENAI_MODEL = 'gpt-4o-mini';
const CLAUDE_MODEL = 'claude-sonnet-5';
const GEMINI_MODEL = 'gemini-2.5-flash';
const SYSTEM = 'You write pages for a website. Answer with the JSON the schema asks for.';

let fake: FakeProvider;
let openai: OpenAI;
let anthropic: Anthropic;
let gemini: GoogleGenAI;

/** The fake's root: the Anthropic and Gemini SDKs add their own version prefix to it. */
function rootUrl(): string {
	return fake.url.replace(/\/v1$/, '');
}

beforeAll(async () => {
	fake = await startFakeProvider();
	// The SDKs' own retries are off (Gemini retries only when given retryOptions), so every 429 reaches the test.
	openai = new OpenAI({ baseURL: fake.url, apiKey: 'test-key', maxRetries: 0 });
	anthropic = new Anthropic({ apiKey: 'test-key', baseURL: rootUrl(), maxRetries: 0 });
	gemini = new GoogleGenAI({ apiKey: 'test-key', vertexai: false, apiVersion: 'v1beta', httpOptions: { baseUrl: rootUrl() } });
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

function sleep(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A prompt of about `tokens` input tokens, naming its route. */
function prompt(route: string, tokens: number): string {
	return `Write the page ${route}. ${'x'.repeat(tokens * 4)}`;
}

/** The estimate of a request made of the system prompt and one user turn, as every protocol here sends it. */
function tokensOf(text: string): number {
	return estimateInputTokens({ messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: text }] });
}

describe('estimateInputTokens', () => {
	it('counts Math.ceil(characters / 4) over every message, text parts without separators', () => {
		const messages = [
			{ role: 'system', content: 'abcd' },
			{ role: 'user', content: [{ type: 'text', text: 'ab' }, { type: 'text', text: 'c' }, { type: 'image_url' }] },
			{ role: 'assistant', content: 'de' },
		];
		expect(estimateInputTokens({ messages })).toBe(3);
		expect(estimateInputTokens({ messages: [{ role: 'user', content: 'x'.repeat(8) }] })).toBe(2);
		expect(estimateInputTokens({ messages: [] })).toBe(0);
	});
});

describe('goDuration', () => {
	it('prints durations as Go does, as OpenAI reset headers give them', () => {
		expect([0, 12, 250, 1000, 1500, 30_000, 90_250, 360_000, 3_600_000].map(goDuration)).toEqual([
			'0s',
			'12ms',
			'250ms',
			'1s',
			'1.5s',
			'30s',
			'1m30.25s',
			'6m0s',
			'1h0m0s',
		]);
	});
});

describe('config', () => {
	it('rejects a bad enqueuedTokenLimit or requestRate with a TypeError naming the value', () => {
		expect(() => fake.configure({ enqueuedTokenLimit: -1 })).toThrow(new TypeError('enqueuedTokenLimit must be a non-negative integer, got -1'));
		expect(() => fake.configure({ requestRate: { requests: 0, perMs: 1000, headers: true } })).toThrow(
			new TypeError('requestRate.requests must be a positive integer, got 0'),
		);
		expect(() => fake.configure({ requestRate: { requests: 1, perMs: 0, headers: true } })).toThrow(new TypeError('requestRate.perMs must be a positive finite number, got 0'));
		expect(fake.config.enqueuedTokenLimit).toBeNull();
		expect(fake.config.requestRate).toBeNull();
	});
});

describe('enqueuedTokenLimit with OpenAI batches', () => {
	function line(route: string, tokens: number): string {
		const body = { model: OPENAI_MODEL, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: prompt(route, tokens) }] };
		return JSON.stringify({ custom_id: route, method: 'POST', url: '/v1/chat/completions', body });
	}

	async function createBatch(routes: string[], tokens: number) {
		const file = await openai.files.create({ file: await toFile(Buffer.from(`${routes.map((route) => line(route, tokens)).join('\n')}\n`), 'requests.jsonl'), purpose: 'batch' });
		return openai.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
	}

	async function retrieveUntilDone(id: string) {
		for (let i = 0; i < 10; i++) {
			const batch = await openai.batches.retrieve(id);
			if (['completed', 'failed', 'expired', 'cancelled'].includes(batch.status)) return batch;
		}
		throw new Error(`batch ${id} did not end`);
	}

	it('creates a batch over the limit (200, validating), then fails it with token_limit_exceeded at validation, without files', async () => {
		const first = tokensOf(prompt('/a', 600)) + tokensOf(prompt('/b', 600));
		const second = tokensOf(prompt('/c', 600));
		fake.configure({ enqueuedTokenLimit: first + second - 1 });
		const fits = await createBatch(['/a', '/b'], 600);
		expect(fake.enqueuedTokens()).toBe(first);
		const over = await createBatch(['/c'], 600);
		expect(over.status).toBe('validating');
		const failed = await openai.batches.retrieve(over.id);
		expect(failed.status).toBe('failed');
		expect(failed.errors).toEqual({
			object: 'list',
			data: [
				{
					code: 'token_limit_exceeded',
					line: null,
					param: null,
					message: `Enqueued token limit reached for ${OPENAI_MODEL} in organization org-fake. Limit: ${(first + second - 1).toLocaleString('en-US')} enqueued tokens. Please try again once some in_progress batches have been completed.`,
				},
			],
		});
		expect(failed.errors?.data?.[0]?.message).toMatch(/Limit: \d,\d{3} enqueued tokens/);
		expect(failed).toMatchObject({ output_file_id: null, error_file_id: null });
		expect(fake.enqueuedTokens()).toBe(first);
		expect(fake.capacityRefusals()).toBe(1);
		expect((await openai.batches.retrieve(fits.id)).status).toBe('in_progress');
	});

	it('frees a batch\'s tokens when it ends, so that the batch refused before fits', async () => {
		const each = tokensOf(prompt('/a', 600));
		fake.configure({ enqueuedTokenLimit: each + 1 });
		const first = await createBatch(['/a'], 600);
		const refused = await retrieveUntilDone((await createBatch(['/b'], 600)).id);
		expect(refused.status).toBe('failed');
		expect((await retrieveUntilDone(first.id)).status).toBe('completed');
		expect(fake.enqueuedTokens()).toBe(0);
		const again = await createBatch(['/b'], 600);
		expect(fake.enqueuedTokens()).toBe(each);
		expect((await retrieveUntilDone(again.id)).status).toBe('completed');
		expect(fake.capacityRefusals()).toBe(1);
		expect(fake.maxEnqueuedTokens()).toBe(each);
	});

	it('keeps the high-water mark of enqueued tokens until reset(), counting without a limit too', async () => {
		const a = await createBatch(['/a'], 100);
		const b = await createBatch(['/b', '/c'], 200);
		const total = tokensOf(prompt('/a', 100)) + tokensOf(prompt('/b', 200)) + tokensOf(prompt('/c', 200));
		expect(fake.enqueuedTokens()).toBe(total);
		await retrieveUntilDone(a.id);
		await openai.batches.cancel(b.id);
		expect(fake.enqueuedTokens()).toBe(total - tokensOf(prompt('/a', 100)));
		expect((await retrieveUntilDone(b.id)).status).toBe('cancelled');
		expect(fake.enqueuedTokens()).toBe(0);
		expect(fake.maxEnqueuedTokens()).toBe(total);
		expect(fake.capacityRefusals()).toBe(0);
		fake.reset();
		expect(fake.maxEnqueuedTokens()).toBe(0);
	});
});

describe('enqueuedTokenLimit with Anthropic message batches', () => {
	function createBatch(routes: string[], tokens: number) {
		return anthropic.messages.batches.create({
			requests: routes.map((route, index) => ({
				custom_id: `page-${index}`,
				params: { model: CLAUDE_MODEL, max_tokens: 1024, system: SYSTEM, messages: [{ role: 'user', content: prompt(route, tokens) }] },
			})),
		});
	}

	it('refuses a create over the limit with 429 rate_limit_error and retry-after, creating nothing, until a batch ends', async () => {
		const each = tokensOf(prompt('/a', 300));
		fake.configure({ enqueuedTokenLimit: 2 * each });
		const first = await createBatch(['/a', '/b'], 300);
		expect(fake.enqueuedTokens()).toBe(2 * each);
		const error = await caught(createBatch(['/c'], 300));
		expect(error).toBeInstanceOf(RateLimitError);
		const refusal = error as RateLimitError;
		expect(refusal.status).toBe(429);
		expect(refusal.headers?.get('retry-after')).toBe('60');
		expect(refusal.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringContaining('enqueued batch input tokens') } });
		expect((refusal.error as { request_id?: string }).request_id).toMatch(/^req_/);
		expect((await anthropic.messages.batches.list()).data.map((batch) => batch.id)).toEqual([first.id]);
		expect(fake.countBatchesCreated()).toBe(1);
		expect(fake.capacityRefusals()).toBe(1);
		expect((await anthropic.messages.batches.retrieve(first.id)).processing_status).toBe('ended');
		expect(fake.enqueuedTokens()).toBe(0);
		await expect(createBatch(['/c'], 300)).resolves.toMatchObject({ processing_status: 'in_progress' });
		expect(fake.maxEnqueuedTokens()).toBe(2 * each);
	});
});

describe('enqueuedTokenLimit with Gemini batches', () => {
	function requests(routes: string[], tokens: number): InlinedRequest[] {
		return routes.map((route) => ({ contents: [{ role: 'user', parts: [{ text: prompt(route, tokens) }] }], config: { systemInstruction: SYSTEM }, metadata: { key: route } }));
	}

	it('refuses a create over the limit with 429 RESOURCE_EXHAUSTED and only a Help detail, creating nothing', async () => {
		const each = tokensOf(prompt('/a', 300));
		fake.configure({ enqueuedTokenLimit: 2 * each + 1 });
		const first = await gemini.batches.create({ model: GEMINI_MODEL, src: requests(['/a', '/b'], 300) });
		expect(fake.enqueuedTokens()).toBe(2 * each);
		const error = await caught(gemini.batches.create({ model: GEMINI_MODEL, src: requests(['/c'], 300) }));
		expect(error).toBeInstanceOf(ApiError);
		expect((error as ApiError).status).toBe(429);
		expect(JSON.parse((error as ApiError).message)).toEqual({
			error: {
				code: 429,
				message: expect.stringMatching(/^You exceeded your current quota, please check your plan and billing details\./),
				status: 'RESOURCE_EXHAUSTED',
				details: [{ '@type': 'type.googleapis.com/google.rpc.Help', links: [{ description: 'Learn more about Gemini API quotas', url: 'https://ai.google.dev/gemini-api/docs/rate-limits' }] }],
			},
		});
		const listed = [];
		for await (const job of await gemini.batches.list()) listed.push(job.name);
		expect(listed).toEqual([first.name]);
		expect(fake.capacityRefusals()).toBe(1);
		await gemini.batches.get({ name: first.name ?? '' });
		expect((await gemini.batches.get({ name: first.name ?? '' })).state).toBe(JobState.JOB_STATE_SUCCEEDED);
		expect(fake.enqueuedTokens()).toBe(0);
		await expect(gemini.batches.create({ model: GEMINI_MODEL, src: requests(['/c'], 300) })).resolves.toMatchObject({ state: JobState.JOB_STATE_PENDING });
	});

	it('counts the batches of every protocol against one limit: the account\'s', async () => {
		const each = tokensOf(prompt('/a', 300));
		fake.configure({ enqueuedTokenLimit: each });
		await gemini.batches.create({ model: GEMINI_MODEL, src: requests(['/a'], 300) });
		const error = await caught(
			anthropic.messages.batches.create({
				requests: [{ custom_id: 'b', params: { model: CLAUDE_MODEL, max_tokens: 1024, system: SYSTEM, messages: [{ role: 'user', content: prompt('/b', 300) }] } }],
			}),
		);
		expect(error).toBeInstanceOf(RateLimitError);
		expect(fake.enqueuedTokens()).toBe(each);
	});
});

describe('requestRate with OpenAI chat completions', () => {
	function chat(route: string, tokens = 10) {
		return openai.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: prompt(route, tokens) }] });
	}

	it('answers 429 rate_limit_exceeded once the bucket is empty, with retry-after-ms, retry-after and the x-ratelimit headers', async () => {
		fake.configure({ requestRate: { requests: 2, perMs: 60_000, headers: true } });
		const { response } = await chat('/a').withResponse();
		expect(response.status).toBe(200);
		expect(response.headers.get('x-ratelimit-limit-requests')).toBe('2');
		expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
		expect(response.headers.get('x-ratelimit-reset-requests')).toBe('30s');
		expect(response.headers.get('x-ratelimit-limit-tokens')).toBeNull();
		const second = await chat('/b').withResponse();
		expect(second.response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
		expect(second.response.headers.get('x-ratelimit-reset-requests')).toMatch(/^(59\.\d+s|1m0s)$/);
		const error = await caught(chat('/c'));
		expect(error).toBeInstanceOf(OpenAI.RateLimitError);
		const limited = error as InstanceType<typeof OpenAI.RateLimitError>;
		expect(limited.status).toBe(429);
		expect(limited.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded', param: null });
		expect(limited.message).toMatch(
			/Rate limit reached for gpt-4o-mini in organization org-fake on requests per min \(RPM\): Limit 2, Used 2, Requested 1\. Please try again in 29\.\d+s\./,
		);
		const waitMs = Number(limited.headers?.get('retry-after-ms'));
		expect(waitMs).toBeGreaterThan(29_000);
		expect(waitMs).toBeLessThanOrEqual(30_000);
		expect(limited.headers?.get('retry-after')).toBe('30');
		expect(limited.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
		expect(fake.rateAdmitted('openai')).toBe(2);
		expect(fake.rateLimited('openai')).toBe(1);
		expect(fake.rateLimited()).toBe(1);
		expect(fake.requests.at(-1)).toMatchObject({ path: '/v1/chat/completions', route: null, status: 429 });
	});

	it('refills continuously: a request comes back perMs / requests after the last one', async () => {
		fake.configure({ requestRate: { requests: 2, perMs: 600, headers: true } });
		await chat('/a');
		await chat('/b');
		const error = (await caught(chat('/c'))) as InstanceType<typeof OpenAI.RateLimitError>;
		expect(error.status).toBe(429);
		const waitMs = Number(error.headers?.get('retry-after-ms'));
		expect(waitMs).toBeGreaterThan(0);
		expect(waitMs).toBeLessThanOrEqual(300);
		expect(error.headers?.get('retry-after')).toBe('1');
		await sleep(waitMs + 5);
		const { response } = await chat('/c').withResponse();
		expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
		expect(fake.rateLimited('openai')).toBe(1);
		expect(fake.rateAdmitted('openai')).toBe(3);
	});

	it('with tokens, refuses a call whose input tokens exceed what remains, on TPM, and sends the tokens trio', async () => {
		const tokens = tokensOf(prompt('/a', 100));
		fake.configure({ requestRate: { requests: 100, perMs: 60_000, tokens: Math.floor(tokens * 1.5), headers: true } });
		const { response } = await chat('/a', 100).withResponse();
		expect(response.headers.get('x-ratelimit-limit-tokens')).toBe(String(Math.floor(tokens * 1.5)));
		expect(response.headers.get('x-ratelimit-remaining-tokens')).toBe(String(Math.floor(tokens * 1.5) - tokens));
		expect(response.headers.get('x-ratelimit-reset-tokens')).toMatch(/^\d+(\.\d+)?s$/);
		expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('99');
		const error = (await caught(chat('/b', 100))) as InstanceType<typeof OpenAI.RateLimitError>;
		expect(error.status).toBe(429);
		expect(error.error).toMatchObject({ type: 'tokens', code: 'rate_limit_exceeded' });
		expect(error.message).toContain(`on tokens per min (TPM): Limit ${Math.floor(tokens * 1.5)}, Used ${tokens}, Requested ${tokens}. Please try again in`);
		// A short call still fits in what remains.
		await expect(chat('/c', 1)).resolves.toMatchObject({ object: 'chat.completion' });
	});

	it('refuses a call larger than the whole token bucket as too large, with no wait to retry after', async () => {
		fake.configure({ requestRate: { requests: 10, perMs: 60_000, tokens: 50, headers: false } });
		const error = (await caught(chat('/a', 100))) as InstanceType<typeof OpenAI.RateLimitError>;
		expect(error.status).toBe(429);
		expect(error.message).toContain('Request too large for gpt-4o-mini in organization org-fake on tokens per min (TPM): Limit 50, Requested');
		expect(error.headers?.get('retry-after')).toBeNull();
		expect(error.headers?.get('retry-after-ms')).toBeNull();
	});

	it('headers: false sends no x-ratelimit headers, and its 429 still carries retry-after-ms and retry-after', async () => {
		fake.configure({ requestRate: { requests: 1, perMs: 60_000, tokens: 10_000, headers: false } });
		const { response } = await chat('/a').withResponse();
		expect([...response.headers.keys()].filter((name) => name.startsWith('x-ratelimit-'))).toEqual([]);
		const error = (await caught(chat('/b'))) as InstanceType<typeof OpenAI.RateLimitError>;
		expect(error.status).toBe(429);
		expect(error.headers?.get('retry-after-ms')).toMatch(/^\d+$/);
		expect(error.headers?.get('retry-after')).toBe('60');
		expect([...(error.headers?.keys() ?? [])].filter((name) => name.startsWith('x-ratelimit-'))).toEqual([]);
	});

	it('lets the SDK wait the retry-after-ms it sends and succeed on its own retry', async () => {
		fake.configure({ requestRate: { requests: 1, perMs: 400, headers: true } });
		const retrying = new OpenAI({ baseURL: fake.url, apiKey: 'test-key', maxRetries: 1 });
		await chat('/a');
		const started = Date.now();
		await expect(retrying.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: 'user', content: 'hello' }] })).resolves.toMatchObject({ object: 'chat.completion' });
		expect(Date.now() - started).toBeGreaterThanOrEqual(250);
		expect(fake.rateLimited('openai')).toBe(1);
		expect(fake.rateAdmitted('openai')).toBe(2);
	});

	it('is independent of the rateLimit knob, which still answers the next N calls 429 as before', async () => {
		fake.configure({ rateLimit: { count: 1, retryAfterS: 7 }, requestRate: { requests: 5, perMs: 60_000, headers: true } });
		const error = (await caught(chat('/a'))) as InstanceType<typeof OpenAI.RateLimitError>;
		expect(error.headers?.get('retry-after')).toBe('7');
		expect(error.headers?.get('x-ratelimit-limit-requests')).toBeNull();
		const { response } = await chat('/b').withResponse();
		expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('4');
		expect(fake.rateLimited()).toBe(0);
	});

	it('starts again with a full bucket after reset() or a new requestRate', async () => {
		fake.configure({ requestRate: { requests: 1, perMs: 60_000, headers: true } });
		await chat('/a');
		expect(((await caught(chat('/b'))) as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
		fake.configure({ requestRate: { requests: 1, perMs: 60_000, headers: true } });
		await expect(chat('/c')).resolves.toMatchObject({ object: 'chat.completion' });
		fake.reset();
		expect(fake.rateLimited()).toBe(0);
		expect(fake.rateAdmitted()).toBe(0);
		fake.configure({ requestRate: { requests: 1, perMs: 60_000, headers: true } });
		await expect(chat('/d')).resolves.toMatchObject({ object: 'chat.completion' });
	});
});

describe('requestRate with Anthropic messages', () => {
	function message(route: string, tokens = 10) {
		return anthropic.messages.create({ model: CLAUDE_MODEL, max_tokens: 1024, system: SYSTEM, messages: [{ role: 'user', content: prompt(route, tokens) }] });
	}

	it('answers 429 rate_limit_error with retry-after once the bucket is empty, every answer with the anthropic-ratelimit headers', async () => {
		const tokens = tokensOf(prompt('/a', 10));
		fake.configure({ requestRate: { requests: 1, perMs: 60_000, tokens: 10_000, headers: true } });
		const before = Date.now();
		const { response } = await message('/a').withResponse();
		expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBe('1');
		expect(response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
		const reset = Date.parse(response.headers.get('anthropic-ratelimit-requests-reset') ?? '');
		expect(response.headers.get('anthropic-ratelimit-requests-reset')).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
		expect(reset - before).toBeGreaterThan(59_000);
		expect(reset - before).toBeLessThan(62_000);
		expect(response.headers.get('anthropic-ratelimit-input-tokens-limit')).toBe('10000');
		expect(response.headers.get('anthropic-ratelimit-input-tokens-remaining')).toBe(String(10_000 - tokens));
		expect(Date.parse(response.headers.get('anthropic-ratelimit-input-tokens-reset') ?? '')).toBeGreaterThan(before);
		const error = await caught(message('/b'));
		expect(error).toBeInstanceOf(RateLimitError);
		const limited = error as RateLimitError;
		expect(limited.status).toBe(429);
		expect(limited.error).toMatchObject({
			type: 'error',
			error: { type: 'rate_limit_error', message: expect.stringContaining('rate limit for your organization (org-fake) of 1 requests per minute') },
		});
		expect(limited.headers?.get('retry-after')).toBe('60');
		expect(limited.headers?.get('anthropic-ratelimit-requests-remaining')).toBe('0');
		expect(limited.headers?.get('retry-after-ms')).toBeNull();
		expect(fake.rateLimited('anthropic')).toBe(1);
		expect(fake.rateAdmitted('anthropic')).toBe(1);
		expect(fake.rateLimited('openai')).toBe(0);
	});

	it('headers: false sends no anthropic-ratelimit headers, and its 429 still carries retry-after', async () => {
		fake.configure({ requestRate: { requests: 1, perMs: 1000, headers: false } });
		const { response } = await message('/a').withResponse();
		expect([...response.headers.keys()].filter((name) => name.startsWith('anthropic-ratelimit-'))).toEqual([]);
		const error = (await caught(message('/b'))) as RateLimitError;
		expect(error.status).toBe(429);
		expect(error.headers?.get('retry-after')).toBe('1');
		expect([...(error.headers?.keys() ?? [])].filter((name) => name.startsWith('anthropic-ratelimit-'))).toEqual([]);
	});

	it('shares the account\'s bucket with the other protocols', async () => {
		fake.configure({ requestRate: { requests: 1, perMs: 60_000, headers: true } });
		await openai.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: 'user', content: 'hello' }] });
		expect(await caught(message('/a'))).toBeInstanceOf(RateLimitError);
	});
});

describe('requestRate with Gemini generateContent', () => {
	function generate(route: string) {
		return gemini.models.generateContent({ model: GEMINI_MODEL, contents: [{ role: 'user', parts: [{ text: prompt(route, 10) }] }], config: { systemInstruction: SYSTEM } });
	}

	it('answers 429 RESOURCE_EXHAUSTED with QuotaFailure and RetryInfo, no rate-limit headers, and recovers as the bucket refills', async () => {
		fake.configure({ requestRate: { requests: 1, perMs: 400, headers: true } });
		const first = await generate('/a');
		const headers = Object.keys(first.sdkHttpResponse?.headers ?? {});
		expect(headers).toContain('content-type');
		expect(headers.filter((name) => /ratelimit|retry-after/.test(name))).toEqual([]);
		const error = await caught(generate('/b'));
		expect(error).toBeInstanceOf(ApiError);
		expect((error as ApiError).status).toBe(429);
		const body = JSON.parse((error as ApiError).message) as { error: { code: number; status: string; message: string; details: Record<string, unknown>[] } };
		expect(body.error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
		expect(body.error.message).toMatch(/^You exceeded your current quota, please check your plan and billing details\./);
		expect(body.error.message).toContain(`limit: 1, model: ${GEMINI_MODEL}`);
		expect(body.error.details.map((detail) => detail['@type'])).toEqual([
			'type.googleapis.com/google.rpc.QuotaFailure',
			'type.googleapis.com/google.rpc.Help',
			'type.googleapis.com/google.rpc.RetryInfo',
		]);
		expect(body.error.details[0]).toMatchObject({
			violations: [
				{
					quotaMetric: 'generativelanguage.googleapis.com/generate_content_paid_tier_requests',
					quotaId: 'GenerateRequestsPerMinutePerProjectPerModel',
					quotaDimensions: { location: 'global', model: GEMINI_MODEL },
					quotaValue: '1',
				},
			],
		});
		const retryDelay = String(body.error.details[2]?.retryDelay);
		expect(retryDelay).toMatch(/^0\.\d{3}s$/);
		const waitMs = Number(retryDelay.slice(0, -1)) * 1000;
		expect(waitMs).toBeGreaterThan(0);
		expect(waitMs).toBeLessThanOrEqual(400);
		await sleep(waitMs + 5);
		await expect(generate('/b')).resolves.toMatchObject({ modelVersion: GEMINI_MODEL });
		expect(fake.rateLimited('google')).toBe(1);
		expect(fake.rateAdmitted('google')).toBe(2);
	});

	it('names the input-token quota when the tokens bucket is the one short', async () => {
		fake.configure({ requestRate: { requests: 10, perMs: 60_000, tokens: tokensOf(prompt('/a', 10)) + 5, headers: false } });
		await generate('/a');
		const body = JSON.parse(((await caught(generate('/b'))) as ApiError).message) as { error: { details: Record<string, unknown>[] } };
		expect(body.error.details[0]).toMatchObject({
			violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count', quotaDimensions: { model: GEMINI_MODEL } }],
		});
		expect(String(body.error.details[2]?.retryDelay)).toMatch(/^\d+(\.\d{3})?s$/);
	});
});

describe('GET /_fake/limits', () => {
	it('gives the limits\' counters to another process', async () => {
		const configured = await fetch(`${rootUrl()}/_fake/config`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ requestRate: { requests: 1, perMs: 60_000 } }),
		});
		expect(((await configured.json()) as { config: Record<string, unknown> }).config.requestRate).toEqual({ requests: 1, perMs: 60_000, tokens: null, headers: true });
		await openai.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: 'user', content: 'hello' }] });
		await caught(openai.chat.completions.create({ model: OPENAI_MODEL, messages: [{ role: 'user', content: 'hello' }] }));
		const response = await fetch(`${rootUrl()}/_fake/limits`);
		expect(await response.json()).toEqual({
			enqueuedTokens: 0,
			maxEnqueuedTokens: 0,
			capacityRefusals: 0,
			rate: { openai: { admitted: 1, limited: 1 }, anthropic: { admitted: 0, limited: 0 }, google: { admitted: 0, limited: 0 } },
		});
	});
});
