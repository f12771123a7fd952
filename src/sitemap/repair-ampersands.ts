const BARE_AMPERSAND = /&(?!(?:[A-Za-z_][\w.-]{0,31}|#\d{1,8}|#x[\dA-Fa-f]{1,8});)/g;
const CDATA_OPEN = '<![CDATA[';
const CDATA_CLOSE = ']]>';
/** The longest reference kept whole: "&" + 32 name characters + ";". */
const LONGEST_REFERENCE = 34;

/**
 * Escapes bare `&` (as in `?a=1&b=2`, common in hand-made sitemaps) as `&amp;` before the text reaches the
 * strict XML parser, which would otherwise read everything up to the next `;` as one entity name and lose the
 * rest of the document. Well-formed references and CDATA sections pass untouched. Streaming: a reference or
 * CDATA marker split across chunks is held back until the next chunk or `end()`.
 */
export class AmpersandRepair {
	#inCdata = false;
	#carry = '';

	/** Returns the repaired text that is safe to parse now. */
	write(text: string): string {
		return this.#process(this.#carry + text, false);
	}

	/** Returns whatever was held back, repaired. */
	end(): string {
		return this.#process(this.#carry, true);
	}

	#process(input: string, final: boolean): string {
		this.#carry = '';
		let out = '';
		let at = 0;
		while (at < input.length) {
			if (this.#inCdata) {
				const close = input.indexOf(CDATA_CLOSE, at);
				if (close === -1) {
					// Keep the last two characters: they may be the start of a split "]]>".
					const safe = final ? input.length : Math.max(at, input.length - (CDATA_CLOSE.length - 1));
					out += input.slice(at, safe);
					this.#carry = input.slice(safe);
					return out;
				}
				out += input.slice(at, close + CDATA_CLOSE.length);
				at = close + CDATA_CLOSE.length;
				this.#inCdata = false;
				continue;
			}
			const open = input.indexOf(CDATA_OPEN, at);
			if (open !== -1) {
				out += repair(input.slice(at, open)) + CDATA_OPEN;
				at = open + CDATA_OPEN.length;
				this.#inCdata = true;
				continue;
			}
			const hold = final ? input.length : holdBackFrom(input, at);
			out += repair(input.slice(at, hold));
			this.#carry = input.slice(hold);
			return out;
		}
		return out;
	}
}

function repair(text: string): string {
	return text.includes('&') ? text.replace(BARE_AMPERSAND, '&amp;') : text;
}

/** Where the unfinished tail of `input` starts: a possible "<![CDATA[" or an "&" whose ";" may still come. */
function holdBackFrom(input: string, from: number): number {
	let hold = input.length;
	const lt = input.lastIndexOf('<');
	if (lt >= from && lt > input.length - CDATA_OPEN.length && CDATA_OPEN.startsWith(input.slice(lt))) hold = lt;
	const amp = input.lastIndexOf('&');
	if (amp >= from && amp > input.length - LONGEST_REFERENCE && !input.includes(';', amp)) hold = Math.min(hold, amp);
	return hold;
}
