/**
 * The Gemini API's `POST /v1beta/models/{model}:generateContent` over the same answering core as chat completions:
 * the system instruction and the contents become a ChatRequest (model turns as assistant turns), the answer comes
 * from `answerRequest`, and goes back as a candidate with Gemini's finish reasons, usage metadata and error shape.
 * The Batch API's routes (`:batchGenerateContent`, `/v1beta/batches...`) answer through the same core (google-batches.ts).
 */
import { answerRequest, apiError, newId } from './chat.ts';
import type { Answer, ApiError, ChatRequest, ChatState } from './chat.ts';
import type { JsonSchema } from './json-schema.ts';
import { contextKeys, extractContext } from './prompt-context.ts';
import type { WireMessage } from './prompt-context.ts';

/** The canonical error codes the Gemini API puts in `error.status`, by HTTP status. */
type GoogleStatus =
	| 'INVALID_ARGUMENT'
	| 'UNAUTHENTICATED'
	| 'PERMISSION_DENIED'
	| 'NOT_FOUND'
	| 'RESOURCE_EXHAUSTED'
	| 'INTERNAL'
	| 'UNAVAILABLE'
	| 'DEADLINE_EXCEEDED';

/** The body of a Gemini API error response. */
interface GoogleErrorBody {
	error: { code: number; message: string; status: GoogleStatus; details?: Record<string, unknown>[] };
}

type FinishReason = 'STOP' | 'SAFETY';

/** The wire shape of a `generateContent` answer, as far as this server fills it. */
export interface GenerateContentResponse {
	candidates: {
		content?: { role: 'model'; parts: { text: string }[] };
		finishReason: FinishReason;
		index: number;
		safetyRatings?: { category: string; probability: string; blocked?: boolean }[];
	}[];
	usageMetadata: { promptTokenCount: number; candidatesTokenCount: number; totalTokenCount: number };
	modelVersion: string;
	responseId: string;
}

type GenerateOutcome = { ok: true; response: GenerateContentResponse } | { ok: false; status: number; error: ApiError };

type Invalid = { ok: false; status: 400; error: ApiError };

/** The Gemini API's paths, its Files API's upload and download included. */
const GOOGLE_PATH = /^\/(?:upload\/|download\/)?v1beta\//;

/** `POST /v1beta/models/{model}:generateContent`; model names carry dots (`gemini-2.5-flash`). */
export const GENERATE_CONTENT_PATH = /^\/v1beta\/models\/([A-Za-z0-9._-]+):generateContent$/;

/** `POST /v1beta/models/{model}:batchGenerateContent`: a batch, of inline requests or of an uploaded file (google-batches.ts). */
export const BATCH_GENERATE_CONTENT_PATH = /^\/v1beta\/models\/([A-Za-z0-9._-]+):batchGenerateContent$/;

/** True for the routes that speak the Gemini API's protocol, so that their errors take its shape. */
export function isGooglePath(path: string): boolean {
	return GOOGLE_PATH.test(path);
}

/** The canonical code the real API sends with a status; the status decides, whatever produced the error. */
function googleStatus(status: number): GoogleStatus {
	switch (status) {
		case 401:
			return 'UNAUTHENTICATED';
		case 403:
			return 'PERMISSION_DENIED';
		case 404:
			return 'NOT_FOUND';
		case 429:
			return 'RESOURCE_EXHAUSTED';
		case 503:
			return 'UNAVAILABLE';
		case 504:
			return 'DEADLINE_EXCEEDED';
		default:
			return status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT';
	}
}

/**
 * The message the real API sends for the faults this server injects; the answering core words them as OpenAI does,
 * and a Gemini client should see Google's words.
 */
function googleMessage(status: number, message: string): string {
	if (status === 429) return 'Resource has been exhausted (e.g. check quota).';
	if (status === 503) return 'The model is overloaded. Please try again later.';
	if (status >= 500) return 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting';
	return message;
}

/**
 * An error body in Google's shape. A 429 carries the wait as a `RetryInfo` detail, where the real API puts it, when
 * the server asks for one.
 */
export function googleErrorBody(status: number, message: string, retryAfterS: number | null = null): GoogleErrorBody {
	const body: GoogleErrorBody = { error: { code: status, message: googleMessage(status, message), status: googleStatus(status) } };
	if (status === 429 && retryAfterS !== null) {
		body.error.details = [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfterS}s` }];
	}
	return body;
}

/** The error the real API sends when a request carries no key. */
export const MISSING_KEY_MESSAGE =
	"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.";

function invalid(message: string): Invalid {
	return { ok: false, status: 400, error: apiError(message) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The text of a Content's parts, or null when they are not a list of parts. Only text parts carry words here. */
function partsText(parts: unknown): string | null {
	if (!Array.isArray(parts) || !parts.every(isRecord)) return null;
	return parts.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
}

/** `responseSchema` is Google's OpenAPI subset, with upper-case types; the schema tools here read JSON Schema. */
function fromOpenApiSchema(schema: unknown): unknown {
	if (Array.isArray(schema)) return schema.map(fromOpenApiSchema);
	if (!isRecord(schema)) return schema;
	const out: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(schema)) {
		out[key] = key === 'type' && typeof value === 'string' ? value.toLowerCase() : key === 'enum' ? value : fromOpenApiSchema(value);
	}
	return out;
}

/** Validates a `generateContent` body for `model` and reads its prompt context. */
export function parseGenerateContentRequest(model: string, body: unknown): { ok: true; request: ChatRequest } | Invalid {
	if (!isRecord(body)) return invalid('Invalid JSON payload received. The request body must be a JSON object.');
	if (!Array.isArray(body.contents) || body.contents.length === 0) return invalid('* GenerateContentRequest.contents: contents is not specified');
	const turns: WireMessage[] = [];
	for (const [index, content] of body.contents.entries()) {
		if (!isRecord(content)) return invalid(`* GenerateContentRequest.contents[${index}]: must be an object`);
		const role = content.role ?? 'user';
		if (role !== 'user' && role !== 'model') return invalid(`Please use a valid role: user, model. Got contents[${index}].role: ${String(role)}`);
		const text = partsText(content.parts);
		if (text === null || (content.parts as unknown[]).length === 0) return invalid(`* GenerateContentRequest.contents[${index}].parts: contents.parts must not be empty.`);
		turns.push({ role: role === 'model' ? 'assistant' : 'user', content: text });
	}
	const system: WireMessage[] = [];
	if (body.systemInstruction !== undefined) {
		const text = isRecord(body.systemInstruction) ? partsText(body.systemInstruction.parts) : null;
		if (text === null) return invalid('* GenerateContentRequest.system_instruction.parts: must be a list of parts');
		system.push({ role: 'system', content: text });
	}
	let format: ChatRequest['format'] = 'text';
	let schema: JsonSchema | null = null;
	const config = body.generationConfig;
	if (config !== undefined) {
		if (!isRecord(config)) return invalid('* GenerateContentRequest.generation_config: must be an object');
		const { responseMimeType, responseSchema, responseJsonSchema } = config;
		if (responseSchema !== undefined && responseJsonSchema !== undefined) {
			return invalid('* GenerateContentRequest.generation_config: response_schema and response_json_schema cannot both be set.');
		}
		const given = responseJsonSchema ?? (responseSchema === undefined ? undefined : fromOpenApiSchema(responseSchema));
		if (given !== undefined) {
			if (responseMimeType !== 'application/json') {
				return invalid('* GenerateContentRequest.generation_config.response_mime_type: a response schema requires response_mime_type application/json.');
			}
			if (!isRecord(given)) return invalid('* GenerateContentRequest.generation_config.response_json_schema: must be a JSON schema object');
			schema = given as JsonSchema;
			format = 'json_schema';
		} else if (responseMimeType === 'application/json') {
			format = 'json_object';
		}
	}
	// The system instruction counts towards the prompt's tokens, and responders see it where OpenAI callers put it.
	const messages = [...system, ...turns];
	const context = extractContext(messages);
	const { task, route } = contextKeys(context);
	return { ok: true, request: { model, messages, format, schemaName: null, schema, context, task, route } };
}

/** Wraps an answer as a `generateContent` response; a refusal is `finishReason: 'SAFETY'` with no content at all. */
function toResponse(request: ChatRequest, answer: Answer): GenerateContentResponse {
	const refused = answer.content === null;
	const candidate: GenerateContentResponse['candidates'][number] = refused
		? {
				finishReason: 'SAFETY',
				index: 0,
				safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true }],
			}
		: { content: { role: 'model', parts: [{ text: answer.content ?? '' }] }, finishReason: 'STOP', index: 0 };
	return {
		candidates: [candidate],
		usageMetadata: {
			promptTokenCount: answer.promptTokens,
			candidatesTokenCount: answer.completionTokens,
			totalTokenCount: answer.promptTokens + answer.completionTokens,
		},
		modelVersion: request.model,
		responseId: newId('resp_'),
	};
}

/**
 * Answers a validated request as a `generateContent` response, with the same content faults as chat completions.
 * `key` is a batch request's `metadata.key`, so that `failRoutes` can name it as it names a custom_id.
 */
export function answerGenerateContent(request: ChatRequest, state: ChatState, key: string | null = null): GenerateOutcome {
	const outcome = answerRequest(request, state, key);
	return outcome.ok ? { ok: true, response: toResponse(request, outcome.answer) } : outcome;
}

/** A response's usage in the chat-completion terms the request log records. */
export function generateUsageForLog(response: GenerateContentResponse): { prompt_tokens: number; completion_tokens: number } {
	return { prompt_tokens: response.usageMetadata.promptTokenCount, completion_tokens: response.usageMetadata.candidatesTokenCount };
}
