import { describe, expect, it } from 'vitest';
import { readLines } from './line-reader.ts';

function streamOf(chunks: (string | Uint8Array)[], onCancel?: () => void): ReadableStream<Uint8Array> {
	const encoder = new TextEncoder();
	let i = 0;
	return new ReadableStream<Uint8Array>({
		pull(controller) {
			const chunk = chunks[i++];
			if (chunk === undefined) controller.close();
			else controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
		},
		cancel() {
			onCancel?.();
		},
	});
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<string[]> {
	const lines: string[] = [];
	for await (const line of readLines(stream)) lines.push(line);
	return lines;
}

describe('readLines', () => {
	it('joins lines split across chunks, handles CRLF, skips blank lines and keeps a last line without newline', async () => {
		expect(await collect(streamOf(['{"a":', '1}\r\n\n{"b"', ':2}\n', '\n', '{"c":3}']))).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
	});

	it('decodes multi-byte characters split between chunks', async () => {
		const bytes = new TextEncoder().encode('{"t":"Grüße 🌍"}\n');
		const cut = bytes.indexOf(0xc3) + 1; // inside "ü"
		const emoji = bytes.indexOf(0xf0) + 2; // inside the emoji
		expect(await collect(streamOf([bytes.slice(0, cut), bytes.slice(cut, emoji), bytes.slice(emoji)]))).toEqual(['{"t":"Grüße 🌍"}']);
	});

	it('yields nothing for an empty stream', async () => {
		expect(await collect(streamOf([]))).toEqual([]);
	});

	it('cancels the stream when the consumer stops early', async () => {
		let cancelled = false;
		const stream = streamOf(['1\n2\n3\n', '4\n'], () => {
			cancelled = true;
		});
		for await (const line of readLines(stream)) {
			if (line === '2') break;
		}
		expect(cancelled).toBe(true);
	});

	it('passes on a stream error', async () => {
		const stream = new ReadableStream<Uint8Array>({
			start(controller) {
				controller.enqueue(new TextEncoder().encode('ok\n'));
				controller.error(new Error('socket hang up'));
			},
		});
		const lines: string[] = [];
		await expect(
			(async () => {
				for await (const line of readLines(stream)) lines.push(line);
			})(),
		).rejects.toThrow('socket hang up');
	});
});
