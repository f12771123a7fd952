import { SaxesParser } from 'saxes';

export type XmlRootKind = 'urlset' | 'sitemapindex' | 'html' | 'other';

export interface XmlSitemapHandlers {
	/** The root element was seen; returning false stops reading (not a sitemap). */
	onRoot(kind: XmlRootKind, name: string): boolean;
	/** The loc text of a complete `<url>` or `<sitemap>` entry, trimmed; returning false stops reading. */
	onLoc(loc: string): boolean;
}

const STOP = Symbol('stop');
const MAX_ERRORS_BEFORE_ROOT = 10;
const MAX_ERRORS = 1_000;
const KEPT_ERROR_MESSAGES = 3;

/**
 * Streams an XML sitemap through saxes and reports only direct `<url><loc>` / `<sitemap><loc>` children of the
 * root. Names are matched by local name, case-insensitively, so prefixed, missing or odd namespaces all work;
 * extension elements (`image:loc`, `xhtml:link`, `news:*`) sit deeper and are never reported. Text is collected
 * only inside a loc, so a huge text node elsewhere is scanned without being held in memory. Malformed input is
 * reported and parsing goes on; entries are reported when their element closes, so a truncated document keeps
 * exactly its complete entries.
 */
export class XmlSitemapReader {
	readonly #parser = new SaxesParser({ position: false });
	readonly #handlers: XmlSitemapHandlers;
	#depth = 0;
	#kind: XmlRootKind | null = null;
	#inEntry = false;
	#inLoc = false;
	#loc = '';
	#entryLoc: string | null = null;
	#stopped = false;
	#errorCount = 0;
	readonly #errors: string[] = [];
	readonly #collect = (text: string): void => {
		this.#loc += text;
	};

	constructor(handlers: XmlSitemapHandlers) {
		this.#handlers = handlers;
		const parser = this.#parser;
		parser.on('opentag', (tag) => this.#open(tag));
		parser.on('closetag', () => this.#close());
		parser.on('cdata', (text) => {
			if (this.#inLoc) this.#loc += text;
		});
		parser.on('error', (error) => this.#error(error));
	}

	/** True once reading stopped: not a sitemap, a handler asked to stop, or too many errors. */
	get stopped(): boolean {
		return this.#stopped;
	}

	/** The first few well-formedness errors, for logs. */
	get errors(): readonly string[] {
		return this.#errors;
	}

	get errorCount(): number {
		return this.#errorCount;
	}

	write(text: string): void {
		if (this.#stopped) return;
		try {
			this.#parser.write(text);
		} catch (error) {
			if (error !== STOP) throw error;
		}
	}

	end(): void {
		if (this.#stopped) return;
		try {
			this.#parser.close();
		} catch (error) {
			if (error !== STOP) throw error;
		}
		this.#stopped = true;
	}

	#open(tag: { name: string }): void {
		if (this.#stopped) return;
		const depth = ++this.#depth;
		if (depth === 1) {
			// A second root (after a stray close tag) yields nothing, but what came before stands.
			if (this.#kind !== null) return;
			this.#kind = classifyRoot(localName(tag.name));
			if (!this.#handlers.onRoot(this.#kind, tag.name) || this.#kind === 'html' || this.#kind === 'other') this.#stop();
			return;
		}
		if (depth === 2) {
			const name = localName(tag.name);
			this.#inEntry = (this.#kind === 'urlset' && name === 'url') || (this.#kind === 'sitemapindex' && name === 'sitemap');
			this.#entryLoc = null;
			return;
		}
		if (depth === 3 && this.#inEntry && this.#entryLoc === null && localName(tag.name) === 'loc') {
			this.#inLoc = true;
			this.#loc = '';
			this.#parser.on('text', this.#collect);
		}
	}

	#close(): void {
		if (this.#stopped) return;
		const depth = this.#depth--;
		if (depth === 3 && this.#inLoc) {
			this.#inLoc = false;
			this.#parser.off('text');
			this.#entryLoc = this.#loc.trim();
			this.#loc = '';
		} else if (depth === 2 && this.#inEntry) {
			this.#inEntry = false;
			const loc = this.#entryLoc;
			this.#entryLoc = null;
			if (loc && !this.#handlers.onLoc(loc)) this.#stop();
		}
	}

	#error(error: Error): void {
		this.#errorCount++;
		if (this.#errors.length < KEPT_ERROR_MESSAGES) this.#errors.push(error.message);
		const limit = this.#kind === null ? MAX_ERRORS_BEFORE_ROOT : MAX_ERRORS;
		if (this.#errorCount >= limit) this.#stop();
	}

	/** Stops at once: the throw leaves saxes mid-chunk instead of scanning the rest of it for nothing. */
	#stop(): never {
		this.#stopped = true;
		this.#parser.off('text');
		throw STOP;
	}
}

function localName(name: string): string {
	const colon = name.indexOf(':');
	return (colon === -1 ? name : name.slice(colon + 1)).toLowerCase();
}

function classifyRoot(name: string): XmlRootKind {
	if (name === 'urlset' || name === 'sitemapindex' || name === 'html') return name;
	return 'other';
}
