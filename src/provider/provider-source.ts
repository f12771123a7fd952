import { createHash } from 'node:crypto';
import type { PseoConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import type { AiSettings } from './ai-settings.ts';
import type { GenerationProvider } from './generation-provider.ts';
import { createOpenAiProvider } from './openai-provider.ts';

/** The provider a call runs with, or why there is none. */
type ProviderChoice = GenerationProvider | { unavailable: string };

/** Where the provider of an instance comes from. */
type ProviderOrigin = 'environment' | 'directus-settings';

/**
 * The provider for each call. `OPENAI_API_KEY` in the environment wins, as it always did: one provider for the
 * life of the instance. Without it, Settings → AI is read when a call starts (cached for `SETTINGS_TTL_MS`, and
 * forgotten at once when this instance saves the settings), so an admin's change takes effect without a restart:
 * the OpenAI key (with `OPENAI_BASE_URL`, when set), else the OpenAI-compatible server.
 */
export interface ProviderSource {
	readonly origin: ProviderOrigin;
	current(): Promise<ProviderChoice>;
	/** Forgets what was read of the settings (`settings.update`). */
	invalidate(): void;
}

/** How long what was read of Settings → AI is used: a change saved on another instance is seen this late at most. */
const SETTINGS_TTL_MS = 10_000;

/** Why generation cannot run; lands in failed_routes and the job's error. */
const NOT_CONFIGURED =
	'No AI provider is configured: set OPENAI_API_KEY, or an OpenAI key or an OpenAI-compatible server in Settings → AI. The tokens were refunded.';

export function createProviderSource(config: PseoConfig, logger: Logger, readSettings: () => Promise<AiSettings | null>): ProviderSource {
	const build = (apiKey: string, baseURL: string | undefined, headers?: Record<string, string>) =>
		createOpenAiProvider({
			apiKey,
			...(baseURL !== undefined ? { baseURL } : {}),
			...(headers && Object.keys(headers).length > 0 ? { headers } : {}),
			model: config.model,
			timeoutMs: config.providerTimeoutMs,
			maxAttempts: config.providerMaxAttempts,
			backoff: { baseMs: config.providerBackoffMs, maxMs: Math.max(config.providerBackoffMs, 30_000) },
			logger,
		});

	if (config.openaiApiKey) {
		const fixed = build(config.openaiApiKey, config.openaiBaseUrl);
		return { origin: 'environment', current: async () => fixed, invalidate: () => {} };
	}

	let read: { at: number; settings: Promise<AiSettings | null> } | null = null;
	// One provider per distinct configuration, so that a settings read that changed nothing keeps the same client.
	let built: { fingerprint: string; provider: GenerationProvider } | null = null;
	const providerFor = (apiKey: string, baseURL: string | undefined, headers?: Record<string, string>): GenerationProvider => {
		// A digest, not the key: nothing kept here would show a key in a heap dump's strings beside its purpose.
		const fingerprint = createHash('sha256').update(JSON.stringify([apiKey, baseURL ?? null, headers ?? {}])).digest('hex');
		if (built?.fingerprint !== fingerprint) {
			built = { fingerprint, provider: build(apiKey, baseURL, headers) };
			logger.info({ baseURL: baseURL ?? 'the OpenAI API' }, 'pseo-automation: AI provider configured from Settings → AI');
		}
		return built.provider;
	};
	return {
		origin: 'directus-settings',
		async current() {
			if (!read || Date.now() - read.at > SETTINGS_TTL_MS) {
				const settings = readSettings();
				read = { at: Date.now(), settings };
				// A failed read is not kept: the next call reads again.
				settings.catch(() => {
					if (read?.settings === settings) read = null;
				});
			}
			const settings = await read.settings;
			if (settings?.openaiApiKey) return providerFor(settings.openaiApiKey, config.openaiBaseUrl);
			// Servers such as Ollama or LM Studio take no key; the SDK needs one, so a placeholder goes in its header.
			if (settings?.compatible) return providerFor(settings.compatible.apiKey ?? 'none', settings.compatible.baseUrl, settings.compatible.headers);
			return { unavailable: NOT_CONFIGURED };
		},
		invalidate() {
			read = null;
		},
	};
}
