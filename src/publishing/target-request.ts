import { InvalidPayloadError } from '../errors/index.ts';
import type { TargetKind } from './target-store.ts';

/** The WordPress statuses a new post may take (`future` comes from a schedule, not from a default). */
export const POST_STATUSES = ['draft', 'pending', 'private', 'publish'] as const;
export type PostStatus = (typeof POST_STATUSES)[number];

/** A target as PUT /pseo/:id/publishing asks for it; a secret left out keeps the stored one. */
export type TargetInput =
	| { target: 'wordpress'; url: string; username: string; applicationPassword: string | null; defaultStatus: PostStatus }
	| { target: 'webhook'; url: string; secret: string | null };

const FIELDS: Record<TargetKind, readonly string[]> = {
	wordpress: ['target', 'url', 'username', 'application_password', 'default_status'],
	webhook: ['target', 'url', 'secret'],
};

const fail = (reason: string): never => {
	throw new InvalidPayloadError({ reason });
};

/** Parses and checks the body of PUT /pseo/:id/publishing; every problem is a 400 naming the field. */
export function parseTargetBody(body: Record<string, unknown>): TargetInput {
	const target = body['target'];
	if (target !== 'wordpress' && target !== 'webhook') fail('"target" must be "wordpress" or "webhook".');
	const kind = target as TargetKind;
	const unknown = Object.keys(body).filter((key) => !FIELDS[kind].includes(key));
	if (unknown.length > 0) fail(`Unknown field(s) for a ${kind} target: ${unknown.join(', ')}. Accepted: ${FIELDS[kind].join(', ')}.`);
	const url = siteUrl(body['url']);
	if (kind === 'webhook') return { target: 'webhook', url, secret: optionalSecret(body['secret'], 'secret', 16) };
	const username = body['username'];
	if (typeof username !== 'string' || username.trim() === '' || username.length > 60) fail('"username" must be the WordPress user name (1 to 60 characters).');
	const status = body['default_status'] ?? 'draft';
	if (!(POST_STATUSES as readonly unknown[]).includes(status)) fail(`"default_status" must be one of ${POST_STATUSES.join(', ')}.`);
	return {
		target: 'wordpress',
		url,
		username: (username as string).trim(),
		applicationPassword: optionalSecret(body['application_password'], 'application_password', 8),
		defaultStatus: status as PostStatus,
	};
}

function siteUrl(value: unknown): string {
	if (typeof value !== 'string' || value.trim() === '') return fail('"url" is required: the http(s) address of the site or receiver.');
	if (value.length > 2048) fail('"url" must be at most 2,048 characters.');
	let url: URL;
	try {
		url = new URL(value.trim());
	} catch {
		return fail('"url" is not a valid URL.');
	}
	if (url.protocol !== 'http:' && url.protocol !== 'https:') fail('"url" must use http or https.');
	if (url.username || url.password) fail('"url" must not carry credentials; use the credential fields.');
	return url.href;
}

function optionalSecret(value: unknown, name: string, minLength: number): string | null {
	if (value === undefined || value === null) return null;
	if (typeof value !== 'string' || value.trim().length < minLength || value.length > 512) fail(`"${name}" must be a string of ${minLength} to 512 characters.`);
	return (value as string).trim();
}
