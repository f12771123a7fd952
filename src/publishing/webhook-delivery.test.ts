import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signatureFor } from './webhook-delivery.ts';

describe('signatureFor', () => {
	it('is t=<unix>,v1=<hex HMAC-SHA256 of "t.body">, as a receiver recomputes it', () => {
		const body = JSON.stringify({ event: 'post.created', post: { id: 1 } });
		const header = signatureFor('whsec-0123456789abcdef', 1_800_000_000, body);
		const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
		expect(match).not.toBeNull();
		expect(Number(match![1])).toBe(1_800_000_000);
		const expected = createHmac('sha256', 'whsec-0123456789abcdef').update(`1800000000.${body}`).digest('hex');
		expect(match![2]).toBe(expected);
		expect(signatureFor('another-secret-0123', 1_800_000_000, body)).not.toBe(header);
	});
});
