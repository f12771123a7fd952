import { describe, expect, it } from 'vitest';
import { readConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { AiSettings } from './ai-settings.ts';
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

const compatible = (apiKey: string): AiSettings => ({ openaiApiKey: null, compatible: { baseUrl: 'http://127.0.0.1:9/v1', apiKey, name: 'gateway', headers: {} } });

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
		const { read } = settingsStore({ openaiApiKey: null, compatible: null });
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
		expect(built).toEqual([{ baseURL: 'the OpenAI API' }]);
	});
});
