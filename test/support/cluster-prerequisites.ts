import { describe, inject, it } from 'vitest';
import { PG, REDIS_URL } from './paths.ts';
import { redisReachable } from './redis.ts';

const redisUp = await redisReachable(REDIS_URL);

/**
 * What a suite of several instances on one PostgreSQL database and Redis lacks on this machine: empty when it can
 * run. A suite skips itself when something is missing, and says so, unless PSEO_TEST_REQUIRE_POSTGRES=1 (CI), where
 * a failing test stands in its place instead.
 */
export function clusterMissing(suite: string): string[] {
	const missing = [...(inject('postgresAvailable') ? [] : [`PostgreSQL at ${PG.host}:${PG.port}`]), ...(redisUp ? [] : [`Redis at ${REDIS_URL}`])];
	if (missing.length === 0) return missing;
	if (process.env['PSEO_TEST_REQUIRE_POSTGRES'] !== '1') {
		console.warn(`${suite} skipped: ${missing.join(' and ')} not reachable (set PSEO_TEST_REQUIRE_POSTGRES=1 to fail instead).`);
		return missing;
	}
	describe(`${suite} prerequisites`, () => {
		it('PostgreSQL and Redis are reachable (PSEO_TEST_REQUIRE_POSTGRES=1)', () => {
			throw new Error(`the ${suite} needs ${missing.join(' and ')}, which ${missing.length > 1 ? 'are' : 'is'} not reachable`);
		});
	});
	return missing;
}
