import type { JsonCompletionRequest } from '../types.ts';

/**
 * A request's input tokens as the pacer counts them before the call: a quarter of the characters of its messages and
 * its output schema, which every vendor sends as input too. Close enough for English prompts (OpenAI's rule of
 * thumb), and computed without a tokenizer per vendor; the provider's own count arrives with the answer.
 */
export function estimateInputTokens(request: Pick<JsonCompletionRequest, 'messages' | 'schema'>): number {
	let characters = JSON.stringify(request.schema).length;
	for (const message of request.messages) characters += message.content.length;
	return Math.ceil(characters / 4);
}
