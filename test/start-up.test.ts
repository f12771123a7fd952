import { describe, expect, it } from 'vitest';
import { copyDatabase, startDirectus, type DatabaseCopy } from './support/directus.ts';
import { legAvailable } from './support/legs.ts';
import { pgAdmin } from './support/postgres.ts';

/** What a start on `database` printed before Directus exited; null when it started (it is stopped again). */
async function failedStart(database: DatabaseCopy, env: Record<string, string> = {}): Promise<string | null> {
	return startDirectus({ leg: database.leg, database, env }).then(
		async (instance) => {
			await instance.stop();
			return null;
		},
		(error: unknown) => String(error),
	);
}

describe('start-up (docs/configuration.md)', () => {
	it.each([
		['PSEO_LEASE_MS', 'soon', 'true'],
		['PSEO_SITEMAP_MAX_DEPTH', '99', 'true'],
		// Directus's default: an extension that fails to load is skipped and Directus serves on. The hook still stops it.
		['PSEO_CONCURRENCY', 'many', 'false'],
	])('a bad %s (%s) stops start-up with a message naming the variable and the value (EXTENSIONS_MUST_LOAD=%s)', async (name, value, mustLoad) => {
		const database = await copyDatabase('sqlite');
		try {
			const failure = await failedStart(database, { [name]: value, EXTENSIONS_MUST_LOAD: mustLoad });
			expect(failure, 'Directus started with a bad setting').not.toBeNull();
			expect(failure).toMatch(/exited with 1 before answering/);
			expect(failure).toContain(`${name} must be`);
			expect(failure).toContain(value);
		} finally {
			await database.dispose();
		}
	});

	// A database the extension cannot install itself into: here the unique index that keeps one plan page per route
	// cannot be built, because the rows already break it. Serving without it would let a route be planned twice.
	it.skipIf(!legAvailable('postgres'))('an index that cannot be built stops start-up with its cause, even where a failing extension is only skipped', async () => {
		const database = await copyDatabase('postgres');
		try {
			const name = database.env['DB_DATABASE']!;
			await pgAdmin('DROP INDEX pseo_plan_pages_pseo_route_unique', name);
			await pgAdmin(
				`WITH site AS (INSERT INTO pseo (website_url, master_prompt, post_counts_total) VALUES ('https://example.com', 'Write helpful pages.', 0) RETURNING id)
				 INSERT INTO pseo_plan_pages (pseo_id, route, title, has_post) SELECT id, '/twice', 'Twice', false FROM site, generate_series(1, 2)`,
				name,
			);
			const failure = await failedStart(database, { EXTENSIONS_MUST_LOAD: 'false' });
			expect(failure, 'Directus started without its unique index').not.toBeNull();
			expect(failure).toMatch(/exited with 1 before answering/);
			expect(failure).toContain('its schema, policy or indexes could not be installed, stopping');
			expect(failure).toMatch(/pseo_plan_pages_pseo_route_unique/);
		} finally {
			await database.dispose();
		}
	});
});
