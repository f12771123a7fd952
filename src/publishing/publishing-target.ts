import { lookup } from 'node:dns/promises';
import type { PseoConfig } from '../config/config.ts';
import { InvalidPayloadError, NotFoundError } from '../errors/index.ts';
import { isoFromDb } from '../shared/database.ts';
import type { Knex } from 'knex';
import { refusedAddressReason } from '../sitemap/address-policy.ts';
import { requireOwnedPseo } from '../websites/ownership.ts';
import { forgetRemotePosts } from '../posts/post-publishing.ts';
import { createOutboundClient, OutboundError, type OutboundClient } from './outbound-client.ts';
import { createSecretBox, type SecretBox } from './secret-box.ts';
import { deleteTarget, readTarget, saveTarget, type TargetRow } from './target-store.ts';
import { createWordPressClient, WordPressError } from './wordpress-client.ts';

/*
 * A website's publishing target: saved only once it is checked (the WordPress user may create posts; the webhook
 * address is one the SSRF guard admits), its secret sealed, and shown without the secret.
 */

/** The WordPress statuses a new post may take (`future` comes from a schedule, not from a default). */
export const POST_STATUSES = ['draft', 'pending', 'private', 'publish'] as const;
export type PostStatus = (typeof POST_STATUSES)[number];

/** A target as PUT /pseo/:id/publishing asks for it; a secret left out keeps the stored one. */
export type TargetInput =
	| { target: 'wordpress'; url: string; username: string; applicationPassword: string | null; defaultStatus: PostStatus }
	| { target: 'webhook'; url: string; secret: string | null };

export interface PublishingDeps {
	database: Knex;
	config: PseoConfig;
	/** Directus's own `SECRET` (not a setting of this extension), from which the secrets' key is derived. */
	instanceSecret: string | undefined;
}

/** The secret box of this instance; 400 when Directus runs without a SECRET to derive the key from. */
function secretBoxOf(instanceSecret: string | undefined): SecretBox {
	if (!instanceSecret) throw new InvalidPayloadError({ reason: 'Publishing needs the SECRET setting of Directus: secrets are encrypted with a key derived from it.' });
	return createSecretBox(instanceSecret);
}

/** The outbound client for a website, under the same address policy as the sitemap reader. */
export function outboundClientOf(config: PseoConfig): OutboundClient {
	return createOutboundClient({
		allowPrivateNetworks: config.sitemap.allowPrivateNetworks,
		userAgent: config.sitemap.userAgent,
		timeoutMs: config.publishing.timeoutMs,
		maxAttempts: config.publishing.maxAttempts,
		backoffBaseMs: config.publishing.backoffMs,
	});
}

/** The target as the interface shows it: everything but the secret. */
export function targetView(row: TargetRow): Record<string, unknown> {
	return {
		pseo_id: row.pseoId,
		target: row.target,
		url: row.url,
		...(row.target === 'wordpress' ? { username: row.username, default_status: row.defaultStatus ?? 'draft' } : {}),
		has_credentials: row.sealedSecret !== '',
		date_created: isoFromDb(row.dateCreated),
		date_updated: isoFromDb(row.dateUpdated),
	};
}

export async function readPublishingTarget(deps: PublishingDeps, userId: string, pseoId: number): Promise<TargetRow> {
	await requireOwnedPseo(deps.database, pseoId, userId);
	const row = await readTarget(deps.database, pseoId);
	if (!row) throw new NotFoundError({ resource: 'Publishing target of PSEO record', id: pseoId });
	return row;
}

export async function removePublishingTarget(deps: PublishingDeps, userId: string, pseoId: number): Promise<void> {
	await requireOwnedPseo(deps.database, pseoId, userId);
	if (!(await deleteTarget(deps.database, pseoId))) throw new NotFoundError({ resource: 'Publishing target of PSEO record', id: pseoId });
	// Whatever the next target is, a remote id of this one must not be used there (it could name another post).
	await forgetRemotePosts(deps.database, pseoId);
}

/** Checks and stores a target (PUT); the stored row. */
export async function savePublishingTarget(deps: PublishingDeps, userId: string, pseoId: number, input: TargetInput): Promise<TargetRow> {
	const website = await requireOwnedPseo(deps.database, pseoId, userId);
	const box = secretBoxOf(deps.instanceSecret);
	const existing = await readTarget(deps.database, pseoId);
	const given = input.target === 'wordpress' ? input.applicationPassword : input.secret;
	const field = input.target === 'wordpress' ? 'application_password' : 'secret';
	let secret = given;
	if (secret === null) {
		// Write-only secrets: a form that edits the address or the user need not ask for the secret again.
		if (!existing || existing.target !== input.target) throw new InvalidPayloadError({ reason: `"${field}" is required.` });
		secret = openStored(box, existing);
	}
	if (input.target === 'wordpress') await checkWordPress(deps.config, input.url, input.username, secret, input.defaultStatus === 'publish');
	else await checkAddress(deps.config, input.url);
	if (existing && (existing.target !== input.target || existing.url !== input.url)) await forgetRemotePosts(deps.database, pseoId);
	await saveTarget(deps.database, {
		pseoId,
		userId: website.backend_user_id,
		target: input.target,
		url: input.url,
		username: input.target === 'wordpress' ? input.username : null,
		defaultStatus: input.target === 'wordpress' ? input.defaultStatus : null,
		sealedSecret: box.seal(secret),
	});
	return (await readTarget(deps.database, pseoId))!;
}

/** The stored secret in plain text; 400 when it was sealed under another SECRET (it must be entered again). */
function openStored(box: SecretBox, row: TargetRow): string {
	try {
		return box.open(row.sealedSecret);
	} catch {
		throw new InvalidPayloadError({ reason: 'The stored secret cannot be read with this instance\'s SECRET (was it changed?); save the target again with its secret.' });
	}
}

async function checkWordPress(config: PseoConfig, url: string, username: string, applicationPassword: string, publish: boolean): Promise<void> {
	const http = outboundClientOf(config);
	try {
		await createWordPressClient(http, { url, username, applicationPassword }).verify({ publish });
	} catch (error) {
		if (error instanceof WordPressError) {
			throw new InvalidPayloadError({ reason: `WordPress refused the target: ${error.message} (${error.code}, HTTP ${error.status}).` });
		}
		if (error instanceof OutboundError) throw new InvalidPayloadError({ reason: `The WordPress site could not be reached: ${error.message}.` });
		throw error;
	} finally {
		http.close();
	}
}

/** A webhook is not called when saved (a receiver may act on any delivery); its address must pass the guard. */
async function checkAddress(config: PseoConfig, url: string): Promise<void> {
	const { hostname } = new URL(url);
	const host = hostname.replace(/^\[|\]$/g, '');
	let addresses: { address: string }[];
	try {
		addresses = await lookup(host, { all: true });
	} catch (error) {
		throw new InvalidPayloadError({ reason: `The webhook host ${host} does not resolve (${(error as { code?: string }).code ?? 'error'}).` });
	}
	for (const { address } of addresses) {
		const reason = refusedAddressReason(address, host, { allowPrivateNetworks: config.sitemap.allowPrivateNetworks });
		if (reason) throw new InvalidPayloadError({ reason: `The webhook address is refused: ${host} (${address}) is a ${reason}.` });
	}
}
