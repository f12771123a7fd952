/** The shape of a stored plan route: `/`, or lower-case slug segments joined by single slashes. */
export const ROUTE_PATTERN = /^\/(?:[a-z0-9]+(?:-[a-z0-9]+)*(?:\/[a-z0-9]+(?:-[a-z0-9]+)*)*)?$/;

// Letters that NFKD does not decompose into ASCII, plus Cyrillic and Greek so that plans in those languages keep
// readable routes. Keys are lower-case; the table runs before and after NFKD (Cyrillic й and ё must be read before
// NFKD strips their marks, accented Greek only after).
const TRANSLITERATION: Readonly<Record<string, string>> = {
	'ß': 'ss',
	'ı': 'i',
	'æ': 'ae',
	'œ': 'oe',
	'ø': 'o',
	'đ': 'd',
	'ð': 'd',
	'þ': 'th',
	'ł': 'l',
	'ħ': 'h',
	'ŋ': 'ng',
	'ĸ': 'k',
	'а': 'a', 'б': 'b', 'в': 'v', 'г': 'g', 'ґ': 'g', 'д': 'd', 'е': 'e', 'ё': 'yo', 'є': 'ye', 'ж': 'zh', 'з': 'z',
	'и': 'i', 'і': 'i', 'ї': 'yi', 'й': 'y', 'к': 'k', 'л': 'l', 'м': 'm', 'н': 'n', 'о': 'o', 'п': 'p', 'р': 'r',
	'с': 's', 'т': 't', 'у': 'u', 'ф': 'f', 'х': 'kh', 'ц': 'ts', 'ч': 'ch', 'ш': 'sh', 'щ': 'shch', 'ъ': '',
	'ы': 'y', 'ь': '', 'э': 'e', 'ю': 'yu', 'я': 'ya',
	'α': 'a', 'β': 'v', 'γ': 'g', 'δ': 'd', 'ε': 'e', 'ζ': 'z', 'η': 'i', 'θ': 'th', 'ι': 'i', 'κ': 'k', 'λ': 'l',
	'μ': 'm', 'ν': 'n', 'ξ': 'x', 'ο': 'o', 'π': 'p', 'ρ': 'r', 'σ': 's', 'ς': 's', 'τ': 't', 'υ': 'y', 'φ': 'f',
	'χ': 'ch', 'ψ': 'ps', 'ω': 'o',
};

const ABSOLUTE_URL = /^[a-z][a-z0-9+.-]*:\/\//i;
// Page-file suffixes a CMS often shows in its sitemap; `/about.html` and `/about` are the same page to a planner.
const PAGE_FILE_SUFFIX = /\.(?:html?|php|aspx?|jsp)$/;
const INDEX_PAGE = /^(?:index|default)$/;

/**
 * The canonical form of a route or URL: the path only (an absolute URL's origin, the query and the fragment are
 * dropped), lower-case ASCII slug segments (diacritics folded, Cyrillic and Greek transliterated, spaces, underscores
 * and other punctuation turned into single dashes), a leading slash and no trailing one. `/` for the root; null when
 * nothing usable remains (an empty string, a path of only non-Latin script or punctuation, a malformed URL).
 */
export function normalizeRoute(input: string): string | null {
	if (typeof input !== 'string') throw new TypeError(`normalizeRoute expects a string, received ${describe(input)}.`);
	const path = pathOf(input.trim());
	if (path === null) return null;
	const decoded = safeDecode(path);
	const rawSegments = fold(decoded).split(/[/\\]+/).filter((segment) => segment !== '');
	const last = rawSegments.at(-1);
	if (last !== undefined && PAGE_FILE_SUFFIX.test(last)) {
		const stem = last.replace(PAGE_FILE_SUFFIX, '');
		if (INDEX_PAGE.test(stem)) rawSegments.pop();
		else rawSegments[rawSegments.length - 1] = stem;
	}
	const segments = rawSegments.map(slugSegment).filter((segment) => segment !== '');
	if (segments.length > 0) return `/${segments.join('/')}`;
	// Segments that all vanished were unusable text; no segments at all (slashes only, an index page) is the root.
	if (rawSegments.length > 0) return null;
	return decoded === '' && !ABSOLUTE_URL.test(input.trim()) ? null : '/';
}

/**
 * The key under which a sitemap URL and a plan route are compared: the normalised path of either, so that
 * `https://example.com/Über-uns/?ref=x` and `/uber-uns` meet. Null when the value has no usable path.
 */
export function routeKey(urlOrRoute: string): string | null {
	return normalizeRoute(urlOrRoute);
}

/** Whether a string already has the stored route shape (normalising it would not change it). */
export function isCanonicalRoute(route: string): boolean {
	return ROUTE_PATTERN.test(route);
}

function pathOf(input: string): string | null {
	if (ABSOLUTE_URL.test(input)) {
		try {
			return new URL(input, 'http://placeholder.invalid').pathname;
		} catch {
			return null;
		}
	}
	const end = input.search(/[?#]/);
	return end === -1 ? input : input.slice(0, end);
}

function safeDecode(path: string): string {
	try {
		return decodeURIComponent(path);
	} catch {
		// A stray `%` that is not an escape: keep the text; it becomes a dash like any other punctuation.
		return path;
	}
}

function transliterate(text: string): string {
	let out = '';
	for (const char of text) out += TRANSLITERATION[char] ?? char;
	return out;
}

function fold(text: string): string {
	const lower = transliterate(text.toLowerCase());
	return transliterate(lower.normalize('NFKD').replace(/\p{M}+/gu, '')).toLowerCase();
}

function slugSegment(segment: string): string {
	return segment
		.replace(/['’‘`´]/g, '')
		.replace(/[^a-z0-9]+/g, '-')
		.replace(/^-+|-+$/g, '');
}

function describe(value: unknown): string {
	return value === null ? 'null' : Array.isArray(value) ? 'an array' : `${typeof value} ${String(value)}`;
}
