import { inject } from 'vitest';
import type { Leg } from './directus.ts';

/** The database legs every integration suite runs on; PostgreSQL is skipped (and says so) when unreachable. */
export const LEGS: Leg[] = ['sqlite', 'postgres'];

export function legAvailable(leg: Leg): boolean {
	return leg === 'sqlite' || inject('postgresAvailable');
}
