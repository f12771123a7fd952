/** Reads the structured context the product puts in a fenced ```json block of the last user message. */

/** A chat message as it arrives on the wire (content as text or as typed parts). */
export interface WireMessage {
	role: string;
	content?: unknown;
}

/** The text of a message, joining text parts when the content is an array of parts. */
export function messageText(message: WireMessage): string {
	if (typeof message.content === 'string') return message.content;
	if (Array.isArray(message.content)) {
		return message.content
			.map((part: unknown) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
			.join('\n');
	}
	return '';
}

const FENCE = /```json[ \t]*\r?\n([\s\S]*?)\r?\n?```/g;

/**
 * The object in the last ```json fence of the last user message, or, when there is no fence, the whole message if
 * it is a JSON object; null when neither parses to an object.
 */
export function extractContext(messages: readonly WireMessage[]): Record<string, unknown> | null {
	const lastUser = [...messages].reverse().find((message) => message.role === 'user');
	if (!lastUser) return null;
	const text = messageText(lastUser);
	const blocks = [...text.matchAll(FENCE)].map((match) => match[1] ?? '');
	const candidates = blocks.length > 0 ? blocks.reverse() : [text];
	for (const candidate of candidates) {
		try {
			const parsed: unknown = JSON.parse(candidate);
			if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
		} catch {
			// Not JSON: try the next block.
		}
	}
	return null;
}

/** The `task` and `route` named by a context, for the request log and per-route faults. */
export function contextKeys(context: Record<string, unknown> | null): { task: string | null; route: string | null } {
	return {
		task: typeof context?.task === 'string' ? context.task : null,
		route: typeof context?.route === 'string' ? context.route : null,
	};
}
