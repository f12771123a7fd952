import { describe, expect, it } from 'vitest';
import { createSecretBox } from './secret-box.ts';

describe('secret box', () => {
	it('round-trips a secret, and the sealed form does not contain it', () => {
		const box = createSecretBox('instance-secret-a');
		const sealed = box.seal('abcd EFGH ijkl MNOP qrst UVWX');
		expect(sealed).not.toContain('abcd');
		expect(box.open(sealed)).toBe('abcd EFGH ijkl MNOP qrst UVWX');
	});

	it('seals the same secret differently every time (random nonce)', () => {
		const box = createSecretBox('instance-secret-a');
		expect(box.seal('same')).not.toBe(box.seal('same'));
	});

	it('refuses a value sealed under another instance secret, or altered', () => {
		const sealed = createSecretBox('instance-secret-a').seal('secret');
		expect(() => createSecretBox('instance-secret-b').open(sealed)).toThrow();
		const parts = sealed.split(':');
		parts[3] = Buffer.from('tampered').toString('base64');
		expect(() => createSecretBox('instance-secret-a').open(parts.join(':'))).toThrow();
		expect(() => createSecretBox('instance-secret-a').open('plain text')).toThrow('unrecognised');
	});
});
