import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../../test/support/fake-provider/server.ts';
import { readConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { AiSettings } from './ai-settings.ts';
import { hasBatchApi, type GenerationProvider } from './generation-provider.ts';
import { createProviderSource } from './provider-source.ts';

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** A Settings → AI that the test edits, counting its reads. */
function settingsStore(initial: AiSettings | null) {
	const store = { value: initial, reads: 0, fail: false };
	const read = async () => {
		store.reads++;
		if (store.fail) throw new Error('database unavailable');
		return store.value;
	};
	return { store, read };
}

const noModels = { openai: null, anthropic: null, google: null, openai_compatible: null };
const none: AiSettings = { openaiApiKey: null, anthropicApiKey: null, googleApiKey: null, compatible: null, allowedModels: noModels };
const compatible = (apiKey: string): AiSettings => ({ ...none, compatible: { baseUrl: 'http://127.0.0.1:9/v1', apiKey, name: 'gateway', headers: {}, models: [] } });

describe('provider source', () => {
	it('uses the environment\'s key for the life of the instance and never reads Settings → AI then', async () => {
		const { store, read } = settingsStore(compatible('from-settings'));
		const source = createProviderSource(readConfig({ OPENAI_API_KEY: 'from-env' }), quiet, read);
		expect(source.origin).toBe('environment');
		const first = await source.current();
		expect('unavailable' in first).toBe(false);
		expect(await source.current()).toBe(first);
		expect(store.reads).toBe(0);
	});

	it('without the environment\'s key, says how to configure a provider when Settings → AI has none', async () => {
		const { read } = settingsStore(none);
		const source = createProviderSource(readConfig({}), quiet, read);
		expect(source.origin).toBe('directus-settings');
		expect(await source.current()).toEqual({ unavailable: expect.stringMatching(/OPENAI_API_KEY.*Settings → AI/) });
	});

	it('reads Settings → AI once per interval, keeps the provider while they are unchanged, and reads again once invalidated', async () => {
		const { store, read } = settingsStore(compatible('first'));
		const source = createProviderSource(readConfig({}), quiet, read);
		const first = await source.current();
		expect('unavailable' in first).toBe(false);
		expect(await source.current()).toBe(first);
		expect(store.reads).toBe(1);

		source.invalidate();
		expect(await source.current()).toBe(first); // read again, unchanged: the same client
		expect(store.reads).toBe(2);

		store.value = compatible('second');
		source.invalidate();
		const second = await source.current();
		expect(second).not.toBe(first);
		expect('unavailable' in second).toBe(false);
	});

	it('prefers the OpenAI key to the compatible server, and does not keep a failed read', async () => {
		const { store, read } = settingsStore({ ...compatible('gateway-key'), openaiApiKey: 'openai-key' });
		const built: unknown[] = [];
		const source = createProviderSource(readConfig({}), { ...quiet, info: (fields: unknown) => built.push(fields) }, read);
		store.fail = true;
		await expect(source.current()).rejects.toThrow('database unavailable');
		store.fail = false;
		expect('unavailable' in (await source.current())).toBe(false);
		expect(store.reads).toBe(2);
		expect(built).toEqual([{ provider: 'openai', model: 'gpt-5.4-mini', origin: 'directus-settings', baseURL: 'the vendor API' }]);
	});

	it('runs the provider and model a website names, with the key of Settings → AI, and refuses a model it does not allow', async () => {
		const { read } = settingsStore({
			...none,
			openaiApiKey: 'openai-key',
			anthropicApiKey: 'anthropic-key',
			allowedModels: { ...noModels, anthropic: ['claude-haiku-4-5', 'claude-sonnet-4-6'] },
		});
		const source = createProviderSource(readConfig({}), quiet, read);
		expect(await source.choose()).toEqual({ kind: 'openai', model: 'gpt-5.4-mini', origin: 'directus-settings', refused: null });
		expect(await source.choose({ provider: 'anthropic' })).toEqual({ kind: 'anthropic', model: 'claude-haiku-4-5', origin: 'directus-settings', refused: null });
		const refused = await source.choose({ provider: 'anthropic', model: 'claude-opus-4-7' });
		expect(refused.refused).toBe('The model "claude-opus-4-7" is not allowed for Anthropic in Settings → AI; allowed: claude-haiku-4-5, claude-sonnet-4-6.');
		expect(await source.current({ provider: 'anthropic', model: 'claude-opus-4-7' })).toEqual({ unavailable: expect.stringContaining('not allowed'), code: 'model_not_allowed' });
		const claude = await source.current({ provider: 'anthropic', model: 'claude-sonnet-4-6' });
		expect('unavailable' in claude).toBe(false);
		expect(await source.current({ provider: 'anthropic', model: 'claude-sonnet-4-6' })).toBe(claude);
		expect(await source.current({ provider: 'google' })).toEqual({ unavailable: expect.stringMatching(/^Google is not configured: add its key in Settings → AI/) });
	});

	it('takes PSEO_PROVIDER and PSEO_MODEL as the default, and lets the environment\'s key run any model', async () => {
		const { store, read } = settingsStore({ ...none, allowedModels: { ...noModels, anthropic: ['claude-haiku-4-5'] } });
		const source = createProviderSource(readConfig({ ANTHROPIC_API_KEY: 'env-key', PSEO_PROVIDER: 'anthropic', PSEO_MODEL: 'claude-opus-4-7' }), quiet, read);
		expect(source.origin).toBe('environment');
		expect(await source.choose()).toEqual({ kind: 'anthropic', model: 'claude-opus-4-7', origin: 'environment', refused: null });
		expect(store.reads).toBe(0);
		// A provider without a key anywhere says which one is missing.
		expect(await source.current({ provider: 'openai_compatible' })).toEqual({ unavailable: expect.stringMatching(/^OpenAI-compatible server is not configured/) });
	});

	it('takes an OpenAI-compatible server\'s first model when nothing names one', async () => {
		const { read } = settingsStore({ ...compatible('k'), compatible: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'k', name: 'local', headers: {}, models: ['llama-3.3', 'qwen'] }, allowedModels: { ...noModels, openai_compatible: ['llama-3.3', 'qwen'] } });
		const source = createProviderSource(readConfig({}), quiet, read);
		expect(await source.choose()).toEqual({ kind: 'openai_compatible', model: 'llama-3.3', origin: 'directus-settings', refused: null });
		expect((await source.choose({ model: 'mistral' })).refused).toMatch(/not allowed for OpenAI-compatible server/);
	});
});

describe('an OpenAI-compatible server without the Batch API', () => {
	let fake: FakeProvider;
	beforeAll(async () => {
		fake = await startFakeProvider();
	});
	afterAll(async () => {
		await fake.close();
	});
	const server = (): AiSettings => ({ ...none, compatible: { baseUrl: fake.url, apiKey: 'gateway-key', name: 'local', headers: {}, models: ['llama-3.3'] } });
	const probes = () => fake.requests.filter((entry) => entry.method === 'GET' && entry.path === '/v1/batches').length;

	it('runs its bulk jobs page by page, asking the server once', async () => {
		fake.reset();
		fake.configure({ noBatchApi: true });
		const lines: unknown[] = [];
		const source = createProviderSource(readConfig({}), { ...quiet, info: (fields: unknown, message?: unknown) => lines.push([fields, message]) }, settingsStore(server()).read);
		const provider = await source.current();
		expect('unavailable' in provider).toBe(false);
		expect(hasBatchApi(provider as GenerationProvider)).toBe(false);
		expect(await source.current()).toBe(provider);
		expect((await source.catalog()).providers.find((entry) => entry.provider === 'openai_compatible')).toMatchObject({ name: 'local', bulk: 'page_by_page' });
		expect(probes()).toBe(1);
		expect(lines).toContainEqual([{ provider: 'openai_compatible' }, expect.stringMatching(/has no Batch API/)]);
		// Its pages run through chat completions as ever.
		const page = await (provider as GenerationProvider).completeJson({ schemaName: 'page', schema: { type: 'object', properties: {}, required: [], additionalProperties: false }, messages: [{ role: 'user', content: 'hi' }] });
		expect(typeof page).toBe('object');
	});

	it('runs them through the Batch API when the server answers it', async () => {
		fake.reset();
		const source = createProviderSource(readConfig({}), quiet, settingsStore(server()).read);
		const provider = await source.current();
		expect(hasBatchApi(provider as GenerationProvider)).toBe(true);
		expect((await source.catalog()).providers.find((entry) => entry.provider === 'openai_compatible')?.bulk).toBe('batch');
		expect(probes()).toBe(1);
	});

	it('assumes the Batch API while the server gives no answer that decides, and asks again a minute later', async () => {
		// A server that fails once (500), then answers its unknown route as LM Studio does: 200 with an error object.
		let asked = 0;
		const flaky = createServer((req, res) => {
			if (req.url?.startsWith('/v1/batches')) asked++;
			res.writeHead(asked === 1 ? 500 : 200, { 'content-type': 'application/json' });
			res.end(JSON.stringify(asked === 1 ? { error: { message: 'down' } } : { error: 'Unexpected endpoint or method. (GET /v1/batches)' }));
		});
		await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
		const { port } = flaky.address() as AddressInfo;
		vi.useFakeTimers({ toFake: ['Date'] });
		try {
			const settings: AiSettings = { ...none, compatible: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'k', name: 'studio', headers: {}, models: ['qwen'] } };
			const source = createProviderSource(readConfig({}), quiet, settingsStore(settings).read);
			expect(hasBatchApi((await source.current()) as GenerationProvider)).toBe(true);
			expect(hasBatchApi((await source.current()) as GenerationProvider)).toBe(true);
			expect(asked).toBe(1);
			vi.setSystemTime(Date.now() + 61_000);
			expect(hasBatchApi((await source.current()) as GenerationProvider)).toBe(false);
			expect(asked).toBe(2);
		} finally {
			vi.useRealTimers();
			await new Promise((resolve) => flaky.close(resolve));
		}
	});

	it('GET /providers does not wait for the server\'s answer: it says what is known, and the next read says what it answered', async () => {
		// A server that holds every request: a catalog waiting for it would wait out the probe's timeout.
		const held: ServerResponse[] = [];
		const silent = createServer((_req, res) => void held.push(res));
		await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
		try {
			const { port } = silent.address() as AddressInfo;
			const settings: AiSettings = { ...none, compatible: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'k', name: 'slow', headers: {}, models: ['qwen'] } };
			const source = createProviderSource(readConfig({}), quiet, settingsStore(settings).read);
			const started = Date.now();
			expect((await source.catalog()).providers.find((entry) => entry.provider === 'openai_compatible')?.bulk).toBe('batch');
			expect(Date.now() - started).toBeLessThan(2000);
			await vi.waitFor(() => expect(held).toHaveLength(1));
		} finally {
			for (const res of held) res.destroy();
			silent.closeAllConnections();
			await new Promise((resolve) => silent.close(resolve));
		}

		fake.reset();
		fake.configure({ noBatchApi: true });
		const source = createProviderSource(readConfig({}), quiet, settingsStore(server()).read);
		const bulk = async () => (await source.catalog()).providers.find((entry) => entry.provider === 'openai_compatible')?.bulk;
		expect(await bulk()).toBe('batch');
		await vi.waitFor(async () => expect(await bulk()).toBe('page_by_page'));
		expect(probes()).toBe(1);
	});

	it('is not asked under PSEO_BULK_MODE=concurrent', async () => {
		fake.reset();
		const source = createProviderSource(readConfig({ PSEO_BULK_MODE: 'concurrent' }), quiet, settingsStore(server()).read);
		await source.current();
		expect((await source.catalog()).providers.find((entry) => entry.provider === 'openai_compatible')?.bulk).toBe('page_by_page');
		expect(probes()).toBe(0);
	});
});

