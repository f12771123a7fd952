import { describe, expect, it } from 'vitest';
import { factLabel, factsFromRow, factsOf, factsProblem, factText, sameFacts } from './facts.ts';

describe('factsFromRow', () => {
	it('takes every column, values of the type they came with, text trimmed; nulls and blanks are left out', () => {
		expect(factsFromRow({ city: ' Leeds ', population: 812000, open: false, note: '', none: null, gone: undefined })).toEqual({ city: 'Leeds', population: 812000, open: false });
	});

	it('takes the listed columns in the list\'s order, and gives null when nothing is left', () => {
		expect(Object.keys(factsFromRow({ a: 1, b: 2, c: 3 }, ['c', 'a'])!)).toEqual(['c', 'a']);
		expect(factsFromRow({ a: 1 }, [])).toBeNull();
		expect(factsFromRow({ a: '', b: null })).toBeNull();
		expect(factsFromRow({ a: Number.NaN })).toBeNull();
	});
});

describe('factsProblem', () => {
	it('accepts null and flat objects of text, numbers and booleans', () => {
		expect(factsProblem(null)).toBeNull();
		expect(factsProblem(undefined)).toBeNull();
		expect(factsProblem({})).toBeNull();
		expect(factsProblem({ city: 'Leeds', population: 812000, open: true })).toBeNull();
	});

	it('names what is wrong', () => {
		expect(factsProblem([1])).toBe('"facts" must be an object of name to value, received an array.');
		expect(factsProblem('x')).toBe('"facts" must be an object of name to value, received a string.');
		expect(factsProblem({ prices: { low: 1 } })).toBe('"facts.prices" must be a string, a number or a boolean, received an object.');
		expect(factsProblem({ list: [1] })).toBe('"facts.list" must be a string, a number or a boolean, received an array.');
		expect(factsProblem({ gone: null })).toBe('"facts.gone" must be a string, a number or a boolean, received null.');
		expect(factsProblem({ ' ': 1 })).toMatch(/names must be 1 to 200 characters/);
		expect(factsProblem({ long: 'x'.repeat(2001) })).toMatch(/text of 2001 characters \(at most 2000\)/);
		expect(factsProblem(Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, i])))).toMatch(/101 entries; at most 100/);
	});
});

describe('factsOf', () => {
	it('reads stored facts, as JSON text or as an object', () => {
		expect(factsOf('{"a":1,"b":"x"}')).toEqual({ a: 1, b: 'x' });
		expect(factsOf({ a: true })).toEqual({ a: true });
		expect(factsOf(null)).toBeNull();
		expect(factsOf('not json')).toBeNull();
		expect(factsOf('[1]')).toBeNull();
	});
});

describe('factLabel and factText', () => {
	it('labels a column name for a reader', () => {
		expect(factLabel('average_price_gbp')).toBe('Average price gbp');
		expect(factLabel('openingYear')).toBe('Opening year');
		expect(factLabel('city')).toBe('City');
		expect(factLabel('Population 2024')).toBe('Population 2024');
		expect(factLabel('__')).toBe('__');
	});

	it('writes a value for a reader', () => {
		expect(factText(true)).toBe('✓');
		expect(factText(false)).toBe('✗');
		expect(factText(812000)).toBe('812000');
		expect(factText('95.50')).toBe('95.50');
	});
});

describe('sameFacts', () => {
	it('is true for the same names and values in any order, and for no facts and empty facts', () => {
		expect(sameFacts({ city: 'Leeds', price: 95 }, { price: 95, city: 'Leeds' })).toBe(true);
		expect(sameFacts(null, {})).toBe(true);
		expect(sameFacts(undefined, null)).toBe(true);
	});

	it('is false for a changed value, a value of another type, a fact more or less', () => {
		expect(sameFacts({ price: 95 }, { price: 99 })).toBe(false);
		expect(sameFacts({ price: 95 }, { price: '95' })).toBe(false);
		expect(sameFacts({ price: 95 }, { price: 95, city: 'Leeds' })).toBe(false);
		expect(sameFacts({ price: 95, city: 'Leeds' }, { price: 95 })).toBe(false);
		expect(sameFacts({ price: 95 }, { cost: 95 })).toBe(false);
		expect(sameFacts({ open: true }, null)).toBe(false);
	});
});
