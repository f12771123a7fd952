import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { beforeAll, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { describeOnVendors, insertUser, insertWebsite, silentLogger, waitForLockWaiter } from '../../test/support/db-under-test.ts';
import { readConfig } from '../config/config.ts';
import { SpendCapError } from '../errors/index.ts';
import { chargeTokens, LEDGER_TABLE, lockPayer, readBalance, refundTokens } from '../ledger/token-ledger.ts';
import { addPostCount } from '../websites/website-store.ts';
import { importPlan, type ImportDeps, type ImportRequest } from './import-plan.ts';
import type { OpenedFile } from './import-source.ts';
import { countPlanPages } from './plan-page-store.ts';
import { PLANS } from './plan-store.ts';

/*
 * A plan import meets the same user's money transactions (a bulk trigger's charge, an ingest's chunk) on the real
 * schema. The import stores its pages in one long transaction whose foreign keys take shared locks on the website
 * and user rows; the other transaction holds the payer's row. The import's cap must count a charge that committed
 * while it waited, and a deadlock that InnoDB breaks by aborting the import must not end it.
 */
describeOnVendors('plan import beside money transactions', (database, vendor) => {
	let knex: Knex;
	beforeAll(() => {
		knex = database().knex;
	});

	/**
	 * A CSV file of `pages` cities whose first opening is held: the test learns when the import starts reading it
	 * (its transaction is open by then) and lets the rows through when it chooses. A second opening, by an import
	 * run again, reads the whole file at once.
	 */
	const heldFile = (pages: number) => {
		const csv = ['city', ...Array.from({ length: pages }, (_, i) => `City ${i}`)].join('\n');
		let reading!: () => void;
		const read = new Promise<void>((resolve) => (reading = resolve));
		const held = new Readable({ read: () => reading() });
		let openings = 0;
		const openFile = async (): Promise<OpenedFile> => ({ stream: openings++ === 0 ? held : Readable.from([csv]), type: 'text/csv', filename: 'cities.csv' });
		return { openFile, read, release: () => (held.push(csv), held.push(null)), openings: () => openings };
	};
	const depsWith = (env: Record<string, string>, openFile: ImportDeps['openFile']): ImportDeps => ({
		database: knex,
		logger: silentLogger,
		config: readConfig(env),
		siteRoutes: async () => [],
		openFile,
	});
	const request = (pseoId: number, mode: ImportRequest['mode']): ImportRequest => ({
		pseoId,
		languageCode: 'en-US',
		template: { route: '/{city}', title: 'Plumbers in {city}' },
		data: { fileId: randomUUID() },
		mode,
		source: 'import',
		follow: null,
	});
	const planStatus = async (pseoId: number) => ((await knex(PLANS).where('pseo_id', pseoId).select('status')) as { status: string }[]).map((row) => row.status);
	/** Runs `work` on a transaction the test holds, and rolls it back whatever happens, so no lock outlives a test. */
	const holding = async (work: (trx: Knex.Transaction) => Promise<void>) => {
		const trx = await knex.transaction();
		try {
			await work(trx);
		} finally {
			if (!trx.isCompleted()) await trx.rollback();
		}
	};

	it('counts against the daily cap a charge that committed while the import was reading its file', async () => {
		const userId = await insertUser(knex, 1000);
		const pseoId = await insertWebsite(knex, userId);
		const file = heldFile(5);
		const imported = importPlan(depsWith({ PSEO_TOKEN_PER_IMPORTED_PAGE: '10', PSEO_USER_DAILY_TOKEN_CAP: '100' }, file.openFile), userId, request(pseoId, 'replace')).catch(
			(error: unknown) => error,
		);
		// The import's transaction has read the website's plan (to replace it) and is reading the file, when a
		// bulk trigger of the same user charges 60 of the cap of 100.
		await file.read;
		await holding(async (trigger) => {
			await lockPayer(trigger, userId);
			await chargeTokens(trigger, userId, 60, { pseoId, note: 'bulk trigger' });
			await trigger.commit();
		});
		file.release();

		// 60 spent and 50 more would pass the cap of 100: the import is refused whole.
		const error = await imported;
		expect(error).toBeInstanceOf(SpendCapError);
		expect(error).toMatchObject({ status: 402, extensions: { cap: 'user', limit: 100, left: 40, required: 50 } });
		expect(await readBalance(knex, userId)).toBe(940);
		expect(await countPlanPages(knex, pseoId)).toBe(0);
		expect(await planStatus(pseoId)).toEqual(['failed']);
	});

	it('is run again, not failed, when the database breaks a deadlock with an ingest of the same user by aborting it', async () => {
		const userId = await insertUser(knex, 1000);
		const pseoId = await insertWebsite(knex, userId);
		const file = heldFile(5);
		const imported = importPlan(depsWith({}, file.openFile), userId, request(pseoId, 'append')).catch((error: unknown) => error);
		await file.read;
		await holding(async (ingest) => {
			// An ingest's chunk: the payer's row first, then its pages' refunds (which make it the heavier of the
			// two, so that InnoDB aborts the import); meanwhile the import's pages wait for the payer's row.
			await lockPayer(ingest, userId);
			for (let i = 0; i < 40; i++) await refundTokens(ingest, userId, 1, { pseoId, note: 'page failed' });
			file.release();
			await waitForLockWaiter(knex);
			// The website's post count, whose row the import's pages hold a shared lock on: a lock cycle.
			await addPostCount(ingest, pseoId, 1);
		});

		expect(await imported).toEqual({ total_pages: 5, added: 5, updated: 0, unchanged: 0, retired: 0, skipped: { duplicate: 0, on_site: 0, invalid: 0, missing_data: 0 } });
		expect(await countPlanPages(knex, pseoId)).toBe(5);
		expect(await planStatus(pseoId)).toEqual(['ready']);
		expect(await readBalance(knex, userId)).toBe(1000);
		const ledger = await knex(LEDGER_TABLE).where('user_id', userId).count({ n: '*' }).first();
		expect(Number(ledger!['n'])).toBe(0);
		// On MariaDB the import ran twice, reading its file again.
		if (vendor === 'mariadb') expect(file.openings()).toBe(2);
	});
});
