import { describe, expect, it } from 'vitest';
import { idempotencyKeyOf, requestHash } from './idempotent-request.ts';

describe('idempotencyKeyOf', () => {
	it('takes 1 to 255 printable ASCII characters, and nothing when the header is absent', () => {
		expect(idempotencyKeyOf(undefined)).toBeNull();
		expect(idempotencyKeyOf('5f0c7e0e-3c52-4f0f-9d7e-2b8f9b1e4a11')).toBe('5f0c7e0e-3c52-4f0f-9d7e-2b8f9b1e4a11');
		expect(idempotencyKeyOf('k'.repeat(255))).toHaveLength(255);
	});

	it.each([[''], ['k'.repeat(256)], ['two words'], ['tab\there'], ['clé']])('refuses %j with a 400 that names the header', (value) => {
		expect(() => idempotencyKeyOf(value)).toThrow(expect.objectContaining({ status: 400, message: expect.stringContaining('Idempotency-Key') }));
	});
});

describe('requestHash', () => {
	it('is the same for the same JSON whatever the order of its keys, and differs for another value', () => {
		expect(requestHash({ pseo_id: 1, post_count: 2, nested: { b: 1, a: [1, { y: 2, x: 1 }] } })).toBe(
			requestHash({ nested: { a: [1, { x: 1, y: 2 }], b: 1 }, post_count: 2, pseo_id: 1 }),
		);
		expect(requestHash({ pseo_id: 1, post_count: 2 })).not.toBe(requestHash({ pseo_id: 1, post_count: 3 }));
		expect(requestHash({ pseo_id: 1 })).not.toBe(requestHash({ pseo_id: '1' }));
		expect(requestHash([1, 2])).not.toBe(requestHash([2, 1]));
		// No body and a null one are the same request.
		expect(requestHash(undefined)).toBe(requestHash(null));
		expect(requestHash({ a: undefined })).toBe(requestHash({}));
	});
});
