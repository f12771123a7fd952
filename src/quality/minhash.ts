/*
 * Near-duplicate detection by MinHash over word shingles, with locality-sensitive hashing (LSH) bands so that the
 * most similar earlier page is found by an index lookup instead of a comparison with every post of a website.
 *
 * - A page's text is cut into shingles of SHINGLE_WORDS consecutive words (lower case, accents folded).
 * - Its signature keeps, for each of HASHES hash functions, the smallest hash of any shingle. The share of equal
 *   positions in two signatures estimates the Jaccard similarity of the two shingle sets (Broder, 1997).
 * - The signature is cut into BANDS bands of ROWS positions. Two pages become candidates when one band is equal:
 *   with similarity s that happens with probability 1 - (1 - s^ROWS)^BANDS, which is 0.998 at s = 0.8, 0.62 at
 *   s = 0.6, 0.08 at s = 0.4 and 0.001 at s = 0.2. Candidates are then compared by their whole signature.
 */

export const SHINGLE_WORDS = 4;
export const BANDS = 20;
const ROWS = 6;
const HASHES = BANDS * ROWS;
// signatureOf computes four hash functions per pass.
if (HASHES % 4 !== 0) throw new Error('MinHash: the number of hash functions must be a multiple of 4');

/**
 * The hash functions h_i(x) = (a_i·x + b_i) mod 2^32 over a shingle hash x that is already well mixed, with odd
 * multipliers: one multiplication and one addition per shingle and function. The constants are fixed, because
 * stored signatures must stay comparable across releases.
 */
const [MULTIPLIERS, ADDENDS] = (() => {
	const multipliers = new Int32Array(HASHES);
	const addends = new Int32Array(HASHES);
	let state = 0x9e3779b9;
	const next = () => (state = fmix32((state + 0x6d2b79f5) >>> 0));
	for (let i = 0; i < HASHES; i++) {
		multipliers[i] = next() | 1;
		addends[i] = next();
	}
	return [multipliers, addends];
})();

/** Any character outside ASCII: such a text takes the Unicode path of {@link words}. */
const NON_ASCII = /[^\x00-\x7f]/;

/** The words of a text, lower case with accents folded; letters and digits of every script are kept. */
export function words(text: string): string[] {
	// On ASCII, normalisation and mark removal change nothing and the Unicode classes are [a-z0-9]: the same words,
	// several times faster than the Unicode regular expression (the gate splits every page into words three times).
	if (!NON_ASCII.test(text)) return text.toLowerCase().match(/[a-z0-9]+(?:'[a-z]+)?/g) ?? [];
	return (
		text
			.normalize('NFKD')
			.replace(/\p{M}+/gu, '')
			.toLowerCase()
			.match(/[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu) ?? []
	);
}

/**
 * `words(text).map(fnv1a)` without building the words: on ASCII text one pass over the character codes with the
 * rule of {@link words} (a run of letters and digits, then at most one apostrophe followed by letters), else the
 * Unicode path. The signature needs only these hashes, and building 450 strings a page was a third of its cost.
 */
export function wordHashes(text: string): number[] {
	if (NON_ASCII.test(text)) return words(text).map(fnv1a);
	const hashes: number[] = [];
	scanAsciiWords(text, hashes);
	return hashes;
}

/** `words(text).length`, without building the words on ASCII text. */
export function countWords(text: string): number {
	return NON_ASCII.test(text) ? words(text).length : scanAsciiWords(text, null);
}

/** The words of ASCII text by the rule of {@link words}: counted, and their hashes pushed to `hashes` when given. */
function scanAsciiWords(text: string, hashes: number[] | null): number {
	const length = text.length;
	let count = 0;
	// 0: between words; 1: in a run of letters and digits; 2: in the letters after an apostrophe.
	let state = 0;
	let hash = 0;
	for (let i = 0; i < length; i++) {
		const code = lowerAscii(text.charCodeAt(i));
		const letter = code >= 97 && code <= 122;
		if (state === 1) {
			if (letter || (code >= 48 && code <= 57)) {
				hash = Math.imul(hash ^ code, 0x01000193);
				continue;
			}
			if (code === 39 && i + 1 < length && isLowerLetter(lowerAscii(text.charCodeAt(i + 1)))) {
				hash = Math.imul(hash ^ code, 0x01000193);
				state = 2;
				continue;
			}
			hashes?.push(hash >>> 0);
			count++;
			state = 0;
			continue;
		}
		if (state === 2) {
			if (letter) {
				hash = Math.imul(hash ^ code, 0x01000193);
				continue;
			}
			hashes?.push(hash >>> 0);
			count++;
			state = 0;
			// This character may start the next word (a digit right after the letters).
		}
		if (letter || (code >= 48 && code <= 57)) {
			hash = Math.imul(0x811c9dc5 ^ code, 0x01000193);
			state = 1;
		}
	}
	if (state !== 0) {
		hashes?.push(hash >>> 0);
		count++;
	}
	return count;
}

const lowerAscii = (code: number) => (code >= 65 && code <= 90 ? code + 32 : code);
const isLowerLetter = (code: number) => code >= 97 && code <= 122;

/** The distinct 32-bit hashes of the text's shingles (a text shorter than one shingle is one shingle). */
export function shingleHashes(tokens: readonly string[]): Uint32Array {
	return shinglesOf(tokens.map(fnv1a));
}

/** The distinct shingle hashes from the hashes of a text's words, in ascending order. */
function shinglesOf(hashes: readonly number[]): Uint32Array {
	if (hashes.length === 0) return new Uint32Array(0);
	// A shingle's hash combines its words' hashes in order, without building strings. Sorted and deduplicated in a
	// typed array: a Set of numbers above 2^30 boxes each one.
	const count = Math.max(1, hashes.length - SHINGLE_WORDS + 1);
	const shingles = new Uint32Array(count);
	for (let i = 0; i < count; i++) {
		let hash = 0;
		for (let j = i; j < Math.min(i + SHINGLE_WORDS, hashes.length); j++) hash = (Math.imul(hash, 0x01000193) + hashes[j]!) | 0;
		shingles[i] = fmix32(hash >>> 0);
	}
	shingles.sort();
	let distinct = 1;
	for (let i = 1; i < count; i++) if (shingles[i] !== shingles[distinct - 1]) shingles[distinct++] = shingles[i]!;
	return shingles.subarray(0, distinct);
}

/** The MinHash signature of a text: null when the text has no words (nothing to compare). */
export function signatureOf(text: string): Uint32Array | null {
	const shingles = shinglesOf(wordHashes(text));
	if (shingles.length === 0) return null;
	const signature = new Uint32Array(HASHES);
	const count = shingles.length;
	// Four hash functions per pass over the shingles: each shingle is read once for four, and the four minimums
	// stay in registers. The same minimums as one function per pass, in about half the time.
	for (let i = 0; i < HASHES; i += 4) {
		const a0 = MULTIPLIERS[i]!, a1 = MULTIPLIERS[i + 1]!, a2 = MULTIPLIERS[i + 2]!, a3 = MULTIPLIERS[i + 3]!;
		const b0 = ADDENDS[i]!, b1 = ADDENDS[i + 1]!, b2 = ADDENDS[i + 2]!, b3 = ADDENDS[i + 3]!;
		let m0 = 0xffffffff, m1 = 0xffffffff, m2 = 0xffffffff, m3 = 0xffffffff;
		for (let j = 0; j < count; j++) {
			const x = shingles[j]!;
			const v0 = (Math.imul(a0, x) + b0) >>> 0;
			const v1 = (Math.imul(a1, x) + b1) >>> 0;
			const v2 = (Math.imul(a2, x) + b2) >>> 0;
			const v3 = (Math.imul(a3, x) + b3) >>> 0;
			if (v0 < m0) m0 = v0;
			if (v1 < m1) m1 = v1;
			if (v2 < m2) m2 = v2;
			if (v3 < m3) m3 = v3;
		}
		signature[i] = m0;
		signature[i + 1] = m1;
		signature[i + 2] = m2;
		signature[i + 3] = m3;
	}
	return signature;
}

/** Estimated Jaccard similarity of the texts behind two signatures, from 0 to 1. */
export function similarity(a: Uint32Array, b: Uint32Array): number {
	if (a.length !== b.length || a.length === 0) return 0;
	let equal = 0;
	for (let i = 0; i < a.length; i++) if (a[i] === b[i]) equal++;
	return equal / a.length;
}

/** The LSH keys of a signature, one per band: the band's number and a hash of its rows. */
export function bandKeys(signature: Uint32Array): string[] {
	const keys: string[] = [];
	for (let band = 0; band < BANDS; band++) keys.push(`${band.toString(36)}.${bandHash(signature, band).toString(36)}`);
	return keys;
}

/**
 * The same keys as numbers (band × 2^32 + the band's hash, exact in a double), for in-memory lookups that should not
 * allocate twenty strings per page.
 */
export function bandNumbers(signature: Uint32Array): Float64Array {
	const keys = new Float64Array(BANDS);
	for (let band = 0; band < BANDS; band++) keys[band] = band * 0x1_0000_0000 + bandHash(signature, band);
	return keys;
}

function bandHash(signature: Uint32Array, band: number): number {
	let hash = 0x811c9dc5 ^ band;
	for (let row = 0; row < ROWS; row++) hash = fmix32((hash ^ signature[band * ROWS + row]!) >>> 0);
	return hash;
}

/** A signature as stored: base64 of its little-endian bytes. */
export function encodeSignature(signature: Uint32Array): string {
	const bytes = new Uint8Array(signature.length * 4);
	const view = new DataView(bytes.buffer);
	signature.forEach((value, i) => view.setUint32(i * 4, value, true));
	return Buffer.from(bytes).toString('base64');
}

/** A stored signature back; null when it is missing or not one of ours (another length). */
export function decodeSignature(encoded: unknown): Uint32Array | null {
	if (typeof encoded !== 'string' || encoded === '') return null;
	const bytes = Buffer.from(encoded, 'base64');
	if (bytes.length !== HASHES * 4) return null;
	const signature = new Uint32Array(HASHES);
	for (let i = 0; i < HASHES; i++) signature[i] = bytes.readUInt32LE(i * 4);
	return signature;
}

/** 32-bit FNV-1a of a string's UTF-16 code units. */
function fnv1a(text: string): number {
	let hash = 0x811c9dc5;
	for (let i = 0; i < text.length; i++) {
		hash ^= text.charCodeAt(i);
		hash = Math.imul(hash, 0x01000193);
	}
	return hash >>> 0;
}

/** MurmurHash3's finaliser: spreads every input bit over the output, so seeded variants act as independent hashes. */
function fmix32(value: number): number {
	let h = value;
	h ^= h >>> 16;
	h = Math.imul(h, 0x85ebca6b);
	h ^= h >>> 13;
	h = Math.imul(h, 0xc2b2ae35);
	h ^= h >>> 16;
	return h >>> 0;
}
