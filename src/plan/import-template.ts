import { factsFromRow } from '../shared/facts.ts';
import type { StoredPlanPage } from './plan-page-store.ts';

/*
 * The template of a plan import: one plan page per data row, its route, title and metadata written from the row's
 * columns with `{column}` placeholders. Compiled once, applied to every row.
 */

/** The `template` of POST /plan/import, as validated. */
export interface ImportTemplate {
	route: string;
	title: string;
	primary_keyword?: string | undefined;
	/** A number, or `{column}` for a column holding one. */
	priority?: number | string | undefined;
	cluster?: string | undefined;
	/** The columns a page's facts are taken from; every column of the row when absent. */
	facts?: readonly string[] | undefined;
	/** Columns that must hold a value: a row without one gives no page (`missing_data`). */
	required?: readonly string[] | undefined;
	/** A hub page per distinct value of its placeholders, the parent of the pages of its set. */
	hub?: { route: string; title: string } | undefined;
}

/** A hub page of an import: its route and title, written from a row like the row's own page. */
export interface HubPage {
	route: string;
	title: string;
}

/** Why a row gave no page: a placeholder without a value or an invalid route or priority, or a required column empty. */
export type RowSkip = 'invalid' | 'missing_data';

/** The template fields that name columns, with placeholders or lists. */
const TEXT_FIELDS = ['route', 'title', 'primary_keyword', 'priority', 'cluster'] as const;

/**
 * Every column the template names, each with the template fields that name it (`route`, `title`, ..., `facts`,
 * `required`), in the order they are named.
 */
export function templateColumns(template: ImportTemplate): Map<string, string[]> {
	const columns = new Map<string, string[]>();
	const add = (column: string, field: string) => {
		const fields = columns.get(column);
		if (!fields) columns.set(column, [field]);
		else if (!fields.includes(field)) fields.push(field);
	};
	for (const field of TEXT_FIELDS) {
		const text = template[field];
		if (typeof text === 'string') for (const column of placeholdersOf(text)) add(column, field);
	}
	if (template.hub) {
		for (const column of placeholdersOf(template.hub.route)) add(column, 'hub.route');
		for (const column of placeholdersOf(template.hub.title)) add(column, 'hub.title');
	}
	for (const column of template.facts ?? []) add(column, 'facts');
	for (const column of template.required ?? []) add(column, 'required');
	return columns;
}

const PLACEHOLDER = /\{([^{}]+)\}/g;
const MAX_ROUTE = 500;
const MAX_TITLE = 500;
/** A route: `/`, or segments of lower-case letters (any script), digits and single hyphens. */
const IMPORTED_ROUTE = /^\/(?:[\p{Ll}\p{Lo}\p{Lm}\p{N}]+(?:-[\p{Ll}\p{Lo}\p{Lm}\p{N}]+)*(?:\/[\p{Ll}\p{Lo}\p{Lm}\p{N}]+(?:-[\p{Ll}\p{Lo}\p{Lm}\p{N}]+)*)*)?$/u;

/** Text of printable ASCII only. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
/** {@link IMPORTED_ROUTE} for a route of ASCII only: the same answer without Unicode property classes. */
const ASCII_ROUTE = /^\/(?:[a-z0-9]+(?:-[a-z0-9]+)*(?:\/[a-z0-9]+(?:-[a-z0-9]+)*)*)?$/;

/** Whether `route` is a valid imported route. */
function validRoute(route: string): boolean {
	return route.length <= MAX_ROUTE && (PRINTABLE_ASCII.test(route) ? ASCII_ROUTE.test(route) : IMPORTED_ROUTE.test(route));
}

/** The placeholders a template text names. */
export function placeholdersOf(text: string): string[] {
	return [...text.matchAll(PLACEHOLDER)].map((match) => match[1]!.trim());
}

/**
 * A placeholder's value as a URL slug: accents folded (é → e), letters of every script and digits kept, in lower
 * case, anything else a single hyphen. Empty when nothing usable remains.
 */
export function slugOf(value: string): string {
	// Printable ASCII (most data) needs neither the folding nor Unicode classes: the same slug, several times faster.
	if (PRINTABLE_ASCII.test(value)) return value.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
	return value
		.normalize('NFKD')
		.replace(/\p{M}+/gu, '')
		.toLowerCase()
		.replace(/ß/g, 'ss')
		.replace(/[^\p{L}\p{N}]+/gu, '-')
		.replace(/^-+|-+$/g, '');
}

/** A row's value of a column as text; null when missing or empty. */
function cell(row: Readonly<Record<string, unknown>>, column: string): string | null {
	const value = row[column];
	if (value === null || value === undefined) return null;
	const text = String(value).trim();
	return text === '' ? null : text;
}

/** A template text split once: literal text at even indexes, placeholder names (trimmed) at odd ones. */
const compiled = new Map<string, readonly string[]>();
/** Template texts kept compiled: imports use a handful; a server that meets more starts over. */
const MAX_COMPILED = 256;

function partsOf(text: string): readonly string[] {
	let parts = compiled.get(text);
	if (parts) return parts;
	parts = text.split(PLACEHOLDER).map((part, index) => (index % 2 === 1 ? part.trim() : part));
	if (compiled.size >= MAX_COMPILED) compiled.clear();
	compiled.set(text, parts);
	return parts;
}

/** Fills `{column}` placeholders; null when a placeholder has no value in the row. */
function fill(text: string, row: Readonly<Record<string, unknown>>, transform: (value: string) => string): string | null {
	const parts = partsOf(text);
	let filled = parts[0]!;
	for (let i = 1; i < parts.length; i += 2) {
		const value = cell(row, parts[i]!);
		if (value === null) return null;
		const out = transform(value);
		if (out === '') return null;
		filled += out + parts[i + 1]!;
	}
	return filled;
}

/**
 * The plan page a row makes, or why it makes none: a required column without a value (`missing_data`, checked
 * first), a placeholder without a value, an invalid route or priority (`invalid`).
 */
export function pageFromRow(template: ImportTemplate, row: Readonly<Record<string, unknown>>): StoredPlanPage | RowSkip {
	for (const column of template.required ?? []) if (cell(row, column) === null) return 'missing_data';
	const route = fill(template.route, row, slugOf);
	if (route === null || !validRoute(route)) return 'invalid';
	const title = fill(template.title, row, (value) => value.replace(/\s+/g, ' '));
	if (title === null || title.length > MAX_TITLE) return 'invalid';
	const keyword = template.primary_keyword === undefined ? null : fill(template.primary_keyword, row, (value) => value.replace(/\s+/g, ' '));
	if (template.primary_keyword !== undefined && keyword === null) return 'invalid';
	let priority = 0;
	if (typeof template.priority === 'number') priority = template.priority;
	else if (typeof template.priority === 'string') {
		const value = fill(template.priority, row, (text) => text);
		const parsed = value === null ? NaN : Number(value);
		if (!Number.isFinite(parsed)) return 'invalid';
		priority = parsed;
	}
	const cluster = template.cluster === undefined ? null : fill(template.cluster, row, slugOf);
	if (template.cluster !== undefined && cluster === null) return 'invalid';
	const hub = template.hub ? hubFromRow(template.hub, row) : null;
	return {
		route,
		title,
		priority,
		primary_keyword: keyword,
		cluster,
		...(hub && hub.route !== route ? { parent_route: hub.route } : {}),
		facts: factsFromRow(row, template.facts),
		// The row itself, not a copy: each row is a fresh object of its parser's, read-only from here on.
		variables: row as Record<string, unknown>,
	};
}

/** The hub page a row belongs to, or null when a placeholder of the hub has no value or its route is invalid. */
export function hubFromRow(hub: HubPage, row: Readonly<Record<string, unknown>>): HubPage | null {
	const route = fill(hub.route, row, slugOf);
	if (route === null || !validRoute(route)) return null;
	const title = fill(hub.title, row, (value) => value.replace(/\s+/g, ' '));
	if (title === null || title.length > MAX_TITLE) return null;
	return { route, title };
}
