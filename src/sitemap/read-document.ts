import { TextDecoder } from 'node:util';
import { BodyLimitError } from './decode-body.ts';
import { BodyReadError } from './guarded-fetch.ts';
import type { FetchFailureKind } from './guarded-fetch.ts';
import { AmpersandRepair } from './repair-ampersands.ts';
import { LineReader } from './text-sitemap-reader.ts';
import { XmlSitemapReader } from './xml-sitemap-reader.ts';
import type { XmlRootKind } from './xml-sitemap-reader.ts';
import { resolveHttpUrl } from './urls.ts';

/** What a document turned out to be. Only `urlset`, `sitemapindex` and `text` are sitemaps. */
export type DocumentKind = XmlRootKind | 'text' | 'refused' | 'empty';

export interface DocumentReport {
	kind: DocumentKind;
	/** Set when the body ended early (size cap, deadline, broken connection or gzip); complete entries stand. */
	interruption: { kind: FetchFailureKind | 'max-bytes'; message: string } | null;
	/** Number of well-formedness errors and the first few messages (XML only). */
	errorCount: number;
	errors: readonly string[];
}

/** True for the kinds that count as a sitemap. */
export function isSitemapKind(kind: string): boolean {
	return kind === 'urlset' || kind === 'sitemapindex' || kind === 'text';
}

/**
 * Reads one decoded body as it streams and calls `onEntry` with each entry as an absolute http(s) URL (a page in
 * a urlset or text sitemap, a child sitemap in an index); `onEntry` returning false stops reading. Leading BOM
 * and whitespace are skipped; a body starting with `<` is XML, anything else is read as one URL per line.
 * Any document containing `<!DOCTYPE` or `<!ENTITY` is refused: `kind` becomes `html` for an HTML doctype and
 * `refused` otherwise, and the caller must drop what it received. `onEntry` also receives the kind, which is
 * known by the time the first entry arrives.
 */
export async function readDocument(
	body: AsyncIterable<Buffer>,
	documentUrl: string,
	onEntry: (url: string, kind: DocumentKind) => boolean,
): Promise<DocumentReport> {
	const state: { kind: DocumentKind; reader: XmlSitemapReader | LineReader | null; repair: AmpersandRepair | null } = {
		kind: 'empty',
		reader: null,
		repair: null,
	};
	let decoder: TextDecoder | null = null;
	let interruption: DocumentReport['interruption'] = null;
	const guard = new DeclarationGuard();

	const xml = (): XmlSitemapReader =>
		new XmlSitemapReader({
			onRoot(root) {
				state.kind = root;
				return true;
			},
			onLoc(loc) {
				const url = resolveHttpUrl(loc, documentUrl);
				return url === null || onEntry(url, state.kind);
			},
		});
	const lines = (): LineReader => {
		state.kind = 'other';
		return new LineReader((line) => {
			if (!/^https?:\/\//i.test(line)) return true;
			const url = resolveHttpUrl(line, documentUrl);
			if (url === null) return true;
			state.kind = 'text';
			return onEntry(url, state.kind);
		});
	};

	const feed = (text: string): boolean => {
		if (text === '') return true;
		const declaration = guard.found(text);
		if (declaration !== null) {
			// An HTML page is a common soft 404; a DTD is never needed by a sitemap and may be an attack.
			state.kind = declaration === 'html' ? 'html' : 'refused';
			return false;
		}
		if (state.reader === null) {
			const start = firstSignificant(text);
			if (start === -1) return true;
			const isXml = text[start] === '<';
			state.reader = isXml ? xml() : lines();
			if (isXml) state.repair = new AmpersandRepair();
			text = text.slice(start);
		}
		state.reader.write(state.repair ? state.repair.write(text) : text);
		return !state.reader.stopped;
	};

	try {
		for await (const chunk of body) {
			decoder ??= new TextDecoder(sniffEncoding(chunk));
			if (!feed(decoder.decode(chunk, { stream: true }))) break;
		}
		if (state.kind !== 'refused' && state.kind !== 'html' && feed(decoder?.decode() ?? '')) {
			if (guard.pending()) state.kind = 'refused';
			else {
				if (state.repair) state.reader?.write(state.repair.end());
				state.reader?.end();
			}
		}
	} catch (error) {
		if (error instanceof BodyLimitError) interruption = { kind: 'max-bytes', message: error.message };
		else if (error instanceof BodyReadError) interruption = { kind: error.kind, message: error.message };
		else throw error;
	}
	const xmlReader = state.reader instanceof XmlSitemapReader ? state.reader : null;
	return { kind: state.kind, interruption, errorCount: xmlReader?.errorCount ?? 0, errors: xmlReader?.errors ?? [] };
}

/** Finds `<!DOCTYPE` and `<!ENTITY` (any case), also when split across chunks; tells an HTML doctype apart. */
class DeclarationGuard {
	#tail = '';

	found(text: string): 'html' | 'declaration' | null {
		// Fast path for the usual chunk: no "<!" inside it and none that could straddle the boundary.
		if (text.indexOf('<!') === -1 && !this.#tail.includes('<!') && !this.#tail.endsWith('<')) {
			this.#tail = text.length >= 13 ? text.slice(-13) : (this.#tail + text).slice(-13);
			return null;
		}
		const haystack = this.#tail + text;
		for (let at = haystack.indexOf('<!'); at !== -1; at = haystack.indexOf('<!', at + 2)) {
			const word = haystack.slice(at + 2, at + 14).toUpperCase();
			if (word.startsWith('DOCTYPE')) {
				// Wait for the name unless the text ends first: "<!DOCTYPE html" is a page, anything else a DTD.
				if (word.length < 12 && at + 14 > haystack.length) {
					this.#tail = haystack.slice(at);
					return null;
				}
				return /^DOCTYPE\s+HTML\b/.test(word) ? 'html' : 'declaration';
			}
			if (word.startsWith('ENTITY')) return 'declaration';
		}
		// Long enough to hold any unfinished "<!DOCTYPE html" at the end.
		this.#tail = haystack.slice(-13);
		return null;
	}

	/** At the end of the body, an unfinished doctype still counts. */
	pending(): boolean {
		return this.#tail.toUpperCase().includes('<!DOCTYPE');
	}
}

function sniffEncoding(first: Buffer): string {
	if (first[0] === 0xff && first[1] === 0xfe) return 'utf-16le';
	if (first[0] === 0xfe && first[1] === 0xff) return 'utf-16be';
	return 'utf-8';
}

/** Index of the first character that is not whitespace or a BOM, or -1. */
function firstSignificant(text: string): number {
	for (let i = 0; i < text.length; i++) {
		const code = text.charCodeAt(i);
		if (code !== 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d && code !== 0xfeff) return i;
	}
	return -1;
}
