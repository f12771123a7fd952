import { describe, expect, it } from 'vitest';
import { explainFailure, isMissingRoute } from './api-errors.ts';
import { generationCost } from './cost.ts';
import { startPoller } from './poller.ts';
import { progressOf } from './progress.ts';
import { descriptionLength, websiteProblems } from './website-rules.ts';
import { appLocale, formatsFor } from './formats.ts';
import { spendBlocker } from './blockers.ts';
import { usageByWebsite } from './usage.ts';
import { ledgerParams, noteParts, notedUserIds, pageCount, personName } from './ledger.ts';

describe('explainFailure', () => {
	const envelope = (status: number, error: string, code = 'X') => ({ response: { status, data: { success: false, error, code, timestamp: 't' } } });
	it('says what happened and what to do, and keeps the server\'s words for the details, never raw JSON', () => {
		expect(explainFailure(envelope(402, 'Balance 3 is short of 10.', 'PSEO_INSUFFICIENT_TOKENS'), { paid: true })).toEqual({
			text: 'There are not enough tokens for this, or a daily limit is reached, and nothing was charged. Ask an admin to add tokens, or try again after midnight UTC.',
			detail: 'HTTP 402 PSEO_INSUFFICIENT_TOKENS: Balance 3 is short of 10.',
		});
		expect(explainFailure(envelope(409, 'PSEO 4 already has a generation job pending or running.')).text).toBe('Something is already running here. Wait for it to end, then try again.');
		expect(explainFailure(envelope(400, '"post_count" must be a positive integer.')).text).toMatch(/^The server refused the request\. /);
		expect(explainFailure({ response: { status: 500, data: '<html>' } })).toEqual({ text: 'Something went wrong on the server. Try again; if it keeps failing, tell an admin what the details say.', detail: 'HTTP 500' });
		expect(explainFailure(new Error('Network Error'))).toEqual({ text: 'The server could not be reached. Check your connection and try again.', detail: 'Network Error' });
		expect(explainFailure({ response: { status: 403, data: { errors: [{ message: 'You don\'t have permission' }] } } }).detail).toBe('HTTP 403: You don\'t have permission');
	});

	it('says what a paid action cost: nothing, or the refund the server reports', () => {
		expect(explainFailure(envelope(502, 'Provider timeout. The 20 tokens were refunded.'), { paid: true }).text).toBe('The AI provider did not answer, and the tokens it cost were refunded. Try again in a few minutes.');
		expect(explainFailure(envelope(400, 'No plan.'), { paid: true }).text).toMatch(/, and nothing was charged\. /);
		expect(explainFailure(envelope(400, 'No plan.')).text).not.toMatch(/charged/);
	});

	it('recognises a route this server does not have', () => {
		expect(isMissingRoute({ response: { status: 404, data: { code: 'PSEO_NOT_FOUND', error: 'Route "POST /publish" not found.' } } })).toBe(true);
		expect(isMissingRoute({ response: { status: 404, data: { code: 'PSEO_NOT_FOUND', error: 'Generation 9 not found.' } } })).toBe(false);
	});
});

describe('website form rules', () => {
	it('match POST /pseo: an http(s) address without credentials, a prompt, a software name', () => {
		expect(websiteProblems({ website_url: 'https://example.com', master_prompt: 'Write well.', website_software: 'wordpress' })).toEqual({});
		expect(Object.keys(websiteProblems({ website_url: '', master_prompt: ' ', website_software: '' })).sort()).toEqual(['master_prompt', 'website_software', 'website_url']);
		expect(websiteProblems({ website_url: 'ftp://example.com', master_prompt: 'x', website_software: 'wp' }).website_url).toMatch(/http/);
		expect(websiteProblems({ website_url: 'https://u:p@example.com', master_prompt: 'x', website_software: 'wp' }).website_url).toMatch(/password/);
		expect(websiteProblems({ website_url: 'example.com', master_prompt: 'x', website_software: 'wp' }).website_url).toMatch(/absolute/);
	});

	it('counts a plan description in code points after trimming, as the server does', () => {
		expect(descriptionLength('  café 👍  ')).toBe(6);
	});
});

describe('cost and progress', () => {
	const rates = { token_per_page: 10, token_per_batch_page: 5, token_per_main_json: 20 };
	it('prices a generation at the mode\'s rate and says how much is missing', () => {
		expect(generationCost('bulk', 7, rates, 100)).toEqual({ cost: 35, affordable: true, shortBy: 0 });
		expect(generationCost('on_demand', 1, rates, 4)).toEqual({ cost: 10, affordable: false, shortBy: 6 });
	});

	it('shows created and failed against requested, and 100 % once finished', () => {
		expect(progressOf({ status: 'running', requested_count: 8, created_count: 2, failed_count: 2 })).toEqual({ created: 25, failed: 25, done: 50, finished: false });
		expect(progressOf({ status: 'failed', requested_count: 3, created_count: 1, failed_count: 2 })).toMatchObject({ done: 100, finished: true });
	});
});

describe('poller', () => {
	function harness() {
		const timers: { callback: () => void; ms: number }[] = [];
		const listeners = new Set<() => void>();
		const visibility = {
			hidden: false,
			addEventListener: (_: 'visibilitychange', listener: () => void) => listeners.add(listener),
			removeEventListener: (_: 'visibilitychange', listener: () => void) => listeners.delete(listener),
		};
		const fire = async () => {
			const timer = timers.shift();
			timer?.callback();
			await new Promise((resolve) => setImmediate(resolve));
		};
		return { timers, listeners, visibility, fire };
	}

	it('backs off while nothing changes, speeds up on change, and stops when the job is done', async () => {
		const { timers, visibility, fire } = harness();
		const values = [1, 1, 1, 2, 3];
		const seen: number[] = [];
		const poller = startPoller({
			read: async () => values.shift() ?? 3,
			onData: (value) => seen.push(value),
			isDone: (value) => value === 3,
			key: String,
			minMs: 100,
			maxMs: 1000,
			visibility,
			schedule: (callback, ms) => timers.push({ callback, ms }),
			cancel: () => undefined,
		});
		await new Promise((resolve) => setImmediate(resolve));
		expect(timers.map((timer) => timer.ms)).toEqual([100]);
		await fire();
		expect(timers.at(-1)!.ms).toBe(150);
		await fire();
		expect(timers.at(-1)!.ms).toBe(225);
		await fire();
		expect(timers.at(-1)!.ms).toBe(100);
		await fire();
		expect(seen).toEqual([1, 1, 1, 2, 3]);
		expect(poller.running).toBe(false);
		expect(timers).toHaveLength(0);
	});

	it('reads nothing while the page is hidden, and reads at once when it is shown again', async () => {
		const { timers, listeners, visibility, fire } = harness();
		let reads = 0;
		const poller = startPoller({
			read: async () => ++reads,
			onData: () => undefined,
			isDone: () => false,
			key: String,
			minMs: 100,
			visibility,
			schedule: (callback, ms) => timers.push({ callback, ms }),
			cancel: () => undefined,
		});
		await new Promise((resolve) => setImmediate(resolve));
		expect(reads).toBe(1);
		visibility.hidden = true;
		await fire();
		expect(reads).toBe(1);
		expect(timers).toHaveLength(0);
		visibility.hidden = false;
		for (const listener of listeners) listener();
		await new Promise((resolve) => setImmediate(resolve));
		expect(reads).toBe(2);
		poller.stop();
		expect(listeners.size).toBe(0);
	});
});

describe('formats', () => {
	const moment = '2026-01-31T09:30:00.000Z';
	const now = new Date('2026-01-31T09:33:10.000Z');
	it('formats dates, times and numbers in English and in German', () => {
		const english = formatsFor('en-US', 'UTC');
		// ICU versions differ on the space before AM (a narrow no-break space in newer ones).
		expect(english.dateTime(moment).replace(/\s/g, ' ')).toBe('Jan 31, 2026, 9:30 AM');
		expect(english.day(moment)).toBe('Jan 31, 2026');
		expect(english.relative(moment, now)).toBe('3 minutes ago');
		expect(english.number(12500)).toBe('12,500');
		expect(english.signed(500)).toBe('+500');
		const german = formatsFor('de-DE', 'UTC');
		expect(german.dateTime(moment)).toBe('31.01.2026, 09:30');
		expect(german.relative(moment, now)).toBe('vor 3 Minuten');
		expect(german.relative('2026-01-30T09:30:00.000Z', now)).toBe('gestern');
		expect(german.number(12500)).toBe('12.500');
	});

	it('formats in the time zone given', () => {
		expect(formatsFor('de-DE', 'Europe/Berlin').dateTime(moment)).toBe('31.01.2026, 10:30');
	});

	it('shows what is not a date as it is', () => {
		expect(formatsFor('en-US').relative('soon')).toBe('soon');
	});

	it('takes the user\'s language, else the project\'s, else the browser\'s', () => {
		expect(appLocale('de-DE', 'fr-FR', 'en-GB')).toBe('de-DE');
		expect(appLocale(null, 'fr-FR', 'en-GB')).toBe('fr-FR');
		expect(appLocale(null, null, 'en-GB')).toBe('en-GB');
		expect(appLocale('not a language', null, undefined)).toBe('en-US');
	});
});

describe('ledger', () => {
	it('asks the items API for a page, newest first, with the count and only the filters chosen', () => {
		expect(ledgerParams({ userId: 'u1', page: 2, limit: 25 })).toEqual({
			fields: ['id', 'amount', 'reason', 'balance_after', 'note', 'date_created', 'pseo_id', 'user_id'],
			sort: ['-id'],
			limit: 25,
			page: 2,
			meta: 'filter_count',
			filter: { user_id: { _eq: 'u1' } },
		});
		const all = ledgerParams({ pseoId: 4, reason: 'refund', page: 1, limit: 25, withUser: true });
		expect(all['filter']).toEqual({ _and: [{ pseo_id: { _eq: 4 } }, { reason: { _eq: 'refund' } }] });
		expect(all['fields']).toContain('user_id.email');
		expect(all['fields']).not.toContain('user_id');
		expect(ledgerParams({ page: 1, limit: 10 })).not.toHaveProperty('filter');
	});

	it('names a person by name, else by e-mail, never by id', () => {
		expect(personName({ first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com' })).toBe('Ada Lovelace');
		expect(personName({ first_name: null, last_name: ' ', email: 'ada@example.com' })).toBe('ada@example.com');
		expect(personName(null)).toBe('a deleted user');
	});

	it('finds the people a note names by id', () => {
		const id = '9A9E327C-1111-4222-8333-444455556666';
		expect(noteParts(`initial balance set by ${id}`)).toEqual([{ text: 'initial balance set by ' }, { userId: id.toLowerCase() }]);
		expect(noteParts('content plan')).toEqual([{ text: 'content plan' }]);
		expect(notedUserIds([{ note: `set by ${id}` }, { note: null }, { note: `set by ${id}` }])).toEqual([id.toLowerCase()]);
	});

	it('counts pages, at least one', () => {
		expect(pageCount(0, 25)).toBe(1);
		expect(pageCount(60, 25)).toBe(3);
	});
});

describe('spendBlocker', () => {
	const n = formatsFor('en-US').number;
	it('says what a charge lacks, the balance before the caps, and what to do', () => {
		const none = { cost: 20, balance: 1000, userCap: null, websiteCap: null };
		expect(spendBlocker('A plan', none, n)).toBeNull();
		expect(spendBlocker('A plan', { ...none, balance: 5 }, n)).toBe('A plan needs 15 more tokens: ask an admin to add tokens to your balance.');
		expect(spendBlocker('A plan', { ...none, userCap: { limit: 1000, left: 10 } }, n)).toBe('Your daily limit of 1,000 tokens leaves 10 for today: try again after midnight UTC.');
		expect(spendBlocker('A plan', { ...none, userCap: { limit: 1000, left: 20 } }, n)).toBeNull();
	});
});

describe('usageByWebsite', () => {
	const row = (pseoId: number | string, year: number, month: number, day: number, prompt: number | string, completion: number) => ({
		pseo_id: pseoId,
		date_created_year: year,
		date_created_month: month,
		date_created_day: day,
		sum: { usage_prompt_tokens: prompt, usage_completion_tokens: completion, usage_requests: 1 },
	});
	it('groups the aggregate per website, days in order, the website that used most first', () => {
		const sites = usageByWebsite([row(1, 2026, 2, 1, 10, 5), row(2, 2026, 1, 31, '300', 100), row(1, 2026, 1, 9, 40, 20)]);
		expect(sites.map((site) => site.pseoId)).toEqual([2, 1]);
		expect(sites[1]!.days.map((day) => day.day)).toEqual(['2026-01-09', '2026-02-01']);
		expect(sites[1]!.peak).toBe(60);
		expect(sites[0]!.days[0]).toEqual({ day: '2026-01-31', prompt: 300, completion: 100, requests: 1 });
	});
});
