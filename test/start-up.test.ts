import { describe, expect, it } from 'vitest';
import { copyDatabase, startDirectus } from './support/directus.ts';

describe('start-up (docs/configuration.md)', () => {
	it.each([
		['PSEO_LEASE_MS', 'soon', 'true'],
		['PSEO_SITEMAP_MAX_DEPTH', '99', 'true'],
		// Directus's default: an extension that fails to load is skipped and Directus serves on. The hook still stops it.
		['PSEO_CONCURRENCY', 'many', 'false'],
	])('a bad %s (%s) stops start-up with a message naming the variable and the value (EXTENSIONS_MUST_LOAD=%s)', async (name, value, mustLoad) => {
		const database = await copyDatabase('sqlite');
		try {
			const failure = await startDirectus({ leg: 'sqlite', database, env: { [name]: value, EXTENSIONS_MUST_LOAD: mustLoad } }).then(
				async (instance) => {
					await instance.stop();
					return null;
				},
				(error: unknown) => String(error),
			);
			expect(failure, 'Directus started with a bad setting').not.toBeNull();
			expect(failure).toMatch(/exited with 1 before answering/);
			expect(failure).toContain(`${name} must be`);
			expect(failure).toContain(value);
		} finally {
			await database.dispose();
		}
	});
});
