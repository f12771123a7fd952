import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import type { Logger } from '../../shared/logger.ts';
import { assertBackoff, DEFAULT_BACKOFF, defaultSleep, type BackoffOptions, type Sleep } from '../backoff.ts';
import { checkRequest, positiveInteger } from '../call-checks.ts';
import { redact, type ProviderFailure, type SdkErrorClasses } from '../provider-failure.ts';
import { createRetrier, type Attempt } from '../retry-policy.ts';
import type { JsonCompletionRequest, JsonProvider, ReportedUsage } from '../types.ts';

export interface AnthropicProviderOptions {
	/** The Anthropic key (`ANTHROPIC_API_KEY`, or Settings → AI). */
	apiKey: string;
	/** Default: the SDK's (`ANTHROPIC_BASE_URL`, else the Anthropic API). */
	baseURL?: string;
	/** The Claude model of every request, such as `claude-haiku-4-5`. */
	model: string;
	/** Time limit of one HTTP attempt, in milliseconds. Default 120000. */
	timeoutMs?: number;
	/** Attempts per call, the first included. Default 4. */
	maxAttempts?: number;
	backoff?: BackoffOptions;
	/** Ceiling for a wait the provider asks for with `retry-after`. Default 60000. */
	maxRetryAfterMs?: number;
	/** Output tokens one answer may use. Default 16000: a long page with its FAQ stays well within it. */
	maxTokens?: number;
	/** Headers sent with every request. Default none. */
	headers?: Record<string, string>;
	logger: Logger;
	sleep?: Sleep;
}

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
	const { apiKey, baseURL, model, logger } = options;
	if (typeof apiKey !== 'string' || apiKey.trim() === '') throw new TypeError('Expected `apiKey` to be a non-empty string');
	if (typeof model !== 'string' || model.trim() === '') throw new TypeError(`Expected \`model\` to be a non-empty string, got \`${String(model)}\``);
	const backoff = options.backoff ?? DEFAULT_BACKOFF;
	assertBackoff(backoff);
	const maxTokens = positiveInteger('maxTokens', options.maxTokens, 16_000);
	const client = new Anthropic({
		apiKey,
		...(baseURL !== undefined ? { baseURL } : {}),
		...(options.headers ? { defaultHeaders: options.headers } : {}),
		timeout: positiveInteger('timeoutMs', options.timeoutMs, 120_000),
		maxRetries: 0,
		// The SDK would otherwise write to the console; our own log lines carry the context.
		logLevel: 'off',
	});
	const secrets = [apiKey, ...Object.values(options.headers ?? {})];
	const withRetries = createRetrier({
		maxAttempts: positiveInteger('maxAttempts', options.maxAttempts, 4),
		backoff,
		maxRetryAfterMs: positiveInteger('maxRetryAfterMs', options.maxRetryAfterMs, 60_000, 0),
		sleep: options.sleep ?? defaultSleep,
		logger,
		secrets,
		sdk: ANTHROPIC_ERRORS,
	});

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
