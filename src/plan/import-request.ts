import { InvalidPayloadError } from '../errors/index.ts';
import { placeholdersOf, type ImportTemplate } from './import-template.ts';
import { parseLanguageCode, parsePseoId, typeName } from './plan-request.ts';

/** At most this many rows in one import, inline or from a file. */
export const MAX_IMPORT_ROWS = 100_000;

/** A validated body of POST /plan/import. */
export interface ImportRequest {
	pseoId: number;
	languageCode: string;
	template: ImportTemplate;
	/** The rows themselves, or the id of a file in Directus's file library (CSV, JSON array or JSON Lines). */
	source: { rows: unknown[] } | { fileId: string };
	mode: 'append' | 'replace';
}

const KNOWN_FIELDS = new Set(['pseo_id', 'language_code', 'template', 'rows', 'file_id', 'mode']);
const TEMPLATE_FIELDS = new Set(['route', 'title', 'primary_keyword', 'priority', 'cluster']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_TEMPLATE_TEXT = 500;

const bad = (reason: string) => new InvalidPayloadError({ reason });

/** Validates the body of POST /plan/import; every problem is a 400 naming the field. Rows are checked as they are read. */
export function parseImportRequest(body: unknown): ImportRequest {
	if (typeof body !== 'object' || body === null || Array.isArray(body)) {
		throw bad('The request body must be a JSON object with "pseo_id", "language_code", "template" and "rows" or "file_id".');
	}
	const record = body as Record<string, unknown>;
	const unknown = Object.keys(record).filter((key) => !KNOWN_FIELDS.has(key));
	if (unknown.length > 0) throw bad(`Unknown field(s): ${unknown.join(', ')}.`);
	return {
		pseoId: parsePseoId(record['pseo_id']),
		languageCode: parseLanguageCode(record['language_code']),
		template: parseTemplate(record['template']),
		source: parseSource(record['rows'], record['file_id']),
		mode: parseMode(record['mode']),
	};
}

function parseTemplate(value: unknown): ImportTemplate {
	if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('"template" must be an object with "route" and "title".');
	const record = value as Record<string, unknown>;
	const unknown = Object.keys(record).filter((key) => !TEMPLATE_FIELDS.has(key));
	if (unknown.length > 0) throw bad(`Unknown template field(s): ${unknown.join(', ')}.`);
	const text = (name: string, required: boolean): string | undefined => {
		const field = record[name];
		if (field === undefined || field === null) {
			if (required) throw bad(`"template.${name}" is required.`);
			return undefined;
		}
		if (typeof field !== 'string' || field.trim() === '') throw bad(`"template.${name}" must be a non-empty string, received ${typeName(field)}.`);
		if (field.length > MAX_TEMPLATE_TEXT) throw bad(`"template.${name}" must be at most ${MAX_TEMPLATE_TEXT} characters.`);
		if (/\{\s*\}/.test(field)) throw bad(`"template.${name}" has an empty placeholder "{}".`);
		return field.trim();
	};
	const route = text('route', true)!;
	if (!route.startsWith('/') || route.startsWith('//')) throw bad(`"template.route" must start with a single "/", such as "/{service}/{city}".`);
	if (placeholdersOf(route).length === 0) throw bad('"template.route" must have at least one placeholder such as "{city}": every row needs its own route.');
	const literal = route.replace(/\{[^{}]*\}/g, 'x');
	if (!/^\/[\p{Ll}\p{Lo}\p{N}x/-]*$/u.test(literal) || /\/\/|\/$/.test(literal.length > 1 ? literal : '')) {
		throw bad('"template.route" may hold only lower-case letters, digits, hyphens, slashes and placeholders, with no empty segment or trailing slash.');
	}
	const priority = record['priority'];
	if (priority !== undefined && priority !== null) {
		const column = typeof priority === 'string' && /^\{[^{}]+\}$/.test(priority.trim());
		if (!(typeof priority === 'number' && Number.isFinite(priority)) && !column) {
			throw bad(`"template.priority" must be a number or a "{column}", received ${JSON.stringify(priority)}.`);
		}
	}
	return {
		route,
		title: text('title', true)!,
		primary_keyword: text('primary_keyword', false),
		priority: priority === null ? undefined : (priority as number | string | undefined),
		cluster: text('cluster', false),
	};
}

function parseSource(rows: unknown, fileId: unknown): ImportRequest['source'] {
	const hasRows = rows !== undefined && rows !== null;
	const hasFile = fileId !== undefined && fileId !== null;
	if (hasRows === hasFile) throw bad('Give either "rows" (an array of objects) or "file_id" (a CSV, JSON or JSON Lines file), not both.');
	if (hasFile) {
		if (typeof fileId !== 'string' || !UUID.test(fileId)) throw bad(`"file_id" must be the id of a file, received ${JSON.stringify(fileId)}.`);
		return { fileId: fileId.toLowerCase() };
	}
	if (!Array.isArray(rows)) throw bad(`"rows" must be an array of objects, received ${typeName(rows)}.`);
	if (rows.length === 0) throw bad('"rows" is empty.');
	if (rows.length > MAX_IMPORT_ROWS) throw bad(`"rows" has ${rows.length} rows; at most ${MAX_IMPORT_ROWS} are allowed in one import.`);
	return { rows };
}

function parseMode(value: unknown): ImportRequest['mode'] {
	if (value === undefined || value === null) return 'append';
	if (value === 'append' || value === 'replace') return value;
	throw bad(`"mode" must be "append" or "replace", received ${JSON.stringify(value)}.`);
}
