/**
 * The Anthropic Messages API (`POST /v1/messages`) over the same answering core as chat completions: the request
 * becomes a ChatRequest (system prompt first, then the turns), the answer comes from `answerRequest`, and goes back
 * as a `message` with Anthropic's stop reasons, usage and error shape.
 */
import { answerRequest, apiError, newId } from './chat.ts';
import type { Answer, ApiError, ChatRequest, ChatState } from './chat.ts';
import { contextKeys, extractContext } from './prompt-context.ts';
import type { JsonSchema } from './json-schema.ts';
import type { WireMessage } from './prompt-context.ts';

/** The error types the Anthropic API sends, by HTTP status. */
type AnthropicErrorType =
	| 'invalid_request_error'
	| 'authentication_error'
	| 'billing_error'
	| 'permission_error'
	| 'not_found_error'
	| 'request_too_large'
	| 'rate_limit_error'
	| 'api_error'
	| 'overloaded_error';

/** The body of an Anthropic error response. */
export interface AnthropicErrorBody {
	type: 'error';
	error: { type: AnthropicErrorType; message: string };
	request_id: string;
}

/** The wire shape of a message (`POST /v1/messages`), as far as this server fills it. */
export interface AnthropicMessage {
	id: string;
	type: 'message';
	role: 'assistant';
	model: string;
	content: { type: 'text'; text: string; citations: null }[];
	stop_reason: 'end_turn' | 'refusal';
	stop_sequence: null;
	stop_details: { type: 'refusal'; category: null; explanation: string | null } | null;
	container: null;
	usage: {
		input_tokens: number;
		output_tokens: number;
		cache_creation_input_tokens: number;
		cache_read_input_tokens: number;
		service_tier: 'standard' | 'batch';
	};
}

export type MessageOutcome = { ok: true; message: AnthropicMessage } | { ok: false; status: number; error: ApiError };

type Invalid = { ok: false; status: 400; error: ApiError };

const MESSAGES_PATH = '/v1/messages';

/** True for the routes that speak Anthropic's protocol, so that their errors take its shape. */
export function isAnthropicPath(path: string): boolean {
	return path === MESSAGES_PATH || path.startsWith(`${MESSAGES_PATH}/`);
}

/** The error type the real API sends with a status; the status decides, whatever produced the error. */
function anthropicErrorType(status: number): AnthropicErrorType {
	switch (status) {
		case 401:
			return 'authentication_error';
		case 402:
			return 'billing_error';
		case 403:
			return 'permission_error';
		case 404:
			return 'not_found_error';
		case 413:
			return 'request_too_large';
		case 429:
			return 'rate_limit_error';
		case 529:
			return 'overloaded_error';
		default:
			return status >= 500 ? 'api_error' : 'invalid_request_error';
	}
}

export function anthropicErrorBody(status: number, message: string): AnthropicErrorBody {
	return { type: 'error', error: { type: anthropicErrorType(status), message }, request_id: newId('req_') };
}

function invalid(message: string): Invalid {
	return { ok: false, status: 400, error: apiError(message) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Text blocks only: the product sends nothing else, and the responders read text. */
function isTextBlocks(value: unknown): boolean {
	return Array.isArray(value) && value.every((block) => isRecord(block) && typeof block.type === 'string' && (block.type !== 'text' || typeof block.text === 'string'));
}

/** Validates a `/v1/messages` body (or a batch request's `params`) and reads its prompt context. */
export function parseMessagesRequest(body: unknown): { ok: true; request: ChatRequest } | Invalid {
	if (!isRecord(body)) return invalid('The request body must be a JSON object.');
	if (typeof body.model !== 'string' || body.model === '') return invalid('model: Field required');
	if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) {
		return invalid('max_tokens: Field required, an integer of at least 1');
	}
	if (body.stream === true) return invalid('stream: this server does not stream; send stream: false.');
	if (!Array.isArray(body.messages) || body.messages.length === 0) return invalid('messages: at least one message is required');
	for (const [index, message] of body.messages.entries()) {
		if (!isRecord(message)) return invalid(`messages.${index}: Input should be an object`);
		if (message.role !== 'user' && message.role !== 'assistant') {
			// The real API has no system role in messages: the system prompt is the top-level `system`.
			return invalid(`messages.${index}.role: Input should be 'user' or 'assistant'`);
		}
		if (typeof message.content !== 'string' && !isTextBlocks(message.content)) {
			return invalid(`messages.${index}.content: Input should be a string or a list of content blocks`);
		}
	}
	const system = body.system;
	if (system !== undefined && typeof system !== 'string' && !isTextBlocks(system)) {
		return invalid('system: Input should be a string or a list of text blocks');
	}
	let schema: JsonSchema | null = null;
	const outputConfig = body.output_config;
	if (outputConfig !== undefined && outputConfig !== null) {
		if (!isRecord(outputConfig)) return invalid('output_config: Input should be an object');
		const format = outputConfig.format;
		if (format !== undefined && format !== null) {
			if (!isRecord(format) || format.type !== 'json_schema') return invalid("output_config.format.type: Input should be 'json_schema'");
			if (!isRecord(format.schema)) return invalid('output_config.format.schema: Field required');
			schema = format.schema as JsonSchema;
		}
	}
	// The system prompt counts towards the prompt's tokens, and responders see it where OpenAI callers put it.
	const systemMessages: WireMessage[] = system === undefined ? [] : [{ role: 'system', content: system }];
	const messages = [...systemMessages, ...(body.messages as WireMessage[])];
	const context = extractContext(messages);
	const { task, route } = contextKeys(context);
	return {
		ok: true,
		request: { model: body.model, messages, format: schema ? 'json_schema' : 'text', schemaName: null, schema, context, task, route },
	};
}

/** Wraps an answer as a message; a refusal is `stop_reason: 'refusal'` with no text at all. */
function toMessage(request: ChatRequest, answer: Answer, serviceTier: 'standard' | 'batch' = 'standard'): AnthropicMessage {
	const refused = answer.content === null;
	return {
		id: newId('msg_'),
		type: 'message',
		role: 'assistant',
		model: request.model,
		content: refused ? [] : [{ type: 'text', text: answer.content ?? '', citations: null }],
		stop_reason: refused ? 'refusal' : 'end_turn',
		stop_sequence: null,
		stop_details: refused ? { type: 'refusal', category: null, explanation: answer.refusal } : null,
		container: null,
		usage: {
			input_tokens: answer.promptTokens,
			output_tokens: answer.completionTokens,
			cache_creation_input_tokens: 0,
			cache_read_input_tokens: 0,
			service_tier: serviceTier,
		},
	};
}

/** Answers a validated request as a message, with the same content faults as chat completions. */
export function answerMessage(request: ChatRequest, state: ChatState, customId: string | null = null): MessageOutcome {
	const outcome = answerRequest(request, state, customId);
	return outcome.ok ? { ok: true, message: toMessage(request, outcome.answer, customId === null ? 'standard' : 'batch') } : outcome;
}

/** A message's usage in the chat-completion terms the request log records. */
export function usageForLog(message: AnthropicMessage): { prompt_tokens: number; completion_tokens: number } {
	return { prompt_tokens: message.usage.input_tokens, completion_tokens: message.usage.output_tokens };
}
