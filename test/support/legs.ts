import { inject } from 'vitest';
import type { Leg } from './directus.ts';

/**
 * The legs of the suites that test the engine (durability, multi-instance): both database vendors on the
 * project's own Directus 12. PostgreSQL is skipped (and says so) when unreachable.
 */
export const LEGS: Leg[] = ['sqlite', 'postgres'];

/**
 * The legs of the suites that cover the interface (websites, generation, content plan, sitemap): the two above,
 * and SQLite on Directus 11.16, the other host the bundle supports (`directus:extension.host`).
 */
export const INTERFACE_LEGS: Leg[] = [...LEGS, 'sqlite-d11'];

export function legAvailable(leg: Leg): boolean {
	return leg !== 'postgres' || inject('postgresAvailable');
}
