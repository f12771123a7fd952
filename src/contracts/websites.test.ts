import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { parseRequest } from '../http/parse-request.ts';
import { createWebsiteRoute } from './websites.ts';

const parse = (body: unknown) => parseRequest(createWebsiteRoute, { body } as Request).body;
const valid = { website_url: 'https://bakery.example', master_prompt: 'Warm tone.' };

describe('POST /pseo contract', () => {
	it('4.3 trims the URL and defaults website_software to wordpress', () => {
		expect(parse({ ...valid, website_url: ' https://bakery.example/shop ' })).toEqual({
			website_url: 'https://bakery.example/shop',
			master_prompt: 'Warm tone.',
			website_software: 'wordpress',
			provider: null,
			model: null,
		});
		expect(parse({ ...valid, website_software: null }).website_software).toBe('wordpress');
		expect(parse({ ...valid, website_software: ' shopify ' }).website_software).toBe('shopify');
		expect(parse({ ...valid, provider: 'anthropic', model: ' claude-haiku-4-5 ' })).toMatchObject({ provider: 'anthropic', model: 'claude-haiku-4-5' });
	});

	it.each([
		[{ ...valid, extra: 1 }, 'Unknown field(s): extra.'],
		[{ master_prompt: 'x' }, '"website_url" is required.'],
		[{ ...valid, website_url: 7 }, '"website_url" must be a string.'],
		[{ ...valid, website_url: `https://a.example/${'a'.repeat(2040)}` }, '"website_url" must be at most 2048 characters.'],
		[{ ...valid, website_url: 'bakery.example' }, '"website_url" must be an absolute http(s) URL, such as https://example.com.'],
		[{ ...valid, website_url: 'ftp://bakery.example' }, '"website_url" must use http or https.'],
		[{ ...valid, website_url: 'https://user:secret@bakery.example' }, '"website_url" must not contain credentials.'],
		[{ website_url: 'https://bakery.example' }, '"master_prompt" is required.'],
		[{ ...valid, master_prompt: '  ' }, '"master_prompt" must not be empty.'],
		[{ ...valid, master_prompt: ['x'] }, '"master_prompt" must be a string.'],
		[{ ...valid, website_software: 1 }, '"website_software" must be a string.'],
		[{ ...valid, website_software: ' ' }, '"website_software" must not be empty.'],
		[{ ...valid, provider: 'claude' }, '"provider" must be one of openai, anthropic, google, openai_compatible.'],
		[{ ...valid, provider: 1 }, '"provider" must be one of openai, anthropic, google, openai_compatible.'],
		[{ ...valid, model: ' ' }, '"model" must not be empty.'],
		[{ ...valid, model: 5 }, '"model" must be a string.'],
		[{ ...valid, model: 'm'.repeat(201) }, '"model" must be at most 200 characters.'],
		[{ ...valid, website_software: 'x'.repeat(101) }, '"website_software" must be at most 100 characters.'],
		[[valid], 'The request body must be a JSON object.'],
	])('4.3 refuses %j: %s', (body, reason) => {
		expect(() => parse(body)).toThrow(reason);
	});
});
