import { z } from 'zod';
import { MAX_ID } from '../shared/database.ts';
import { doc, named } from './contract-registry.ts';

/*
 * The rules every contract shares, and the wording of their 400s. Every message names the field and the rule, and,
 * where it helps, what was received: `"post_count" must be a positive integer, received 1.5.` The field is taken
 * from where the issue is (`template.route`), so one rule serves every field it is used for.
 */

type Issue = { readonly path?: readonly PropertyKey[] | undefined; readonly input?: unknown };

/** The field an issue is about, as messages name it: `pseo_id`, `template.route` (array positions left out). */
function fieldOf(issue: Issue): string {
	return (issue.path ?? []).filter((part): part is string => typeof part === 'string').join('.');
}

/** `a string`, `an array`, `null`: what a value is, for a message. */
export function typeName(value: unknown): string {
	if (Array.isArray(value)) return 'an array';
	if (value === null) return 'null';
	const kind = typeof value;
	return `${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind}`;
}

/** A received value in a message: a number, boolean or short string as written (`1.5`, `"abc"`), anything else by kind. */
function shown(value: unknown): string {
	if (typeof value === 'number' || typeof value === 'boolean') return String(value);
	if (typeof value === 'string' && value.length <= 40) return JSON.stringify(value);
	return typeName(value);
}

/** An error of one field, `"<field>" <rule>`, where the rule may depend on the value received. */
export const rule =
	(text: string | ((input: unknown) => string)) =>
	(issue: Issue): string =>
		`"${fieldOf(issue)}" ${typeof text === 'string' ? text : text(issue.input)}`;

/** A type error that says `"<field>" is required.` for a missing or null value and `rule` otherwise. */
export const requiredOr =
	(text: string | ((input: unknown) => string)) =>
	(issue: Issue): string =>
		issue.input === undefined || issue.input === null ? `"${fieldOf(issue)}" is required.` : rule(text)(issue);

/** The number of Unicode code points in a string (not UTF-16 units). */
export function codePointLength(text: string): number {
	let count = 0;
	for (const _ of text) count++;
	return count;
}

/** An object's unknown fields, listed for a message: `pages, extra`. */
const unknownKeys = (issue: { keys?: readonly string[] }) => (issue.keys ?? []).join(', ');

/** A JSON body that must be an object: `notObject` when it is not, `Unknown field(s): ...` for a field it does not know. */
export function objectError(notObject: string, unknown: (keys: string) => string = (keys) => `Unknown field(s): ${keys}.`) {
	return (issue: { code?: string; keys?: readonly string[] }) => (issue.code === 'unrecognized_keys' ? unknown(unknownKeys(issue)) : notObject);
}

/** ISO 8601 UTC timestamp with milliseconds, as every answer writes it. */
export const Timestamp = named('Timestamp', z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/), {
	format: 'date-time',
	description: 'ISO 8601 UTC timestamp with milliseconds.',
	examples: ['2026-01-31T09:30:00.000Z'],
});

/** A count in an answer: an integer from 0. */
export const count = () => z.int().min(0);

/**
 * A JSON number that is a positive integer up to `max`. A string of digits is refused: the interface types these
 * fields as numbers, and accepting both would make `"1e3"` or `" 7"` questions of taste.
 */
export function positiveInteger(max: number = Number.MAX_SAFE_INTEGER) {
	const notPositive = (input: unknown) => `must be a positive integer, received ${shown(input)}.`;
	return z
		.int({ error: requiredOr(notPositive) })
		.min(1, { error: rule(notPositive) })
		.max(max, { error: rule((input) => `must be at most ${max}, received ${String(input)}.`) });
}

/** A positive integer identifier (32-bit, as PostgreSQL and MySQL store it), in a JSON body or an answer. */
export const Identifier = named('Identifier', positiveInteger(MAX_ID), {
	description: 'A positive integer identifier (32-bit, as PostgreSQL and MySQL store it).',
	examples: [1],
});

const DIGITS = /^[1-9]\d*$/;
const isBlank = (value: unknown) => value === undefined || value === '';

/**
 * An identifier in a path or query string. Only a plain positive integer is accepted: `1.0`, `01`, `1e3`, `-1`,
 * `abc`, a repeated parameter and a value beyond the largest id ({@link MAX_ID}) are all 400 (operating contract
 * section 4).
 */
export function idParam(description: string) {
	const required = (issue: Issue) => `Query or path parameter "${fieldOf(issue)}" is required.`;
	const notInteger = rule('must be a positive integer.');
	return doc(
		z
			.string({ error: (issue) => (isBlank(issue.input) ? required(issue) : notInteger(issue)) })
			.refine((value) => value !== '', { error: required, abort: true })
			.regex(DIGITS, { error: notInteger, abort: true })
			.refine((value) => Number.isSafeInteger(Number(value)), { error: notInteger, abort: true })
			.refine((value) => Number(value) <= MAX_ID, { error: rule(`must be at most ${MAX_ID}.`) })
			.transform(Number),
		{ description: `${description} A positive integer of at most ${MAX_ID}, in plain digits, given once.`, examples: ['1'] },
	);
}
