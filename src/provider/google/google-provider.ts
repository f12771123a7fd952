import { GoogleGenAI } from '@google/genai';
import { checkRequest } from '../call-checks.ts';
import { checkProviderOptions, type ProviderOptions } from '../provider-options.ts';
import { redact } from '../provider-failure.ts';
import { createRetrier, type Attempt } from '../retry-policy.ts';
import type { JsonCompletionRequest, JsonProvider, ReportedUsage } from '../types.ts';
import { classifyGoogleError } from './google-failure.ts';
import { jsonObjectAnswer, malformedOutput } from '../json-answer.ts';

/**
 * The Google provider's options: a Gemini API key (Google AI Studio), from `GEMINI_API_KEY` or Settings → AI, sent as
 * `x-goog-api-key`; `baseURL` is the API's root without a version (`GOOGLE_GEMINI_BASE_URL`): the SDK adds
 * `/v1beta/models/...` itself.
 */
export type GoogleProviderOptions = ProviderOptions;

/** The API version the requests go to: the one that takes `responseJsonSchema`. */
const API_VERSION = 'v1beta';

/** Finish reasons of a candidate the model withheld, in whole or in part, for policy reasons. */
const REFUSALS = new Set(['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII']);

/**
 * Gemini through the official SDK's `generateContent`, with the SDK's own retries off (no `retryOptions`, so it
 * makes one fetch per call) so that the shared policy (retry-policy.ts) is the only one. The request's schema goes
 * as `responseJsonSchema`, which the API takes as JSON Schema, `additionalProperties: false` and `required`
 * included; `responseSchema` would be rewritten by the SDK into Google's OpenAPI subset, which drops
 * `additionalProperties`. The system messages become the `systemInstruction`, and the assistant turns the `model`
 * turns of the conversation.
 *
 * Bulk jobs of this provider are written page by page: it has no batch API here yet.
 */
export function createGoogleProvider(options: GoogleProviderOptions): JsonProvider {
	const { apiKey, baseURL, model, headers, timeoutMs, maxTokens, maxRetryAfterMs, secrets, retry } = checkProviderOptions(options);
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
		async completeJson<T = unknown>(request: JsonCompletionRequest): Promise<T> {
			checkRequest(request);
			const system = request.messages.filter((message) => message.role === 'system').map((message) => message.content).join('\n\n');
			const contents = request.messages.flatMap(({ role, content }) => (role === 'system' ? [] : [{ role: role === 'assistant' ? 'model' : 'user', parts: [{ text: content }] }]));
			const config = {
				...(system !== '' ? { systemInstruction: system } : {}),
				responseMimeType: 'application/json',
				responseJsonSchema: request.schema,
				maxOutputTokens: maxTokens,
				...(request.signal ? { abortSignal: request.signal } : {}),
			};
			return withRetries<T>({ op: 'chat', signal: request.signal, logContext: request.logContext }, async () => {
				let response: unknown;
				try {
					// A fresh config each attempt: the SDK may rewrite the one it is given.
					response = await client.models.generateContent({ model, contents, config: { ...config } });
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

/**
 * A response's `usageMetadata` in the shape every provider reports: the prompt's tokens as prompt, and as
 * completion the answer's tokens together with the model's thinking, which Google bills as output too.
 */
export function readGeminiUsage(usage: unknown): ReportedUsage | null {
	if (typeof usage !== 'object' || usage === null) return null;
	const { promptTokenCount: prompt, candidatesTokenCount: candidates, thoughtsTokenCount: thoughts } = usage as Record<string, unknown>;
	const count = (value: unknown) => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0);
	return { prompt_tokens: count(prompt), completion_tokens: count(candidates) + count(thoughts) };
}

/**
 * The JSON object of a response: its first candidate's text, parsed. A prompt or answer withheld for policy reasons,
 * an answer cut off at `maxOutputTokens`, and text that is not a JSON object are failures, retried like any
 * transient fault.
 */
export function readGeminiContent(response: unknown, secrets: readonly string[] = []): Attempt<Record<string, unknown>> {
	const record = (typeof response === 'object' && response !== null ? response : {}) as { candidates?: unknown; promptFeedback?: { blockReason?: unknown } };
	const candidate = Array.isArray(record.candidates) ? (record.candidates[0] as { finishReason?: unknown; content?: { parts?: unknown } } | undefined) : undefined;
	if (!candidate) {
		const blocked = record.promptFeedback?.blockReason;
		if (typeof blocked === 'string') return { ok: false, failure: { reason: 'refusal', retryable: true, detail: redact(`the prompt was blocked (${blocked})`, secrets) } };
		return malformedOutput('the response has no candidate');
	}
	const finish = candidate.finishReason;
	if (typeof finish === 'string' && REFUSALS.has(finish)) {
		return { ok: false, failure: { reason: 'refusal', retryable: true, detail: `the model withheld its answer (${finish})` } };
	}
	if (finish === 'MAX_TOKENS') return { ok: false, failure: { reason: 'truncated', retryable: true } };
	return jsonObjectAnswer(textOf(candidate.content?.parts), 'the answer has no text');
}

/** The text parts of an answer, without the model's thoughts (sent only when asked for, but never the answer). */
function textOf(parts: unknown): string {
	if (!Array.isArray(parts)) return '';
	return parts
		.filter((part): part is { text: string } => typeof part?.text === 'string' && part.thought !== true)
		.map((part) => part.text)
		.join('');
}

