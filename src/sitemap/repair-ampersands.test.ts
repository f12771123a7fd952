import { describe, expect, it } from 'vitest';
import { AmpersandRepair } from './repair-ampersands.ts';

function run(text: string, size: number): string {
	const repair = new AmpersandRepair();
	let out = '';
	for (let at = 0; at < text.length; at += size) out += repair.write(text.slice(at, at + size));
	return out + repair.end();
}

describe('AmpersandRepair', () => {
	it('escapes bare ampersands and leaves references alone, whatever the chunking', () => {
		const input = '<loc>https://ex.com/?a=1&b=2&amp;c=3&#38;d&#x26;e&f;g &</loc>';
		const expected = '<loc>https://ex.com/?a=1&amp;b=2&amp;c=3&#38;d&#x26;e&f;g &amp;</loc>';
		for (const size of [1, 2, 3, 5, 8, 1000]) expect(run(input, size)).toBe(expected);
	});

	it('leaves CDATA sections untouched, even split across chunks', () => {
		const input = '<a>x&y<![CDATA[ p?a=1&b=2 ]]]>z&w</a>';
		const expected = '<a>x&amp;y<![CDATA[ p?a=1&b=2 ]]]>z&amp;w</a>';
		for (const size of [1, 2, 4, 7, 1000]) expect(run(input, size)).toBe(expected);
	});

	it('passes text without ampersands through unchanged', () => {
		const input = '<urlset><url><loc>https://ex.com/plain</loc></url></urlset>';
		expect(run(input, 9)).toBe(input);
	});
});
