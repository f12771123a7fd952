import { redact } from '../provider-failure.ts';
import type { Attempt } from '../retry-policy.ts';
import type { JsonCompletionRequest, ReportedUsage } from '../types.ts';
import { jsonObjectAnswer } from '../json-answer.ts';

/*
 * One Messages API request and the reading of its answer, alike for a call made at once and for a request of a
 * message batch.
 */

/**
 * The Messages API body of a request. Its system messages become the API's `system` prompt, which the API takes
 * apart from the conversation; the schema is enforced by structured outputs (`output_config.format`).
 */
export function messageParams(model: string, maxTokens: number, request: JsonCompletionRequest) {
	const system = request.messages.filter((message) => message.role === 'system').map((message) => message.content).join('\n\n');
	return {
		model,
		max_tokens: maxTokens,
		...(system !== '' ? { system } : {}),
		messages: request.messages.flatMap(({ role, content }) => (role === 'system' ? [] : [{ role, content }])),
		output_config: { format: { type: 'json_schema' as const, schema: request.schema } },
	};
}

/** A message's `usage` in the shape every provider reports (input tokens as prompt, output as completion). */
export function readMessageUsage(usage: unknown): ReportedUsage | null {
	if (typeof usage !== 'object' || usage === null) return null;
	const { input_tokens: input, output_tokens: output } = usage as Record<string, unknown>;
	const count = (value: unknown) => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0);
	return { prompt_tokens: count(input), completion_tokens: count(output) };
}

/**
 * The JSON object of a message: its text, parsed. A refusal, an answer cut off at `max_tokens`, and text that is not
 * a JSON object are failures, retried like any transient fault.
 */
export function readMessageContent(message: unknown, secrets: readonly string[] = []): Attempt<Record<string, unknown>> {
	const record = (typeof message === 'object' && message !== null ? message : {}) as { stop_reason?: unknown; content?: unknown };
	if (record.stop_reason === 'refusal') {
		return { ok: false, failure: { reason: 'refusal', retryable: true, detail: redact(textOf(record.content) || 'the model declined to answer', secrets) } };
	}
	if (record.stop_reason === 'max_tokens') return { ok: false, failure: { reason: 'truncated', retryable: true } };
	return jsonObjectAnswer(textOf(record.content), 'the message has no text');
}

function textOf(content: unknown): string {
	if (!Array.isArray(content)) return '';
	return content
		.filter((block): block is { type: 'text'; text: string } => block?.type === 'text' && typeof block.text === 'string')
		.map((block) => block.text)
		.join('');
}

