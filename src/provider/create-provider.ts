import type { PseoConfig } from '../config/config.ts';
import { createOpenAiProvider } from './openai-provider.ts';
import type { Logger } from '../shared/logger.ts';
import type { GenerationProvider } from './generation-provider.ts';

/** Why generation cannot run without a key; lands in failed_routes and the job's error. */
const MISSING_API_KEY = 'OPENAI_API_KEY is not set: the AI provider cannot be called. The tokens were refunded.';

/** The instance's provider from the configuration, or the reason there is none. */
function createGenerationProvider(config: PseoConfig, logger: Logger): GenerationProvider | { unavailable: string } {
	if (!config.openaiApiKey) return { unavailable: MISSING_API_KEY };
	return createOpenAiProvider({
		apiKey: config.openaiApiKey,
		baseURL: config.openaiBaseUrl,
		model: config.model,
		timeoutMs: config.providerTimeoutMs,
		maxAttempts: config.providerMaxAttempts,
		backoff: { baseMs: config.providerBackoffMs, maxMs: Math.max(config.providerBackoffMs, 30_000) },
		logger,
	});
}

const cache = new WeakMap<PseoConfig, GenerationProvider | { unavailable: string }>();

/** One provider per configuration, shared by the job runtime and the plan endpoint. */
export function providerFor(config: PseoConfig, logger: Logger): GenerationProvider | { unavailable: string } {
	let provider = cache.get(config);
	if (!provider) {
		provider = createGenerationProvider(config, logger);
		cache.set(config, provider);
	}
	return provider;
}
