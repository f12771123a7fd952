import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../../../test/support/fake-provider/server.ts';
import { buildPageMessages } from '../../page/page-prompt.ts';
import { PAGE_SCHEMA, PAGE_SCHEMA_NAME } from '../../page/page-schema.ts';
import type { Logger } from '../../shared/logger.ts';
import { ProviderCallError } from '../provider-call-error.ts';
import { defaultSleep } from '../backoff.ts';
import { createPacer } from '../pacing/pacer.ts';
import { createMemoryPacingStore } from '../pacing/pacing-store.ts';
import type { JsonCompletionRequest, ReportedUsage } from '../types.ts';
import { createAnthropicProvider, type AnthropicProviderOptions } from './anthropic-provider.ts';

/*
 * The Anthropic provider against the fake's Messages API over loopback: the page schema goes out as structured
 * output and the system prompt apart, answers are read and validated, usage is reported, and the shared retry
 * policy handles a 429, malformed text and refusals, with the key in no error or log line.
 */
const API_KEY = 'sk-ant-test-0123456789SECRET';
const ROUTE = '/sourdough-classes';

let fake: FakeProvider;
const logged: unknown[] = [];
const logger: Logger = {
	debug: (...args: unknown[]) => logged.push(args),
	info: (...args: unknown[]) => logged.push(args),
	warn: (...args: unknown[]) => logged.push(args),
	error: (...args: unknown[]) => logged.push(args),
};

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

const provider = (options: Partial<AnthropicProviderOptions> = {}) =>
	createAnthropicProvider({
		apiKey: API_KEY,
		baseURL: fake.url.replace(/\/v1$/, ''),
		model: 'claude-haiku-4-5',
		backoff: { baseMs: 1, maxMs: 2 },
		logger,
		...options,
	});

function pageRequest(extra: Partial<JsonCompletionRequest> = {}): JsonCompletionRequest {
	const messages = buildPageMessages({
		masterPrompt: 'Warm tone.',
		websiteUrl: 'https://bakery.example',
		language: 'en-GB',
		businessDescription: 'A bakery in Lyon.',
		item: { route: ROUTE, title: 'Sourdough classes', priority: 1 },
		siblings: [],
	});
	return { schemaName: PAGE_SCHEMA_NAME, schema: { ...PAGE_SCHEMA }, messages, ...extra };
}

describe('createAnthropicProvider', () => {
	it('sends the page schema as structured output and the system prompt apart, and returns the validated page with its usage', async () => {
		const usage: ReportedUsage[] = [];
		const page = await provider().completeJson<Record<string, unknown>>(pageRequest({ onUsage: (reported) => usage.push(reported) }));
		expect(typeof page['title']).toBe('string');
		expect(String(page['body']).trim()).not.toBe('');
		expect(usage).toHaveLength(1);
		expect(usage[0]!.prompt_tokens).toBeGreaterThan(0);
		expect(usage[0]!.completion_tokens).toBeGreaterThan(0);
		const [entry] = fake.requests;
		expect(entry).toMatchObject({ method: 'POST', path: '/v1/messages', apiKey: API_KEY, route: ROUTE, task: 'page', status: 200 });
	});

	it('retries a 429 and malformed text, then succeeds', async () => {
		fake.configure({ rateLimit: { count: 1, retryAfterS: 0 }, failRoutes: { [ROUTE]: 'malformed' }, failRoutesTimes: 1 });
		const page = await provider().completeJson<Record<string, unknown>>(pageRequest());
		expect(typeof page['title']).toBe('string');
		expect(fake.countChat(ROUTE)).toBe(3);
	});

	it('retries output the validator rejects, and fails a refusal after its attempts with a ProviderCallError that shows no key', async () => {
		let checks = 0;
		await provider().completeJson(pageRequest({ validate: () => (++checks === 1 ? 'too short' : null) }));
		expect(checks).toBe(2);

		fake.configure({ failRoutes: { [ROUTE]: 'refusal' } });
		const error = await provider({ maxAttempts: 2 }).completeJson(pageRequest()).catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(ProviderCallError);
		expect(error).toMatchObject({ reason: 'refusal', attempts: 2 });
		// Two calls for the validated page, two refused.
		expect(fake.countChat(ROUTE)).toBe(4);
		expect(JSON.stringify(logged) + String(error)).not.toContain(API_KEY);
	});

	it('fails at once on a refused key, without retrying, and names no key', async () => {
		fake.configure({ chatErrorsForTask: { page: 401 } });
		const error = await provider().completeJson(pageRequest()).catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(ProviderCallError);
		expect(error).toMatchObject({ reason: 'unauthorized', status: 401, attempts: 1 });
		expect(fake.countChat(ROUTE)).toBe(1);
		expect(JSON.stringify(logged) + String(error)).not.toContain(API_KEY);
	});

	it('paces to the limit its answers\' anthropic-ratelimit headers state: calls at once, none answered 429', async () => {
		fake.configure({ requestRate: { requests: 4, perMs: 1000, headers: true } });
		const pacer = createPacer({ key: 'anthropic:unit', provider: 'anthropic', configured: { requestsPerMinute: null, tokensPerMinute: null }, store: createMemoryPacingStore(), logger, sleep: defaultSleep });
		const claude = provider({ pacer });
		const started = performance.now();
		await Promise.all(Array.from({ length: 9 }, () => claude.completeJson(pageRequest())));
		expect(fake.rateLimited('anthropic')).toBe(0);
		expect(fake.rateAdmitted('anthropic')).toBe(9);
		// The first alone, then a burst of three, then 250 ms apart.
		expect(performance.now() - started).toBeGreaterThan(1000);
	});

	it('refuses bad options with a TypeError naming them', () => {
		expect(() => createAnthropicProvider({ apiKey: '', model: 'm', logger })).toThrow(/apiKey/);
		expect(() => createAnthropicProvider({ apiKey: 'k', model: ' ', logger })).toThrow(/model/);
		expect(() => createAnthropicProvider({ apiKey: 'k', model: 'm', logger, maxTokens: 0 })).toThrow(/maxTokens/);
	});
});
