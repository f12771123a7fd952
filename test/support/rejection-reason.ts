import { expect } from 'vitest';
import { InvalidPayloadError } from '../../src/errors/index.ts';

/** The message of the 400 that `parse` throws; fails the test when it throws anything else, or nothing. */
export function rejectionReason(parse: () => unknown): string {
	try {
		parse();
	} catch (error) {
		expect(error).toBeInstanceOf(InvalidPayloadError);
		expect((error as { status: number }).status).toBe(400);
		return (error as Error).message;
	}
	throw new Error('the contract accepted the request');
}
