import { describe, expect, it } from 'vitest';
import { arrayLiteral, jsonParameter } from './database.ts';

/* Which path `arrayLiteral` takes; database.db.test.ts reads both back through PostgreSQL. */
describe('arrayLiteral', () => {
	it('writes text, finite numbers and nulls as JSON does, when JSON quotes every element as the literal does', () => {
		expect(arrayLiteral(['a"b', 'c\\d', null, 5, undefined])).toBe('{"a\\"b","c\\\\d",null,5,null}');
		expect(arrayLiteral(['😀', '{x}'])).toBe('{"😀","{x}"}');
		expect(arrayLiteral([])).toBe('{}');
	});

	it('quotes by hand what JSON would escape otherwise, and anything that is not text, a finite number or null', () => {
		// JSON would write \n and \udc00 as escapes, which the literal would read as "n" and "udc00".
		expect(arrayLiteral(['x\ny', 'a"b'])).toBe('{"x\ny","a\\"b"}');
		expect(arrayLiteral(['lone \udc00'])).toBe('{"lone \udc00"}');
		expect(arrayLiteral([1, Number.NaN, null])).toBe('{"1","NaN",NULL}');
		expect(arrayLiteral([{ not: 'text' } as unknown as string])).toBe('{"[object Object]"}');
	});
});

describe('jsonParameter', () => {
	it('writes JSON, with a lone surrogate as U+FFFD and everything else as JSON.stringify does', () => {
		const plain = [{ body: 'a "quote", a \\ backslash, a pair 😀 and a line\nbreak' }];
		expect(jsonParameter(plain)).toBe(JSON.stringify(plain));
		expect(JSON.parse(jsonParameter([{ body: 'lone \ud800 and \udc00 end', pair: '😀' }]))).toEqual([{ body: 'lone \ufffd and \ufffd end', pair: '😀' }]);
		// Text that spells an escape out is text: it takes the slower path and comes back unchanged.
		const spelled = { body: 'the escape \\ud800 in prose' };
		expect(JSON.parse(jsonParameter(spelled))).toEqual(spelled);
	});
});
