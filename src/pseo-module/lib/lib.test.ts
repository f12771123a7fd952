import { describe, expect, it } from 'vitest';
import { explainFailure, isMissingRoute } from './api-errors.ts';
import { generationCost } from './cost.ts';
import { startPoller } from './poller.ts';
import { progressOf } from './progress.ts';
import { aiProblems, descriptionLength, websiteProblems } from './website-rules.ts';
import { appLocale, formatsFor } from './formats.ts';
import { spendBlocker, startBlocker } from './blockers.ts';
import { aiRun, modelItems, providerItems, providerName, type ProviderCatalog } from './providers.ts';
import { usageByWebsite } from './usage.ts';
import { ledgerParams, noteParts, notedUserIds, pageCount, personName } from './ledger.ts';
import { pseoApi } from './pseo-api.ts';
import { factChanges } from './fact-changes.ts';

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
		expect(websiteProblems({ website_url: 'https://example.com', master_prompt: 'Write well.', website_software: 'wordpress', provider: '', model: '' })).toEqual({});
		expect(Object.keys(websiteProblems({ website_url: '', master_prompt: ' ', website_software: '', provider: '', model: '' })).sort()).toEqual(['master_prompt', 'website_software', 'website_url']);
		expect(websiteProblems({ website_url: 'ftp://example.com', master_prompt: 'x', website_software: 'wp', provider: '', model: '' }).website_url).toMatch(/http/);
		expect(websiteProblems({ website_url: 'https://u:p@example.com', master_prompt: 'x', website_software: 'wp', provider: '', model: '' }).website_url).toMatch(/password/);
		expect(websiteProblems({ website_url: 'example.com', master_prompt: 'x', website_software: 'wp', provider: '', model: '' }).website_url).toMatch(/absolute/);
	});

	it('take a provider of the list and a model of at most 200 characters, one the provider allows when it lists them', () => {
		const site = { website_url: 'https://example.com', master_prompt: 'Write well.', website_software: 'wordpress' };
		expect(websiteProblems({ ...site, provider: 'anthropic', model: 'claude-sonnet-4-6' })).toEqual({});
		expect(websiteProblems({ ...site, provider: 'mistral', model: '' })).toEqual({ provider: 'Choose a provider from the list.' });
		expect(websiteProblems({ ...site, provider: '', model: 'm'.repeat(201) })).toEqual({ model: 'At most 200 characters.' });
		expect(aiProblems({ provider: 'openai', model: `  ${'m'.repeat(200)}  ` })).toEqual({});
		expect(aiProblems({ provider: 'anthropic', model: 'claude-opus-4' }, ['claude-haiku-4-5', 'claude-sonnet-4-6'])).toEqual({
			model: 'Not allowed for this provider: choose one of claude-haiku-4-5, claude-sonnet-4-6.',
		});
		// Blank is the provider's default, whatever it allows.
		expect(aiProblems({ provider: 'anthropic', model: '' }, ['claude-haiku-4-5'])).toEqual({});
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

	it('says how long something lasted in its largest whole unit', () => {
		expect(formatsFor('en-US').duration(3 * 60_000 + 20_000)).toBe('3 minutes');
		expect(formatsFor('en-US').duration(1000)).toBe('1 second');
		expect(formatsFor('en-US').duration(26 * 3600_000)).toBe('1 day');
		expect(formatsFor('de-DE').duration(2 * 3600_000)).toBe('2 Stunden');
		expect(formatsFor('en-US').duration(-5)).toBe('0 seconds');
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

describe('providers', () => {
	const catalog: ProviderCatalog = {
		default: { provider: 'openai', model: 'gpt-5.4-mini' },
		providers: [
			{ provider: 'openai', name: 'OpenAI', origin: 'environment', models: null, default_model: 'gpt-5.4-mini', bulk: 'batch' },
			{ provider: 'anthropic', name: 'Anthropic', origin: 'directus-settings', models: ['claude-haiku-4-5', 'claude-sonnet-4-6'], default_model: 'claude-haiku-4-5', bulk: 'page_by_page' },
			{ provider: 'google', name: 'Google', origin: null, models: null, default_model: 'gemini-2.5-flash', bulk: 'page_by_page' },
			{ provider: 'openai_compatible', name: 'Ollama', origin: null, models: null, default_model: 'gpt-5.4-mini', bulk: 'batch' },
		],
	};

	it('offers the default by what it runs, every provider by name, and says which are not configured', () => {
		expect(providerItems(catalog)).toEqual([
			{ text: 'Default (OpenAI · gpt-5.4-mini)', value: '' },
			{ text: 'OpenAI', value: 'openai' },
			{ text: 'Anthropic', value: 'anthropic' },
			{ text: 'Google (not configured)', value: 'google' },
			{ text: 'Ollama (not configured)', value: 'openai_compatible' },
		]);
		// Without the catalog, every provider by its kind's name: the server still checks what is saved.
		expect(providerItems(null).map((item) => item.text)).toEqual(['Default', 'OpenAI', 'Anthropic', 'Google', 'OpenAI-compatible server']);
		expect(providerName('openai_compatible', catalog)).toBe('Ollama');
		expect(providerName('anthropic', null)).toBe('Anthropic');
	});

	it('lists the models a provider allows with its default first, and none (free text) when any may be named', () => {
		const anthropic = catalog.providers[1]!;
		expect(modelItems(anthropic, '')).toEqual([
			{ text: 'Default (claude-haiku-4-5)', value: '' },
			{ text: 'claude-haiku-4-5', value: 'claude-haiku-4-5' },
			{ text: 'claude-sonnet-4-6', value: 'claude-sonnet-4-6' },
		]);
		// A saved model the list no longer allows stays visible, marked.
		expect(modelItems(anthropic, 'claude-opus-4')?.at(-1)).toEqual({ text: 'claude-opus-4 (not allowed)', value: 'claude-opus-4' });
		expect(modelItems(catalog.providers[0]!, '')).toBeNull();
		expect(modelItems(null, '')).toBeNull();
	});

	it('tells what a website runs with: its own provider and model, or the defaults', () => {
		expect(aiRun(catalog, { provider: null, model: null })).toEqual({
			name: 'OpenAI',
			model: 'gpt-5.4-mini',
			chosen: false,
			defaultProvider: true,
			configured: true,
			allowed: null,
			bulk: 'batch',
		});
		expect(aiRun(catalog, { provider: 'anthropic', model: null })).toMatchObject({ name: 'Anthropic', model: 'claude-haiku-4-5', chosen: true, bulk: 'page_by_page' });
		expect(aiRun(catalog, { provider: 'anthropic', model: ' claude-sonnet-4-6 ' })).toMatchObject({ model: 'claude-sonnet-4-6', allowed: ['claude-haiku-4-5', 'claude-sonnet-4-6'] });
		expect(aiRun(catalog, { provider: 'google' })).toMatchObject({ name: 'Google', configured: false });
		expect(aiRun(null, { provider: 'anthropic' })).toBeNull();
	});

	it('stops Start when the provider is not configured or does not allow the model, before the balance', () => {
		const n = formatsFor('en-US').number;
		const facts = { pages: 1, cost: 10, balance: 0, activeJobId: null, openRoutes: { open: 5, total: 5 }, userCap: null, websiteCap: null };
		expect(startBlocker({ ...facts, ai: aiRun(catalog, { provider: 'google' }) }, { number: n })).toBe(
			'Google is not configured: choose another provider in the AI tab, or ask an admin to add its key in Settings → AI.',
		);
		expect(startBlocker({ ...facts, ai: aiRun(catalog, { provider: 'anthropic', model: 'claude-opus-4' }) }, { number: n })).toBe(
			'Anthropic does not allow the model claude-opus-4 here: choose one of claude-haiku-4-5, claude-sonnet-4-6 in the AI tab.',
		);
		const nothing = { ...catalog, default: { provider: 'google' as const, model: 'gemini-2.5-flash' } };
		expect(startBlocker({ ...facts, ai: aiRun(nothing, {}) }, { number: n })).toMatch(/^No AI provider is configured \(the default is Google\)/);
		// A runnable choice, or an unknown catalog, leaves the other reasons.
		expect(startBlocker({ ...facts, ai: aiRun(catalog, { provider: 'anthropic', model: 'claude-sonnet-4-6' }) }, { number: n })).toMatch(/^Start needs 10 more tokens/);
		expect(startBlocker({ ...facts, ai: null }, { number: n })).toMatch(/^Start needs 10 more tokens/);
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

describe('pseoApi.openRoutes', () => {
	it('counts the plan pages without a post, retired pages aside (nothing generates them)', async () => {
		const asked: Record<string, unknown>[] = [];
		const http = {
			get: async <T>(_url: string, config?: { params?: Record<string, unknown> }) => {
				asked.push(config?.params ?? {});
				return { data: { data: [{ has_post: false, count: { id: '4' } }, { has_post: true, count: { id: 5 } }] } as T };
			},
			post: async <T>() => ({ data: {} as T }),
			put: async <T>() => ({ data: {} as T }),
			patch: async <T>() => ({ data: {} as T }),
			delete: async <T>() => ({ data: {} as T }),
		};
		expect(await pseoApi(http).openRoutes(3)).toEqual({ open: 4, total: 9 });
		expect(asked[0]).toMatchObject({ filter: { pseo_id: { _eq: 3 }, retired_at: { _null: true } }, groupBy: ['has_post'] });
	});
});

describe('factChanges', () => {
	it('lists the facts whose value changed, appeared or went since the post was written, and nothing else', () => {
		expect(factChanges({ city: 'Leeds', price: 240, open: true }, { city: 'Leeds', price: 250, branch: 'North' })).toEqual([
			{ name: 'price', written: 240, now: 250 },
			{ name: 'open', written: true, now: null },
			{ name: 'branch', written: null, now: 'North' },
		]);
		expect(factChanges({ price: 240 }, { price: 240 })).toEqual([]);
		expect(factChanges(null, null)).toEqual([]);
	});
});
