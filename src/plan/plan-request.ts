import { InvalidPayloadError } from '../errors/index.ts';
import { MAX_ID } from '../shared/database.ts';

/** A validated body of POST /generate/main-json (interface 4.8). */
export interface PlanRequest {
	pseoId: number;
	/** Canonical BCP 47 form, such as `en-US` or `tr-TR`. */
	languageCode: string;
	/** Trimmed, NFC-normalised business description of 150 to 1000 code points. */
	description: string;
}

const DESCRIPTION_MIN_LENGTH = 150;
const DESCRIPTION_MAX_LENGTH = 1000;

const KNOWN_FIELDS = new Set(['pseo_id', 'language_code', 'description']);
const MAX_LANGUAGE_CODE_LENGTH = 35;
// language (2-3 letters), optional script (4 letters), optional region (2 letters or 3 digits). Variants and
// extensions are valid BCP 47 but say nothing a content plan needs, so they are refused as not a plain locale.
const LOCALE_SHAPE = /^[a-z]{2,3}(?:-[A-Z][a-z]{3})?(?:-(?:[A-Z]{2}|\d{3}))?$/;
const LANGUAGE_NAMES = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
const REGION_NAMES = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });

/**
 * Validates the body of POST /generate/main-json (interface 4.8); every problem is a 400 naming the field.
 *
 * - `pseo_id` must be a JSON number that is a positive safe integer. A string of digits is refused: the interface
 *   types the field as a number, and accepting both would make `"1e3"` or `" 7"` questions of taste.
 * - `language_code` must be a plain locale (`en`, `en-US`, `tr-TR`, `zh-Hant-TW`, `es-419`); case and `_` are
 *   forgiven (`en_us` gives `en-US`), free text such as `english` is not, nor is an unknown language or region.
 * - `description` is trimmed and NFC-normalised, then counted in Unicode code points (an emoji is one, a Turkish
 *   `ş` typed as `s` plus a combining cedilla is one): padding with spaces does not reach the minimum.
 */
export function parsePlanRequest(body: unknown): PlanRequest {
	if (typeof body !== 'object' || body === null || Array.isArray(body)) {
		throw new InvalidPayloadError({ reason: 'The request body must be a JSON object with "pseo_id", "language_code" and "description".' });
	}
	const record = body as Record<string, unknown>;
	const unknown = Object.keys(record).filter((key) => !KNOWN_FIELDS.has(key));
	if (unknown.length > 0) {
		throw new InvalidPayloadError({ reason: `Unknown field(s): ${unknown.join(', ')}.` });
	}
	return {
		pseoId: parsePseoId(record['pseo_id']),
		languageCode: parseLanguageCode(record['language_code']),
		description: parseDescription(record['description']),
	};
}

/** The number of Unicode code points in a string (not UTF-16 units). */
export function codePointLength(text: string): number {
	let count = 0;
	for (const _ of text) count++;
	return count;
}

export function parsePseoId(value: unknown): number {
	if (value === undefined || value === null) throw new InvalidPayloadError({ reason: '"pseo_id" is required.' });
	if (typeof value !== 'number') {
		throw new InvalidPayloadError({ reason: `"pseo_id" must be a number, received ${typeName(value)}.` });
	}
	if (!Number.isSafeInteger(value) || value < 1) {
		throw new InvalidPayloadError({ reason: `"pseo_id" must be a positive integer, received ${value}.` });
	}
	if (value > MAX_ID) throw new InvalidPayloadError({ reason: `"pseo_id" must be at most ${MAX_ID}, received ${value}.` });
	return value;
}

export function parseLanguageCode(value: unknown): string {
	if (value === undefined || value === null) throw new InvalidPayloadError({ reason: '"language_code" is required.' });
	if (typeof value !== 'string') {
		throw new InvalidPayloadError({ reason: `"language_code" must be a string, received ${typeName(value)}.` });
	}
	const input = value.trim().replaceAll('_', '-');
	const refuse = () =>
		new InvalidPayloadError({
			reason: `"language_code" must be a locale such as en-US, tr-TR or de-DE, received ${JSON.stringify(value.slice(0, 50))}.`,
		});
	if (input === '' || input.length > MAX_LANGUAGE_CODE_LENGTH) throw refuse();
	let canonical: string;
	try {
		[canonical = ''] = Intl.getCanonicalLocales(input);
	} catch {
		throw refuse();
	}
	if (!LOCALE_SHAPE.test(canonical)) throw refuse();
	// getCanonicalLocales accepts any well-formed tag (`xx-XX`, `und`); a plan needs a language people write.
	if (!isKnownLocale(canonical)) throw refuse();
	return canonical;
}

function isKnownLocale(tag: string): boolean {
	try {
		const locale = new Intl.Locale(tag);
		if (locale.language === 'und' || LANGUAGE_NAMES.of(locale.language) === undefined) return false;
		return locale.region === undefined || (locale.region !== 'ZZ' && REGION_NAMES.of(locale.region) !== undefined);
	} catch {
		// DisplayNames throws on some well-formed but special codes such as `und`.
		return false;
	}
}

function parseDescription(value: unknown): string {
	if (value === undefined || value === null) throw new InvalidPayloadError({ reason: '"description" is required.' });
	if (typeof value !== 'string') {
		throw new InvalidPayloadError({ reason: `"description" must be a string, received ${typeName(value)}.` });
	}
	// PostgreSQL text columns cannot hold NUL, and no business description needs one.
	if (value.includes('\u0000')) throw new InvalidPayloadError({ reason: '"description" must not contain NUL characters.' });
	const description = value.trim().normalize('NFC');
	const length = codePointLength(description);
	if (length < DESCRIPTION_MIN_LENGTH || length > DESCRIPTION_MAX_LENGTH) {
		throw new InvalidPayloadError({
			reason: `"description" must be ${DESCRIPTION_MIN_LENGTH} to ${DESCRIPTION_MAX_LENGTH} characters long (after trimming), received ${length}.`,
		});
	}
	return description;
}

export function typeName(value: unknown): string {
	if (Array.isArray(value)) return 'an array';
	if (value === null) return 'null';
	return `a ${typeof value}`;
}
