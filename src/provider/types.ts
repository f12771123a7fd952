/** One chat message as the provider takes it. */
export interface ChatMessage {
	role: 'system' | 'user' | 'assistant';
	content: string;
}

/** A request for one JSON object that must satisfy a strict json_schema. */
export interface JsonCompletionRequest {
	/** json_schema name, `[a-zA-Z0-9_-]{1,64}`. */
	schemaName: string;
	/** A strict-mode JSON schema (every property required, additionalProperties false). */
	schema: Record<string, unknown>;
	messages: ChatMessage[];
	/**
	 * Checks the parsed object beyond the schema (lengths, allowed routes...). Returns an error message when the
	 * output is unusable; the provider then retries like any other transient fault.
	 */
	validate?: (value: unknown) => string | null;
	signal?: AbortSignal;
	/** Structured fields for log lines about this call, such as `{ jobId, route }`. */
	logContext?: Record<string, unknown>;
}

/** A chat-completions provider that returns validated JSON objects. */
export interface JsonProvider {
	completeJson<T = unknown>(request: JsonCompletionRequest): Promise<T>;
}
