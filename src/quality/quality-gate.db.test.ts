import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { insertUser, insertWebsite, openTestDatabase, vendorAvailable, type TestDatabase } from '../../test/support/db-under-test.ts';
import { createQualityGate } from './quality-gate.ts';

/*
 * The gate's comparison of the pages of one run that are judged but not stored yet, on a real website with no
 * posts: those pages are found by band in memory, as stored posts are found by band in the database.
 */
describe.skipIf(!vendorAvailable('postgres'))('quality gate, pages of one run', () => {
	let db: TestDatabase;
	let knex: Knex;

	beforeAll(async () => {
		db = await openTestDatabase('postgres', 2);
		knex = db.knex;
	});
	afterAll(async () => db?.dispose());

	const body = (topic: string) =>
		Array.from({ length: 40 }, (_, i) => `Sentence ${i} about ${topic} explains step ${i * 3} of the work with care and detail.`).join(' ');
	const page = (topic: string) => ({ title: topic, meta_title: topic, meta_description: null, h1: topic, body: body(topic), faq: [] });
	const place = (route: string) => ({ route, planRoutes: new Set<string>() });
	const nearDuplicate = (issues: { check: string; detail?: string }[]) => issues.find((found) => found.check === 'near_duplicate');

	it('names an unsettled page of the same run as the original of a copy, and forgets it once settled', async () => {
		const pseoId = await insertWebsite(knex, await insertUser(knex, 0));
		const gate = createQualityGate(knex, pseoId, { minWords: 0, maxSimilarity: 0.8 });

		const [first, copy, other] = await gate.assess([
			{ page: page('roof repair'), place: place('/roof-repair') },
			{ page: page('roof repair'), place: place('/roof-repair-copy') },
			{ page: page('garden design in spring'), place: place('/garden') },
		]);
		expect(nearDuplicate(first!.issues)).toBeUndefined();
		expect(nearDuplicate(copy!.issues)?.detail).toMatch(/similar to \/roof-repair;/);
		expect(nearDuplicate(other!.issues)).toBeUndefined();

		// Settled without being stored (dropped): nothing remembers it, neither the run nor the website's index.
		gate.settle(['/roof-repair', '/roof-repair-copy']);
		const [again] = await gate.assess([{ page: page('roof repair'), place: place('/roof-repair-again') }]);
		expect(nearDuplicate(again!.issues)).toBeUndefined();

		// A page assessed twice (a rewrite) replaces its first version rather than matching it.
		const [rewritten] = await gate.assess([{ page: page('roof repair'), place: place('/roof-repair-again') }]);
		expect(nearDuplicate(rewritten!.issues)).toBeUndefined();
	});
});
