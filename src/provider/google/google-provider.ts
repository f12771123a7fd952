import { GoogleGenAI } from '@google/genai';
import { checkRequest } from '../call-checks.ts';
import { checkProviderOptions, type ProviderOptions } from '../provider-options.ts';
import { redact } from '../provider-failure.ts';
import { createRetrier } from '../retry-policy.ts';
import { estimateInputTokens } from '../pacing/input-tokens.ts';
import type { BatchProvider, JsonCompletionRequest, JsonProvider } from '../types.ts';
import { classifyGoogleError } from './google-failure.ts';
import { createGoogleBatches } from './google-batches.ts';
import { generateParams, readGeminiContent, readGeminiUsage } from './google-message.ts';

/**
 * The Google provider's options: a Gemini API key (Google AI Studio), from `GEMINI_API_KEY` or Settings → AI, sent as
 * `x-goog-api-key`; `baseURL` is the API's root without a version (`GOOGLE_GEMINI_BASE_URL`): the SDK adds
 * `/v1beta/models/...` itself.
 */
export type GoogleProviderOptions = ProviderOptions;

/** The API version the requests go to: the one that takes `responseJsonSchema`. */
const API_VERSION = 'v1beta';

/**
 * Gemini through the official SDK's `generateContent`, with the SDK's own retries off (no `retryOptions`, so it
 * makes one fetch per call) so that the shared policy (retry-policy.ts) is the only one. The body is built by
 * `generateParams` (google-message.ts). Bulk jobs go through the Gemini Batch API, at half the price, their
 * requests and results in files (google-batches.ts, google-files.ts).
 */
export function createGoogleProvider(options: GoogleProviderOptions): JsonProvider & BatchProvider {
	const { apiKey, baseURL, model, headers, timeoutMs, maxTokens, maxRetryAfterMs, secrets, retry } = checkProviderOptions(options, 'google');
	const client = new GoogleGenAI({
		apiKey,
		// Pinned, so that no GOOGLE_GENAI_USE_VERTEXAI or GOOGLE_GENAI_API_VERSION of the environment reroutes the calls.
		vertexai: false,
		apiVersion: API_VERSION,
		httpOptions: {
			...(baseURL !== undefined ? { baseUrl: baseURL } : {}),
			...(headers ? { headers } : {}),
			timeout: timeoutMs,
		},
	});
	const withRetries = createRetrier(retry);

	return {
		...createGoogleBatches({ client, withRetries, model, maxTokens, maxRetryAfterMs, apiKey, baseURL, apiVersion: API_VERSION, headers, timeoutMs, secrets, logger: retry.logger }),
		async completeJson<T = unknown>(request: JsonCompletionRequest): Promise<T> {
			checkRequest(request);
			const { contents, config } = generateParams(maxTokens, request);
			const signal = request.signal ? { abortSignal: request.signal } : {};
			// Gemini states no limits in its headers: the pacer learns them from its 429s (their RetryInfo) or the configuration.
			const paced = { tokens: estimateInputTokens(request) };
			return withRetries<T>({ op: 'chat', signal: request.signal, logContext: request.logContext, paced }, async () => {
				let response: unknown;
				try {
					// A fresh config each attempt: the SDK may rewrite the one it is given.
					response = await client.models.generateContent({ model, contents, config: { ...config, ...signal } });
				} catch (error) {
					// Classified here rather than by the policy: this SDK's errors are not shaped like the others'.
					return { ok: false, failure: classifyGoogleError(error, secrets, request.signal?.aborted === true, maxRetryAfterMs) };
				}
				const usage = readGeminiUsage((response as { usageMetadata?: unknown }).usageMetadata);
				if (usage) request.onUsage?.(usage);
				const content = readGeminiContent(response, secrets);
				if (!content.ok) return content;
				const problem = request.validate?.(content.value) ?? null;
				if (problem !== null) return { ok: false, failure: { reason: 'invalid_output', retryable: true, detail: redact(problem, secrets) } };
				return { ok: true, value: content.value as T };
			});
		},
	};
}
