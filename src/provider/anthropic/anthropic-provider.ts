import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { checkRequest } from '../call-checks.ts';
import { checkProviderOptions, type ProviderOptions } from '../provider-options.ts';
import { redact, type SdkErrorClasses } from '../provider-failure.ts';
import { createRetrier } from '../retry-policy.ts';
import { estimateInputTokens } from '../pacing/input-tokens.ts';
import type { BatchProvider, JsonCompletionRequest, JsonProvider } from '../types.ts';
import { createAnthropicBatches } from './anthropic-batches.ts';
import { messageParams, readMessageContent, readMessageUsage } from './anthropic-message.ts';

/** The Anthropic provider's options: a key from `ANTHROPIC_API_KEY` or Settings → AI, and `ANTHROPIC_BASE_URL`. */
export type AnthropicProviderOptions = ProviderOptions;

const ANTHROPIC_ERRORS: SdkErrorClasses = {
	APIUserAbortError,
	APIConnectionTimeoutError,
	APIConnectionError,
	APIError: APIError as unknown as SdkErrorClasses['APIError'],
};

/**
 * Claude through the official SDK's Messages API, with the SDK's own retries off so that the shared policy
 * (retry-policy.ts) is the only one. The page and plan schemas are enforced by structured outputs
 * (`output_config.format`), and the answer is validated as every provider's is. Bulk jobs go through the Message
 * Batches API, at half the price (anthropic-batches.ts).
 */
export function createAnthropicProvider(options: AnthropicProviderOptions): JsonProvider & BatchProvider {
	const { apiKey, baseURL, model, headers, timeoutMs, maxTokens, secrets, retry } = checkProviderOptions(options, 'anthropic');
	const client = new Anthropic({
		apiKey,
		...(baseURL !== undefined ? { baseURL } : {}),
		...(headers ? { defaultHeaders: headers } : {}),
		timeout: timeoutMs,
		maxRetries: 0,
		// The SDK would otherwise write to the console; our own log lines carry the context.
		logLevel: 'off',
	});
	const withRetries = createRetrier({ ...retry, sdk: ANTHROPIC_ERRORS });

	return {
		...createAnthropicBatches({ client, withRetries, model, maxTokens, secrets, logger: retry.logger }),
		async completeJson<T = unknown>(request: JsonCompletionRequest): Promise<T> {
			checkRequest(request);
			const body = messageParams(model, maxTokens, request);
			const paced = { tokens: estimateInputTokens(request) };
			return withRetries<T>({ op: 'chat', signal: request.signal, logContext: request.logContext, paced }, async () => {
				// With the answer's headers: the key's rate limits are learnt from them (pacing/).
				const { data: message, response } = await client.messages.create(body, { ...(request.signal ? { signal: request.signal } : {}) }).withResponse();
				const { headers } = response;
				const usage = readMessageUsage(message.usage);
				if (usage) request.onUsage?.(usage);
				const content = readMessageContent(message, secrets);
				if (!content.ok) return { ...content, headers };
				const problem = request.validate?.(content.value) ?? null;
				if (problem !== null) return { ok: false, failure: { reason: 'invalid_output', retryable: true, detail: redact(problem, secrets) }, headers };
				return { ok: true, value: content.value as T, headers };
			});
		},
	};
}
