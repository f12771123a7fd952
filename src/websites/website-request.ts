import { InvalidPayloadError } from '../errors/index.ts';

export interface NewWebsite {
	website_url: string;
	master_prompt: string;
	website_software: string;
}

const MAX_URL_LENGTH = 2048;
const MAX_SOFTWARE_LENGTH = 100;
const KNOWN_FIELDS = new Set(['website_url', 'master_prompt', 'website_software']);

/** Validates the body of POST /pseo (interface 4.3); every problem is a 400 naming the field. */
export function parseNewWebsite(body: Record<string, unknown>): NewWebsite {
	const unknown = Object.keys(body).filter((key) => !KNOWN_FIELDS.has(key));
	if (unknown.length > 0) {
		throw new InvalidPayloadError({ reason: `Unknown field(s): ${unknown.join(', ')}.` });
	}
	return {
		website_url: parseWebsiteUrl(body['website_url']),
		master_prompt: parseMasterPrompt(body['master_prompt']),
		website_software: parseSoftware(body['website_software']),
	};
}

function parseWebsiteUrl(value: unknown): string {
	if (value === undefined || value === null) throw new InvalidPayloadError({ reason: '"website_url" is required.' });
	if (typeof value !== 'string') throw new InvalidPayloadError({ reason: '"website_url" must be a string.' });
	const url = value.trim();
	if (url.length > MAX_URL_LENGTH) {
		throw new InvalidPayloadError({ reason: `"website_url" must be at most ${MAX_URL_LENGTH} characters.` });
	}
	let parsed: URL;
	try {
		parsed = new URL(url);
	} catch {
		throw new InvalidPayloadError({ reason: '"website_url" must be an absolute http(s) URL, such as https://example.com.' });
	}
	if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
		throw new InvalidPayloadError({ reason: '"website_url" must use http or https.' });
	}
	if (!parsed.hostname) throw new InvalidPayloadError({ reason: '"website_url" must name a host.' });
	if (parsed.username || parsed.password) {
		throw new InvalidPayloadError({ reason: '"website_url" must not contain credentials.' });
	}
	return url;
}

function parseMasterPrompt(value: unknown): string {
	if (value === undefined || value === null) throw new InvalidPayloadError({ reason: '"master_prompt" is required.' });
	if (typeof value !== 'string') throw new InvalidPayloadError({ reason: '"master_prompt" must be a string.' });
	if (value.trim().length === 0) throw new InvalidPayloadError({ reason: '"master_prompt" must not be empty.' });
	return value;
}

function parseSoftware(value: unknown): string {
	if (value === undefined || value === null) return 'wordpress';
	if (typeof value !== 'string') throw new InvalidPayloadError({ reason: '"website_software" must be a string.' });
	const software = value.trim();
	if (software.length === 0) throw new InvalidPayloadError({ reason: '"website_software" must not be empty.' });
	if (software.length > MAX_SOFTWARE_LENGTH) {
		throw new InvalidPayloadError({ reason: `"website_software" must be at most ${MAX_SOFTWARE_LENGTH} characters.` });
	}
	return software;
}
