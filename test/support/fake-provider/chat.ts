/**
 * Answers one chat-completion body: request validation, the content faults that apply in chat and in batches
 * alike (`planFail`, `chatErrorsForTask`, `failRoutes`), and the responders. Transport faults (auth, 429, 5xx,
 * latency, hangs) belong to the HTTP layer. `answerRequest` is the protocol-neutral core: the Anthropic Messages
 * API (anthropic-messages.ts) wraps the same answer in its own shape, as `answerChat` does for OpenAI.
 */
import { randomBytes } from 'node:crypto';
import type { FakeConfig, RouteFailure } from './config.ts';
import { conformToSchema, generateFromSchema, strictModeProblems } from './json-schema.ts';
import type { JsonSchema } from './json-schema.ts';
import { contextKeys, extractContext, messageText } from './prompt-context.ts';
import type { WireMessage } from './prompt-context.ts';
import { defaultResponders, TASK_BY_SCHEMA_NAME } from './responders.ts';
import type { ResponderInput } from './responders.ts';

/** The error object of an OpenAI error response (`{ error: ApiError }`). */
export interface ApiError {
	message: string;
	type: string;
	param: string | null;
	code: string | null;
}

/** A validated chat-completion request with its prompt context. */
export interface ChatRequest {
	model: string;
	messages: WireMessage[];
	format: 'text' | 'json_object' | 'json_schema';
	schemaName: string | null;
	schema: JsonSchema | null;
	context: Record<string, unknown> | null;
	task: string | null;
	route: string | null;
}

export type ChatOutcome =
	| { ok: true; body: ChatCompletion }
	| { ok: false; status: number; error: ApiError };

/** What the model said, whatever the wire protocol: text or a refusal, and the tokens it would have cost. */
export interface Answer {
	content: string | null;
	refusal: string | null;
	promptTokens: number;
	completionTokens: number;
}

export type AnswerOutcome =
	| { ok: true; answer: Answer }
	| { ok: false; status: number; error: ApiError };

interface ChatCompletion {
	id: string;
	object: 'chat.completion';
	created: number;
	model: string;
	choices: {
		index: number;
		message: { role: 'assistant'; content: string | null; refusal: string | null; annotations: unknown[] };
		logprobs: null;
		finish_reason: 'stop';
	}[];
	usage: Usage;
	service_tier: string;
	system_fingerprint: string;
}

interface Usage {
	prompt_tokens: number;
	completion_tokens: number;
	total_tokens: number;
	prompt_tokens_details: { cached_tokens: number };
	completion_tokens_details: { reasoning_tokens: number };
}

/** Mutable state the content faults need: the config and the attempt count of each failing route. */
export interface ChatState {
	config: FakeConfig;
	attempts: Map<string, number>;
}

const PLAN_TASKS = new Set(['plan_clusters', 'plan_pages']);
const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ID_PREFIX = randomBytes(4).toString('hex');
let idSequence = 0;

/** A unique id with the given prefix, cheap enough for ten thousand batch lines. */
export function newId(prefix: string): string {
	idSequence++;
	return `${prefix}${ID_PREFIX}${idSequence.toString(36).padStart(6, '0')}`;
}

/** Builds an `{ error }` payload's inner object. */
export function apiError(message: string, type = 'invalid_request_error', code: string | null = null, param: string | null = null): ApiError {
	return { message, type, param, code };
}

function invalid(message: string, param: string | null = null): { ok: false; status: 400; error: ApiError } {
	return { ok: false, status: 400, error: apiError(message, 'invalid_request_error', null, param) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Validates a `/v1/chat/completions` body the way the real endpoint would, and reads its prompt context. */
export function parseChatRequest(body: unknown): { ok: true; request: ChatRequest } | { ok: false; status: 400; error: ApiError } {
	if (!isRecord(body)) return invalid('The request body must be a JSON object.');
	if (typeof body.model !== 'string' || body.model === '') return invalid("you must provide a model parameter", 'model');
	if (!Array.isArray(body.messages) || body.messages.length === 0) {
		return invalid("'messages' must be a non-empty array.", 'messages');
	}
	if (!body.messages.every((message) => isRecord(message) && typeof message.role === 'string')) {
		return invalid("Every entry of 'messages' needs a 'role'.", 'messages');
	}
	if (body.stream === true) return invalid('Streaming is not supported by this server; send stream: false.', 'stream');
	const messages = body.messages as WireMessage[];
	let format: ChatRequest['format'] = 'text';
	let schemaName: string | null = null;
	let schema: JsonSchema | null = null;
	if (body.response_format !== undefined && body.response_format !== null) {
		const responseFormat = body.response_format;
		if (!isRecord(responseFormat) || !['text', 'json_object', 'json_schema'].includes(String(responseFormat.type))) {
			return invalid("Invalid value for 'response_format.type'.", 'response_format.type');
		}
		format = responseFormat.type as ChatRequest['format'];
		if (format === 'json_object' && !messages.some((message) => /json/i.test(messageText(message)))) {
			return invalid("'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", 'messages');
		}
		if (format === 'json_schema') {
			const spec = responseFormat.json_schema;
			if (!isRecord(spec) || typeof spec.name !== 'string' || !SCHEMA_NAME.test(spec.name)) {
				return invalid("Invalid 'response_format.json_schema.name': expected [a-zA-Z0-9_-]{1,64}.", 'response_format.json_schema.name');
			}
			if (!isRecord(spec.schema)) return invalid("Missing 'response_format.json_schema.schema'.", 'response_format.json_schema.schema');
			if (spec.strict === true) {
				const problems = strictModeProblems(spec.schema);
				if (problems.length > 0) {
					return invalid(`Invalid schema for response_format '${spec.name}': ${problems.join('; ')}`, 'response_format');
				}
			}
			schemaName = spec.name;
			schema = spec.schema;
		}
	}
	const context = extractContext(messages);
	const { task, route } = contextKeys(context);
	return { ok: true, request: { model: body.model, messages, format, schemaName, schema, context, task, route } };
}

function estimateTokens(characters: number): number {
	return Math.max(1, Math.ceil(characters / 4));
}

/** An answer with its token counts, estimated from the prompt and the text given back. */
function answerOf(request: ChatRequest, content: string | null, refusal: string | null = null): Answer {
	const promptChars = request.messages.reduce((sum, message) => sum + messageText(message).length, 0);
	return {
		content,
		refusal,
		promptTokens: estimateTokens(promptChars) + 8,
		completionTokens: estimateTokens((content ?? refusal ?? '').length),
	};
}

function completion(request: ChatRequest, answer: Answer): ChatCompletion {
	const { content, refusal, promptTokens, completionTokens } = answer;
	return {
		id: newId('chatcmpl-'),
		object: 'chat.completion',
		created: Math.floor(Date.now() / 1000),
		model: request.model,
		choices: [
			{
				index: 0,
				message: { role: 'assistant', content, refusal, annotations: [] },
				logprobs: null,
				finish_reason: 'stop',
			},
		],
		usage: {
			prompt_tokens: promptTokens,
			completion_tokens: completionTokens,
			total_tokens: promptTokens + completionTokens,
			prompt_tokens_details: { cached_tokens: 0 },
			completion_tokens_details: { reasoning_tokens: 0 },
		},
		service_tier: 'default',
		system_fingerprint: 'fp_pseo_fake',
	};
}

function plainText(request: ChatRequest): string {
	const last = [...request.messages].reverse().find((message) => message.role === 'user');
	const topic = (last ? messageText(last) : '').replace(/\s+/g, ' ').trim().slice(0, 80);
	return `Here is a short answer about "${topic || 'your question'}". Start with the essentials, compare a few options, and check the details before you decide.`;
}

/** The message content for a request: a replaced responder's answer, a default responder's, or a generic one. */
function produceContent(request: ChatRequest, config: Readonly<FakeConfig>): string {
	const taskKey = request.task ?? (request.schemaName ? TASK_BY_SCHEMA_NAME[request.schemaName] : undefined) ?? null;
	const input: ResponderInput = {
		task: request.task,
		context: request.context ?? {},
		schemaName: request.schemaName,
		schema: request.schema,
		messages: request.messages,
		model: request.model,
		config,
	};
	if (taskKey !== null && Object.hasOwn(config.responders, taskKey)) {
		const value = config.responders[taskKey]?.(input);
		return typeof value === 'string' ? value : JSON.stringify(value);
	}
	const builtin = taskKey !== null && Object.hasOwn(defaultResponders, taskKey) ? defaultResponders[taskKey] : undefined;
	if (request.format === 'json_schema' && request.schema) {
		const value = builtin ? conformToSchema(request.schema, builtin(input)) : generateFromSchema(request.schema);
		return JSON.stringify(value);
	}
	if (request.format === 'json_object') return JSON.stringify(builtin ? builtin(input) : { answer: plainText(request) });
	return plainText(request);
}

/** Blanks the top-level strings of a JSON answer: still JSON, but no usable page (empty title and body). */
function invalidate(content: string): string {
	let value: unknown;
	try {
		value = JSON.parse(content);
	} catch {
		return '{}';
	}
	if (!isRecord(value)) return '{}';
	const out: Record<string, unknown> = {};
	for (const [key, item] of Object.entries(value)) out[key] = typeof item === 'string' ? '' : Array.isArray(item) ? [] : item;
	return JSON.stringify(out);
}

/** The failure a route suffers on this attempt, if any; counts the attempt. */
function routeFailure(request: ChatRequest, customId: string | null, state: ChatState): RouteFailure | null {
	const { failRoutes, failRoutesTimes } = state.config;
	const key = request.route !== null && Object.hasOwn(failRoutes, request.route) ? request.route : customId !== null && Object.hasOwn(failRoutes, customId) ? customId : null;
	if (key === null) return null;
	const attempt = (state.attempts.get(key) ?? 0) + 1;
	state.attempts.set(key, attempt);
	if (failRoutesTimes !== null && attempt > failRoutesTimes) return null;
	return failRoutes[key] ?? null;
}

function taskError(task: string | null, state: ChatState): number | null {
	if (task === null || !Object.hasOwn(state.config.chatErrorsForTask, task)) return null;
	const entry = state.config.chatErrorsForTask[task];
	if (typeof entry === 'number') return entry;
	if (!entry || entry.count <= 0) return null;
	entry.count--;
	return entry.status;
}

/**
 * Answers a validated request, applying the content faults, in no protocol's shape. `customId` is set for batch
 * lines, so `failRoutes` can also name a custom_id.
 */
export function answerRequest(request: ChatRequest, state: ChatState, customId: string | null = null): AnswerOutcome {
	if (state.config.planFail && request.task !== null && PLAN_TASKS.has(request.task)) {
		return { ok: false, status: 500, error: apiError('The server had an error while processing your request.', 'server_error') };
	}
	const forced = taskError(request.task, state);
	if (forced !== null) {
		const type = forced === 429 ? 'requests' : forced >= 500 ? 'server_error' : 'invalid_request_error';
		return { ok: false, status: forced, error: apiError(`Forced ${forced} for task ${request.task}.`, type) };
	}
	const failure = routeFailure(request, customId, state);
	switch (failure) {
		case 'error':
			return { ok: false, status: 500, error: apiError('The server had an error while processing your request.', 'server_error') };
		case 'malformed':
			return { ok: true, answer: answerOf(request, '{"title": "Unfinished answer", "body_markdown": "The text stops her') };
		case 'refusal':
			return { ok: true, answer: answerOf(request, null, "I'm sorry, but I can't help with that request.") };
		case 'invalid': {
			const content = produceContent(request, state.config);
			return { ok: true, answer: answerOf(request, request.format === 'text' ? '' : invalidate(content)) };
		}
		default:
			return { ok: true, answer: answerOf(request, produceContent(request, state.config)) };
	}
}

/** Answers a validated request as a chat completion. */
export function answerChat(request: ChatRequest, state: ChatState, customId: string | null = null): ChatOutcome {
	const outcome = answerRequest(request, state, customId);
	return outcome.ok ? { ok: true, body: completion(request, outcome.answer) } : outcome;
}
