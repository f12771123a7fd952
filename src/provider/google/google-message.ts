import { jsonObjectAnswer, malformedOutput } from '../json-answer.ts';
import { redact } from '../provider-failure.ts';
import type { Attempt } from '../retry-policy.ts';
import type { JsonCompletionRequest, ReportedUsage } from '../types.ts';

/** Finish reasons of a candidate the model withheld, in whole or in part, for policy reasons. */
const REFUSALS = new Set(['SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII']);

/** A `generateContent` call's contents and config, as `@google/genai` takes them (without the abort signal). */
export interface GenerateParams {
	contents: { role: 'user' | 'model'; parts: { text: string }[] }[];
	config: {
		systemInstruction?: string;
		responseMimeType: 'application/json';
		responseJsonSchema: Record<string, unknown>;
		maxOutputTokens: number;
	};
}

/**
 * The body of one page's or plan's call: the system messages become the `systemInstruction`, the assistant turns
 * the `model` turns of the conversation, and the request's schema goes as `responseJsonSchema`, which the API takes
 * as JSON Schema, `additionalProperties: false` and `required` included (`responseSchema` would be rewritten by the
 * SDK into Google's OpenAPI subset, which drops `additionalProperties`). A direct call and a batch line send the same.
 */
export function generateParams(maxTokens: number, request: JsonCompletionRequest): GenerateParams {
	const system = request.messages.filter((message) => message.role === 'system').map((message) => message.content).join('\n\n');
	const contents = request.messages.flatMap(({ role, content }) =>
		role === 'system' ? [] : [{ role: role === 'assistant' ? ('model' as const) : ('user' as const), parts: [{ text: content }] }],
	);
	return {
		contents,
		config: {
			...(system !== '' ? { systemInstruction: system } : {}),
			responseMimeType: 'application/json',
			responseJsonSchema: request.schema,
			maxOutputTokens: maxTokens,
		},
	};
}

/**
 * A `generateContent` request as the REST API takes it, which is what a line of a batch input file holds: the SDK's
 * form of {@link generateParams} with the system instruction as a Content of its own and the rest of the config as
 * `generationConfig`, as the SDK sends a direct call (its `generateContentConfigToMldev`).
 */
export interface GenerateContentRequest {
	contents: GenerateParams['contents'];
	systemInstruction?: { role: 'user'; parts: { text: string }[] };
	generationConfig: Omit<GenerateParams['config'], 'systemInstruction'>;
}

/** The REST form of a call's params: a direct call and a batch line send the same body. */
export function generateRequest({ contents, config }: GenerateParams): GenerateContentRequest {
	const { systemInstruction, ...generationConfig } = config;
	return {
		contents,
		...(systemInstruction !== undefined ? { systemInstruction: { role: 'user' as const, parts: [{ text: systemInstruction }] } } : {}),
		generationConfig,
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

