import { describe, expect, it } from 'vitest';
import type { Logger } from './logger.ts';
import { isTransientConflict, retryConflicts } from './transaction.ts';

function recordingLogger(): Logger & { warnings: { obj: object; msg?: string }[] } {
	const warnings: { obj: object; msg?: string }[] = [];
	const ignore = () => {};
	return { warnings, debug: ignore, info: ignore, error: ignore, warn: (obj, msg) => warnings.push({ obj, ...(msg ? { msg } : {}) }) };
}

const deadlock = Object.assign(new Error('Deadlock found when trying to get lock; try restarting transaction'), { code: 'ER_LOCK_DEADLOCK', errno: 1213 });

describe('isTransientConflict', () => {
	it.each([
		['MySQL deadlock (1213)', { errno: 1213 }],
		['MySQL lock wait timeout (1205)', { code: 'ER_LOCK_WAIT_TIMEOUT', errno: 1205 }],
		['PostgreSQL serialization_failure', { code: '40001' }],
		['PostgreSQL deadlock_detected', { code: '40P01' }],
	])('retries %s', (_name, error) => {
		expect(isTransientConflict(Object.assign(new Error('x'), error))).toBe(true);
	});

	it.each([
		['a unique violation', { code: '23505' }],
		['a MySQL duplicate entry', { code: 'ER_DUP_ENTRY', errno: 1062 }],
		['an SQLite constraint', { code: 'SQLITE_CONSTRAINT' }],
		['a plain error', {}],
	])('does not retry %s', (_name, error) => {
		expect(isTransientConflict(Object.assign(new Error('x'), error))).toBe(false);
	});

	it('does not retry what is not an error object', () => {
		expect(isTransientConflict(null)).toBe(false);
		expect(isTransientConflict('40001')).toBe(false);
	});
});

describe('retryConflicts', () => {
	it('runs the work again after a deadlock and logs each retry', async () => {
		const logger = recordingLogger();
		let calls = 0;
		const result = await retryConflicts(
			async () => {
				calls++;
				if (calls < 3) throw deadlock;
				return 'done';
			},
			{ logger, what: 'generation trigger', context: { userId: 'u1' } },
		);
		expect(result).toBe('done');
		expect(calls).toBe(3);
		expect(logger.warnings).toHaveLength(2);
		expect(logger.warnings[0]!.obj).toMatchObject({ userId: 'u1', attempt: 1, code: 'ER_LOCK_DEADLOCK' });
		expect(logger.warnings[1]!.msg).toContain('generation trigger');
	});

	it('gives up after five attempts with the database error', async () => {
		const logger = recordingLogger();
		let calls = 0;
		await expect(
			retryConflicts(
				async () => {
					calls++;
					throw deadlock;
				},
				{ logger, what: 'job claim' },
			),
		).rejects.toBe(deadlock);
		expect(calls).toBe(5);
		expect(logger.warnings).toHaveLength(4);
	});

	it('throws any other error at once', async () => {
		const logger = recordingLogger();
		const short = new Error('insufficient tokens');
		let calls = 0;
		await expect(
			retryConflicts(
				async () => {
					calls++;
					throw short;
				},
				{ logger, what: 'generation trigger' },
			),
		).rejects.toBe(short);
		expect(calls).toBe(1);
		expect(logger.warnings).toHaveLength(0);
	});
});
