/** Resolves `raw` (absolute, or relative to `base`) and returns its href when it is http(s), else null. */
export function resolveHttpUrl(raw: string, base: string): string | null {
	let url: URL;
	try {
		url = new URL(raw, base);
	} catch {
		return null;
	}
	return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
}

/**
 * The key under which a sitemap counts as visited, for cycle detection: the WHATWG-normalised href (scheme and
 * host lower-cased, default port and dot segments removed, percent-encoding canonical) without its fragment.
 */
export function visitKey(url: string): string {
	try {
		const parsed = new URL(url);
		parsed.hash = '';
		return parsed.href;
	} catch {
		return url;
	}
}
