import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import { checkRequest } from '../call-checks.ts';
import { checkProviderOptions, type ProviderOptions } from '../provider-options.ts';
import { redact, type ProviderFailure, type SdkErrorClasses } from '../provider-failure.ts';
import { createRetrier, type Attempt } from '../retry-policy.ts';
import type { JsonCompletionRequest, JsonProvider, ReportedUsage } from '../types.ts';

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
 * (`output_config.format`), and the answer is validated as every provider's is. The system messages of a request
 * become the Messages API's `system` prompt, which the API takes apart from the conversation.
 *
 * Bulk jobs of this provider are written page by page: it has no batch API here yet.
 */
export function createAnthropicProvider(options: AnthropicProviderOptions): JsonProvider {
	const { apiKey, baseURL, model, headers, timeoutMs, maxTokens, secrets, retry } = checkProviderOptions(options);
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
		async completeJson<T = unknown>(request: JsonCompletionRequest): Promise<T> {
			checkRequest(request);
			const system = request.messages.filter((message) => message.role === 'system').map((message) => message.content).join('\n\n');
			const body = {
				model,
				max_tokens: maxTokens,
				...(system !== '' ? { system } : {}),
				messages: request.messages.flatMap(({ role, content }) => (role === 'system' ? [] : [{ role, content }])),
				output_config: { format: { type: 'json_schema' as const, schema: request.schema } },
			};
			return withRetries<T>({ op: 'chat', signal: request.signal, logContext: request.logContext }, async () => {
				const message = await client.messages.create(body, { ...(request.signal ? { signal: request.signal } : {}) });
				const usage = readMessageUsage(message.usage);
				if (usage) request.onUsage?.(usage);
				const content = readMessageContent(message, secrets);
				if (!content.ok) return content;
				const problem = request.validate?.(content.value) ?? null;
				if (problem !== null) return { ok: false, failure: { reason: 'invalid_output', retryable: true, detail: redact(problem, secrets) } };
				return { ok: true, value: content.value as T };
			});
		},
	};
}

/** A message's `usage` in the shape every provider reports (input tokens as prompt, output as completion). */
function readMessageUsage(usage: unknown): ReportedUsage | null {
	if (typeof usage !== 'object' || usage === null) return null;
	const { input_tokens: input, output_tokens: output } = usage as Record<string, unknown>;
	const count = (value: unknown) => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0);
	return { prompt_tokens: count(input), completion_tokens: count(output) };
}

/**
 * The JSON object of a message: its text, parsed. A refusal, an answer cut off at `max_tokens`, and text that is not
 * a JSON object are failures, retried like any transient fault.
 */
function readMessageContent(message: unknown, secrets: readonly string[] = []): Attempt<Record<string, unknown>> {
	const record = (typeof message === 'object' && message !== null ? message : {}) as { stop_reason?: unknown; content?: unknown };
	if (record.stop_reason === 'refusal') {
		return { ok: false, failure: { reason: 'refusal', retryable: true, detail: redact(textOf(record.content) || 'the model declined to answer', secrets) } };
	}
	if (record.stop_reason === 'max_tokens') return { ok: false, failure: { reason: 'truncated', retryable: true } };
	const text = textOf(record.content);
	if (text.trim() === '') return malformed('the message has no text');
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch {
		return malformed();
	}
	if (typeof value !== 'object' || value === null || Array.isArray(value)) return malformed('the text is not a JSON object');
	return { ok: true, value: value as Record<string, unknown> };
}

function textOf(content: unknown): string {
	if (!Array.isArray(content)) return '';
	return content
		.filter((block): block is { type: 'text'; text: string } => block?.type === 'text' && typeof block.text === 'string')
		.map((block) => block.text)
		.join('');
}

function malformed(detail?: string): { ok: false; failure: ProviderFailure } {
	return { ok: false, failure: { reason: 'malformed_output', retryable: true, ...(detail ? { detail } : {}) } };
}
