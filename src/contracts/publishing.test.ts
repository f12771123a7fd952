import type { Request } from 'express';
import { describe, expect, it } from 'vitest';
import { parseRequest } from '../http/parse-request.ts';
import { publishRoute, savePublishingTargetRoute } from './publishing.ts';

const target = (body: unknown) => parseRequest(savePublishingTargetRoute, { params: { id: '1' }, body } as unknown as Request).body;
const publish = (body: unknown) => parseRequest(publishRoute, { body } as Request).body;
const wordpress = { target: 'wordpress', url: 'https://blog.example', username: ' editor ', application_password: ' abcd efgh ijkl mnop ' };
const future = new Date(Date.now() + 86_400_000).toISOString();

describe('PUT /pseo/:id/publishing contract', () => {
	it('reads a WordPress target (draft by default, trimmed) and a webhook target (a left-out secret is null)', () => {
		expect(target(wordpress)).toEqual({
			target: 'wordpress',
			url: 'https://blog.example/',
			username: 'editor',
			applicationPassword: 'abcd efgh ijkl mnop',
			defaultStatus: 'draft',
		});
		expect(target({ target: 'webhook', url: 'https://hooks.example/in' })).toEqual({ target: 'webhook', url: 'https://hooks.example/in', secret: null });
	});

	it.each([
		[{ url: 'https://blog.example' }, '"target" must be "wordpress" or "webhook".'],
		[{ ...wordpress, target: 'ghost' }, '"target" must be "wordpress" or "webhook".'],
		['text', 'The request body must be a JSON object.'],
		[{ target: 'webhook', url: 'https://hooks.example', username: 'x' }, 'Unknown field(s) for a webhook target: username. Accepted: target, url, secret.'],
		[{ ...wordpress, url: '' }, '"url" is required: the http(s) address of the site or receiver.'],
		[{ ...wordpress, url: 'not a url' }, '"url" is not a valid URL.'],
		[{ ...wordpress, url: 'ftp://example.org' }, '"url" must use http or https.'],
		[{ ...wordpress, url: 'https://a:b@blog.example' }, '"url" must not carry credentials; use the credential fields.'],
		[{ ...wordpress, username: '' }, '"username" must be the WordPress user name (1 to 60 characters).'],
		[{ ...wordpress, default_status: 'trash' }, '"default_status" must be one of draft, pending, private, publish.'],
		[{ ...wordpress, application_password: 'x' }, '"application_password" must be a string of 8 to 512 characters.'],
		[{ target: 'webhook', url: 'https://hooks.example', secret: 'short' }, '"secret" must be a string of 16 to 512 characters.'],
	])('refuses %j: %s', (body, reason) => {
		expect(() => target(body)).toThrow(reason);
	});
});

describe('POST /publish contract', () => {
	it('reads the website, distinct post ids, a status or a schedule', () => {
		expect(publish({ pseo_id: 1 })).toEqual({ pseoId: 1, postIds: null, status: null, schedule: null });
		expect(publish({ pseo_id: 1, post_ids: [3, 3, 4], status: 'publish' })).toMatchObject({ postIds: [3, 4], status: 'publish' });
		const start = '2099-01-04T10:00:00+01:00';
		expect(publish({ pseo_id: 1, schedule: { start, per_day: 5 } }).schedule).toEqual({ start: '2099-01-04T09:00:00.000Z', per_day: 5 });
	});

	it.each([
		[{ pseo_id: 1, extra: true }, 'Unknown field(s): extra. Accepted: pseo_id, post_ids, status, schedule.'],
		[{ pseo_id: 0 }, '"pseo_id" must be a positive integer, received 0.'],
		[{ pseo_id: 1, post_ids: 'all' }, '"post_ids" must be an array of 1 to 10000 post ids.'],
		[{ pseo_id: 1, post_ids: [] }, '"post_ids" must be an array of 1 to 10000 post ids.'],
		[{ pseo_id: 1, post_ids: [1, 'x'] }, '"post_ids" must hold positive integers of at most 2147483647 only.'],
		[{ pseo_id: 1, post_ids: [2147483648] }, '"post_ids" must hold positive integers of at most 2147483647 only.'],
		[{ pseo_id: 1, status: 'trash' }, '"status" must be one of draft, pending, private, publish.'],
		[{ pseo_id: 1, status: 'draft', schedule: { start: future, per_day: 1 } }, '"status" and "schedule" exclude each other: a scheduled post is a future post.'],
		[{ pseo_id: 1, schedule: [] }, '"schedule" must be an object { start, per_day }.'],
		[{ pseo_id: 1, schedule: { start: future, per_day: 1, every: 2 } }, 'Unknown field(s) in "schedule": every.'],
		[{ pseo_id: 1, schedule: { start: '2099-01-04', per_day: 1 } }, '"schedule.start" must be an ISO 8601 date-time with a time zone, such as 2027-01-04T09:00:00Z.'],
		[{ pseo_id: 1, schedule: { start: '2001-01-04T09:00:00Z', per_day: 1 } }, '"schedule.start" must be in the future.'],
		[{ pseo_id: 1, schedule: { start: future, per_day: 1001 } }, '"schedule.per_day" must be an integer from 1 to 1000.'],
	])('refuses %j: %s', (body, reason) => {
		expect(() => publish(body)).toThrow(reason);
	});
});
