const MAX_LINE_LENGTH = 16 * 1024;

/**
 * Streams a line-oriented document (a plain-text sitemap, robots.txt) and hands each complete line, trimmed and
 * non-empty, to `onLine`; returning false stops reading. A line longer than 16 KiB is skipped without being
 * held in memory. The last line counts even without a final newline.
 */
export class LineReader {
	readonly #onLine: (line: string) => boolean;
	#carry = '';
	#skipping = false;
	#stopped = false;

	constructor(onLine: (line: string) => boolean) {
		this.#onLine = onLine;
	}

	get stopped(): boolean {
		return this.#stopped;
	}

	write(text: string): void {
		let start = 0;
		while (!this.#stopped) {
			const end = nextBreak(text, start);
			if (end === -1) break;
			this.#finish(text.slice(start, end));
			start = end + 1;
		}
		if (this.#stopped) return;
		const rest = text.slice(start);
		if (this.#skipping) return;
		if (this.#carry.length + rest.length > MAX_LINE_LENGTH) {
			this.#carry = '';
			this.#skipping = true;
		} else {
			this.#carry += rest;
		}
	}

	end(): void {
		if (!this.#stopped) this.#finish('');
		this.#stopped = true;
	}

	#finish(tail: string): void {
		const skipped = this.#skipping;
		const line = (this.#carry + tail).trim();
		this.#carry = '';
		this.#skipping = false;
		if (skipped || line === '' || line.length > MAX_LINE_LENGTH) return;
		if (!this.#onLine(line)) this.#stopped = true;
	}
}

/** Index of the next \n or \r at or after `from`, or -1. */
function nextBreak(text: string, from: number): number {
	const lf = text.indexOf('\n', from);
	const cr = text.indexOf('\r', from);
	if (lf === -1) return cr;
	if (cr === -1) return lf;
	return Math.min(lf, cr);
}
