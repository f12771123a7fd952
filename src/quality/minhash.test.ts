import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BANDS, bandKeys, decodeSignature, encodeSignature, countWords, shingleHashes, signatureOf, similarity, SHINGLE_WORDS, wordHashes, words } from './minhash.ts';

/** Exact Jaccard similarity of two texts' shingle sets, to judge the estimate by. */
function jaccard(a: string, b: string): number {
	const x = new Set(shingleHashes(words(a)));
	const y = new Set(shingleHashes(words(b)));
	const shared = [...x].filter((hash) => y.has(hash)).length;
	return shared / (x.size + y.size - shared);
}

/** Deterministic prose: `count` words drawn from a vocabulary by a seeded generator. */
function prose(seed: number, count: number): string {
	const vocabulary = 'garden roof plumber city price quote team local fast careful budget season contract review permit tile paint window door kitchen floor boiler heating solar panel estimate warranty schedule'.split(' ');
	let state = seed;
	return Array.from({ length: count }, () => {
		state = (Math.imul(state, 1103515245) + 12345) >>> 0;
		return vocabulary[state % vocabulary.length];
	}).join(' ');
}

describe('words', () => {
	it('lower-cases, folds accents and keeps letters and digits of every script', () => {
		expect(words('Café Zürich: 24/7 Ärzte, naïve — 東京 «Qualität»')).toEqual(['cafe', 'zurich', '24', '7', 'arzte', 'naive', '東京', 'qualitat']);
	});

	it('keeps an apostrophe inside a word', () => {
		expect(words("Don't stop: it's the plumber’s job")).toEqual(["don't", 'stop', "it's", 'the', 'plumber’s', 'job']);
	});
});

/** 32-bit FNV-1a of a string's UTF-16 code units, written out here as the reference for wordHashes. */
function fnv1a(text: string): number {
	let hash = 0x811c9dc5;
	for (const char of text) for (let i = 0; i < char.length; i++) hash = Math.imul(hash ^ char.charCodeAt(i), 0x01000193);
	return hash >>> 0;
}

/** Random ASCII text rich in what the word rule turns on: case, digits, apostrophes, punctuation, Markdown. */
function asciiNoise(seed: number, length: number): string {
	const alphabet = "aZ9b'  c'D0e-_.,!?'x#[]()/\\\n\t'Yz'19";
	let state = seed;
	let text = '';
	for (let i = 0; i < length; i++) {
		state = (Math.imul(state, 1103515245) + 12345) >>> 0;
		text += alphabet[(state >>> 8) % alphabet.length];
	}
	return text;
}

describe('the ASCII paths', () => {
	it('split ASCII text as the Unicode path does', () => {
		for (let seed = 1; seed <= 300; seed++) {
			const text = asciiNoise(seed, 200);
			// A trailing non-ASCII word sends the text down the Unicode path, and adds one word at the end.
			expect(words(text), text).toEqual(words(`${text} é`).slice(0, -1));
		}
	});

	it('hash the words that words() returns, without building them', () => {
		for (let seed = 1; seed <= 300; seed++) {
			const text = asciiNoise(seed, 200);
			expect(wordHashes(text), text).toEqual(words(text).map(fnv1a));
			expect(countWords(text), text).toBe(words(text).length);
		}
		const unicode = 'Café Zürich: 24/7 Ärzte, naïve — 東京 «Qualität» plumber’s';
		expect(wordHashes(unicode)).toEqual(words(unicode).map(fnv1a));
	});

	it('leave the signatures of earlier releases unchanged', () => {
		// Signatures are stored with posts and compared across releases: these are the previous release's.
		const digest = (text: string) => createHash('sha256').update(encodeSignature(signatureOf(text)!)).digest('hex').slice(0, 16);
		expect(digest("Don't stop: it's the plumber's job. ROCK'N'ROLL a'b9 x''y 12'ab 9'9 Boilers-in-LONDON, 24/7!")).toBe('e75c6263134f5e9b');
		expect(digest('Café Zürich: 24/7 Ärzte, naïve — 東京 «Qualität» plumber’s')).toBe('46b51f769406c5f4');
		expect(digest('one two')).toBe('088b796598881421');
		expect(digest(prose(11, 450))).toBe('24f83e59dce35678');
	});
});

describe('shingleHashes', () => {
	it('has one hash per distinct run of words, and one for a text shorter than a run', () => {
		expect(shingleHashes(words('a b c d e f'))).toHaveLength(6 - SHINGLE_WORDS + 1);
		expect(shingleHashes(words('a b c d a b c d'))).toHaveLength(4);
		expect(shingleHashes(words('just two'))).toHaveLength(1);
		expect(shingleHashes([])).toHaveLength(0);
	});
});

describe('signatureOf and similarity', () => {
	it('gives identical texts similarity 1, and ignores case, accents and punctuation', () => {
		const text = prose(1, 400);
		expect(similarity(signatureOf(text)!, signatureOf(text.toUpperCase().replaceAll(' ', ', '))!)).toBe(1);
	});

	it('has no signature for a text without words', () => {
		expect(signatureOf(' — … ')).toBeNull();
	});

	it('estimates the Jaccard similarity within 0.15 for texts from unrelated to near-identical', () => {
		const base = prose(7, 600).split(' ');
		for (const changed of [0, 30, 120, 300, 600]) {
			const other = [...base];
			// Change `changed` words spread over the text.
			for (let i = 0; i < changed; i++) other[Math.floor((i * base.length) / Math.max(changed, 1))] = `x${i}`;
			const a = base.join(' ');
			const b = other.join(' ');
			expect(Math.abs(similarity(signatureOf(a)!, signatureOf(b)!) - jaccard(a, b)), `${changed} words changed`).toBeLessThan(0.15);
		}
	});

	it('rates two unrelated texts low and a lightly edited copy high', () => {
		const a = prose(3, 500);
		expect(similarity(signatureOf(a)!, signatureOf(prose(4, 500))!)).toBeLessThan(0.2);
		const edited = a.replace(/plumber/g, 'roofer');
		expect(similarity(signatureOf(a)!, signatureOf(edited)!)).toBeGreaterThan(0.5);
	});
});

describe('bandKeys', () => {
	it('gives one key per band, equal where the bands are equal', () => {
		const a = signatureOf(prose(11, 300))!;
		const keys = bandKeys(a);
		expect(keys).toHaveLength(BANDS);
		expect(new Set(keys).size).toBe(BANDS);
		expect(bandKeys(Uint32Array.from(a))).toEqual(keys);
		const b = Uint32Array.from(a);
		b[0] = (b[0]! + 1) >>> 0;
		const other = bandKeys(b);
		expect(other[0]).not.toBe(keys[0]);
		expect(other.slice(1)).toEqual(keys.slice(1));
	});

	it('makes a near-duplicate a candidate and an unrelated page almost never one', () => {
		const a = signatureOf(prose(21, 500))!;
		const near = signatureOf(prose(21, 500).replace(/kitchen/g, 'bathroom'))!;
		const shared = (x: Uint32Array, y: Uint32Array) => bandKeys(x).filter((key) => bandKeys(y).includes(key)).length;
		expect(shared(a, near)).toBeGreaterThan(0);
		let unrelatedCandidates = 0;
		for (let seed = 100; seed < 140; seed++) if (shared(a, signatureOf(prose(seed, 500))!) > 0) unrelatedCandidates++;
		expect(unrelatedCandidates).toBeLessThanOrEqual(2);
	});
});

describe('encodeSignature and decodeSignature', () => {
	it('round-trip a signature, and refuse what is not one', () => {
		const signature = signatureOf(prose(5, 100))!;
		expect(decodeSignature(encodeSignature(signature))).toEqual(signature);
		expect(decodeSignature(null)).toBeNull();
		expect(decodeSignature('')).toBeNull();
		expect(decodeSignature(Buffer.from('short').toString('base64'))).toBeNull();
	});
});
