/**
 * Yields the non-empty lines of a byte stream as they arrive, holding at most one partial line in memory, so a
 * large JSONL file is never read whole. Breaking out of the loop cancels the stream.
 */
export async function* readLines(body: ReadableStream<Uint8Array>, onCancelError?: (error: unknown) => void): AsyncGenerator<string> {
	const reader = body.getReader();
	const decoder = new TextDecoder('utf-8');
	let pending = '';
	let done = false;
	try {
		while (true) {
			const chunk = await reader.read();
			if (chunk.done) break;
			pending += decoder.decode(chunk.value, { stream: true });
			let start = 0;
			let newline = pending.indexOf('\n', start);
			while (newline !== -1) {
				const line = trimLine(pending.slice(start, newline));
				start = newline + 1;
				if (line !== '') yield line;
				newline = pending.indexOf('\n', start);
			}
			pending = pending.slice(start);
		}
		pending += decoder.decode();
		const last = trimLine(pending);
		pending = '';
		if (last !== '') yield last;
		done = true;
	} finally {
		// An early `break` (or a failed consumer) must release the connection rather than leave it half-read.
		if (!done) await reader.cancel().catch((error: unknown) => onCancelError?.(error));
		reader.releaseLock();
	}
}

function trimLine(line: string): string {
	return line.endsWith('\r') ? line.slice(0, -1).trim() : line.trim();
}
