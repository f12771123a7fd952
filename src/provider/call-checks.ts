import type { JsonCompletionRequest } from './types.ts';

/*
 * Argument checks every provider makes alike, so that a programming error fails at once with a TypeError naming
 * the value, before any network use.
 */

const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function positiveInteger(name: string, value: unknown, fallback: number, min = 1): number {
	if (value === undefined) return fallback;
	if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
		throw new TypeError(`Expected \`${name}\` to be an integer >= ${min}, got \`${String(value)}\` (${typeof value})`);
	}
	return value;
}

export function checkId(name: string, value: unknown): void {
	if (typeof value !== 'string' || value === '') {
		throw new TypeError(`Expected \`${name}\` to be a non-empty string, got \`${String(value)}\` (${typeof value})`);
	}
}

/** The arguments of a lookup of batches by metadata: a key, and the value it must hold. */
export function checkLookup(key: unknown, value: unknown): void {
	checkId('key', key);
	if (typeof value !== 'string') throw new TypeError(`Expected \`value\` to be a string, got \`${String(value)}\` (${typeof value})`);
}

export function checkRequest(request: JsonCompletionRequest): void {
	if (typeof request !== 'object' || request === null) {
		throw new TypeError(`Expected a completion request object, got \`${String(request)}\``);
	}
	if (typeof request.schemaName !== 'string' || !SCHEMA_NAME.test(request.schemaName)) {
		throw new TypeError(`Expected \`schemaName\` to match ${SCHEMA_NAME}, got \`${String(request.schemaName)}\``);
	}
	if (typeof request.schema !== 'object' || request.schema === null || Array.isArray(request.schema)) {
		throw new TypeError(`Expected \`schema\` to be a JSON schema object, got \`${String(request.schema)}\``);
	}
	if (!Array.isArray(request.messages) || request.messages.length === 0) {
		throw new TypeError(`Expected \`messages\` to be a non-empty array, got \`${String(request.messages)}\``);
	}
	request.messages.forEach((message, index) => {
		if (!['system', 'user', 'assistant'].includes(message?.role) || typeof message?.content !== 'string') {
			throw new TypeError(`Expected messages[${index}] to be { role: system|user|assistant, content: string }, got \`${JSON.stringify(message)?.slice(0, 80)}\``);
		}
	});
	if (request.validate !== undefined && typeof request.validate !== 'function') {
		throw new TypeError(`Expected \`validate\` to be a function, got ${typeof request.validate}`);
	}
}
