import { describe, expect, it } from 'vitest';
import { describeApiError, isMissingRoute } from './api-errors.ts';
import { generationCost } from './cost.ts';
import { startPoller } from './poller.ts';
import { progressOf } from './progress.ts';
import { descriptionLength, websiteProblems } from './website-rules.ts';

describe('describeApiError', () => {
	it('turns the interface envelope into a sentence per status, never raw JSON', () => {
		const envelope = (status: number, error: string) => ({ response: { status, data: { success: false, error, code: 'X', timestamp: 't' } } });
		expect(describeApiError(envelope(402, 'Balance 3 is short of 10.'))).toBe('Not enough tokens: Balance 3 is short of 10.');
		expect(describeApiError(envelope(409, 'PSEO 4 already has a generation job pending or running.'))).toMatch(/^Something is already running: /);
		expect(describeApiError(envelope(400, '"post_count" must be a positive integer.'))).toMatch(/^Please check the form: /);
		expect(describeApiError({ response: { status: 500, data: '<html>' } })).toBe('The server answered 500.');
		expect(describeApiError(new Error('Network Error'))).toBe('The request failed: Network Error');
		expect(describeApiError({ response: { status: 403, data: { errors: [{ message: 'You don\'t have permission' }] } } })).toBe('You do not have access to this: You don\'t have permission');
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
