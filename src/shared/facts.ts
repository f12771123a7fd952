/*
 * A plan page's facts: the data of its own that a page is written from (a price, a population, an opening year),
 * as a flat object of column name to string, number or boolean. An import fills them from the row; editors change
 * them in the app. The page prompt carries them, the quality gate checks the page's figures against them, and the
 * published page ends with them as a table.
 */
import { jsonValue } from './json-value.ts';

/** A value of a fact as it came: CSV values are strings, JSON values keep their type. */
export type FactValue = string | number | boolean;

/** A page's facts: column name to value. */
export type Facts = Record<string, FactValue>;

/** Facts a page may carry: a page prompt and a published table stay readable. */
const MAX_FACTS = 100;
/** The longest fact name, and the longest text value, in characters. */
const MAX_NAME = 200;
const MAX_TEXT = 2000;

/**
 * The facts of a data row: every column, or those `columns` lists, in the row's order (or the list's). A value that
 * is null, missing or blank says nothing and is left out; text is trimmed; numbers and booleans keep their type.
 * Null when nothing is left.
 */
export function factsFromRow(row: Readonly<Record<string, unknown>>, columns?: readonly string[]): Facts | null {
	const facts: Facts = {};
	let count = 0;
	for (const column of columns ?? Object.keys(row)) {
		const value = factValue(row[column]);
		if (value === null || column.trim() === '' || Object.hasOwn(facts, column)) continue;
		facts[column] = value;
		if (++count >= MAX_FACTS) break;
	}
	return count > 0 ? facts : null;
}

/** A value as a fact: text trimmed and capped, a finite number, a boolean; null for anything else or blank text. */
function factValue(value: unknown): FactValue | null {
	if (typeof value === 'boolean') return value;
	if (typeof value === 'number') return Number.isFinite(value) ? value : null;
	if (typeof value === 'bigint') return String(value);
	if (typeof value !== 'string') return null;
	const text = value.trim();
	return text === '' ? null : text.slice(0, MAX_TEXT);
}

/**
 * Why `value` is not a page's facts as an editor may store them, or null when it is: null (no facts), or a flat
 * object of at most {@link MAX_FACTS} names, each at most 200 characters, to a string, a finite number or a boolean.
 */
export function factsProblem(value: unknown): string | null {
	if (value === null || value === undefined) return null;
	if (typeof value !== 'object' || Array.isArray(value)) return `"facts" must be an object of name to value, received ${kindOf(value)}.`;
	const entries = Object.entries(value as Record<string, unknown>);
	if (entries.length > MAX_FACTS) return `"facts" has ${entries.length} entries; at most ${MAX_FACTS} are allowed.`;
	for (const [name, fact] of entries) {
		if (name.trim() === '' || name.length > MAX_NAME) return `"facts" names must be 1 to ${MAX_NAME} characters long, received ${JSON.stringify(name.slice(0, 50))}.`;
		const ok = typeof fact === 'string' ? fact.length <= MAX_TEXT : typeof fact === 'boolean' || (typeof fact === 'number' && Number.isFinite(fact));
		if (!ok) {
			const what = typeof fact === 'string' ? `text of ${fact.length} characters (at most ${MAX_TEXT})` : kindOf(fact);
			return `"facts.${name}" must be a string, a number or a boolean, received ${what}.`;
		}
	}
	return null;
}

/** `an array`, `null`, `a string`, `an object`: what a value is, for a message. */
function kindOf(value: unknown): string {
	if (Array.isArray(value)) return 'an array';
	if (value === null) return 'null';
	return /^[aeiou]/.test(typeof value) ? `an ${typeof value}` : `a ${typeof value}`;
}

/** Stored facts, whatever the column gave back (text on some databases), as facts; null when there are none. */
export function factsOf(value: unknown): Facts | null {
	const parsed = jsonValue(value);
	if (parsed === undefined || parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
	return factsFromRow(parsed as Record<string, unknown>);
}

/**
 * Whether two pages' facts say the same: the same names with the same values, of the same type, in any order. No
 * facts and empty facts are the same. A sync compares a page's stored facts with its row's, and a rewritten post's with
 * its plan page's, with this.
 */
export function sameFacts(a: Facts | null | undefined, b: Facts | null | undefined): boolean {
	const left = Object.entries(a ?? {});
	if (left.length !== Object.keys(b ?? {}).length) return false;
	return left.every(([name, value]) => Object.hasOwn(b ?? {}, name) && (b as Facts)[name] === value);
}

/** A fact's name as a reader's label: `price_eur` and `priceEur` read "Price eur". */
export function factLabel(name: string): string {
	const words = name
		.replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
		.replace(/[_\-.\s]+/g, ' ')
		.trim()
		.toLowerCase();
	return words === '' ? name : words[0]!.toUpperCase() + words.slice(1);
}

/** A fact's value as a reader sees it: true and false as ✓ and ✗, which read the same in every language. */
export function factText(value: FactValue): string {
	if (typeof value === 'boolean') return value ? '✓' : '✗';
	return String(value);
}
