import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/*
 * Publishing secrets (Application Passwords, webhook secrets) at rest. They are encrypted with AES-256-GCM under a
 * key derived by HKDF-SHA256 from the instance's SECRET, the value Directus already requires to be the same on
 * every instance (it signs the login tokens), so any replica can decrypt what another stored and a database dump
 * alone reveals nothing. The stored form is versioned so the scheme can change without a migration.
 */

const VERSION = 'v1';
const INFO = 'pseo-automation publishing secrets v1';

/** Encrypts and decrypts one kind of secret under a key derived from the instance secret. */
export interface SecretBox {
	seal(plain: string): string;
	/** The plain secret; throws when the stored value was sealed under another instance secret or was altered. */
	open(sealed: string): string;
}

/** Directus's `SECRET` from its env, which every instance of one deployment shares. */
export function instanceSecretOf(env: Record<string, unknown>): string | undefined {
	const secret = env['SECRET'];
	return typeof secret === 'string' && secret !== '' ? secret : typeof secret === 'number' ? String(secret) : undefined;
}

export function createSecretBox(instanceSecret: string): SecretBox {
	const key = Buffer.from(hkdfSync('sha256', instanceSecret, 'pseo-publishing', INFO, 32));
	return {
		seal(plain) {
			const iv = randomBytes(12);
			const cipher = createCipheriv('aes-256-gcm', key, iv);
			const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
			return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
		},
		open(sealed) {
			const [version, iv, tag, body] = sealed.split(':');
			if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('unrecognised sealed secret');
			const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
			decipher.setAuthTag(Buffer.from(tag, 'base64'));
			return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
		},
	};
}
