// @vitest-environment happy-dom
import { mount as mountComponent, type VueWrapper } from '@vue/test-utils';
import { defineComponent, h } from 'vue';
import { describe, expect, it, vi } from 'vitest';
import CostPreview from './cost-preview.vue';
import JobProgress from './job-progress.vue';
import TroubleNotice from './trouble-notice.vue';
import NoticeLine from './notice-line.vue';
import { explainFailure } from '../lib/api-errors.ts';
import GenerateTab from './generate-tab.vue';
import PostsTab from './posts-tab.vue';
import PlanTab from './plan-tab.vue';
import { ref } from 'vue';
import { WORKSPACE } from '../lib/workspace.ts';
import MarkdownReader from './markdown-reader.vue';
import WebsiteForm from './website-form.vue';
import LedgerEntries from './ledger-entries.vue';
import LocalTime from './local-time.vue';
import BalanceBadge from './balance-badge.vue';
import UsageChart from './usage-chart.vue';
import ModuleTitle from './module-title.vue';
import ProviderUsage from './provider-usage.vue';
import TabBar from './tab-bar.vue';
import type { LedgerQuery, LedgerRow } from '../lib/ledger.ts';
import FactsEditor from './facts-editor.vue';
import FactsTable from './facts-table.vue';
import JobsTab from './jobs-tab.vue';
import AiTab from './ai-tab.vue';
import type { ProviderCatalog } from '../lib/providers.ts';

/*
 * The stateful parts of the module, mounted for real. The app's global components (v-button, v-input…) are the
 * host's; here they are plain elements with the same props and events, so the tests see what the component does.
 */
/** One turn of the event loop: what a component awaits (its API calls, resolved at once here) has settled. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

const field = (tag: 'input' | 'textarea') =>
	defineComponent({
		props: { modelValue: { type: [String, Number], default: '' }, id: String, placeholder: String },
		emits: ['update:modelValue'],
		setup: (props, { emit }) => () =>
			h(tag, { id: props.id, value: props.modelValue, onInput: (event: Event) => emit('update:modelValue', (event.target as unknown as { value: string }).value) }),
	});
const stubs = {
	'v-input': field('input'),
	'v-textarea': field('textarea'),
	'v-button': defineComponent({
		props: { disabled: Boolean, loading: Boolean },
		emits: ['click'],
		// As the app's v-button: the real button inside a wrapper, which keeps the attributes it is given (data-test,
		// and an aria-describedby bound the plain way, where a screen reader never looks).
		setup: (props, { slots, emit }) => () =>
			h('div', { class: 'v-button' }, [h('button', { type: 'button', disabled: props.disabled, onClick: () => emit('click') }, slots['default']?.())]),
	}),
	'v-notice': defineComponent({ props: { type: String }, setup: (props, { slots }) => () => h('div', { class: `notice ${props.type}` }, slots['default']?.()) }),
	'v-icon': defineComponent({ props: { name: String }, setup: () => () => h('i') }),
	'router-link': defineComponent({ props: { to: String }, setup: (props, { slots }) => () => h('a', { href: props.to }, slots['default']?.()) }),
	'v-progress-circular': defineComponent({ setup: () => () => h('progress') }),
	'v-progress-linear': defineComponent({ props: { value: Number, indeterminate: Boolean }, setup: (props) => () => h('progress', { value: props.value, max: 100 }) }),
};
const global = { stubs };

/** GET /providers of an instance with OpenAI in its environment, Anthropic in Settings → AI, and no Google key. */
const catalog: ProviderCatalog = {
	default: { provider: 'openai', model: 'gpt-5.4-mini' },
	providers: [
		{ provider: 'openai', name: 'OpenAI', origin: 'environment', models: null, default_model: 'gpt-5.4-mini', bulk: 'batch' },
		{ provider: 'anthropic', name: 'Anthropic', origin: 'directus-settings', models: ['claude-haiku-4-5', 'claude-sonnet-4-6'], default_model: 'claude-haiku-4-5', bulk: 'page_by_page' },
		{ provider: 'google', name: 'Google', origin: null, models: null, default_model: 'gemini-2.5-flash', bulk: 'page_by_page' },
		{ provider: 'openai_compatible', name: 'OpenAI-compatible server', origin: null, models: null, default_model: 'gpt-5.4-mini', bulk: 'batch' },
	],
};
/** Mounts a single-file component; the type checker sees .vue files only through the shim, without their props. */
const mount = (component: unknown, options: Record<string, unknown>): VueWrapper => (mountComponent as unknown as (c: unknown, o: Record<string, unknown>) => VueWrapper)(component, options);

describe('job-progress', () => {
	it('shows created and failed against requested, and reaches 100 % when the job finishes', async () => {
		const wrapper = mount(JobProgress, { props: { job: { id: 4, status: 'running', requested_count: 10, created_count: 3, failed_count: 1 } }, global });
		expect(wrapper.get('[data-test="percent"]').text()).toBe('40 %');
		expect(wrapper.text()).toContain('3 of 10 created, 1 failed');
		expect(wrapper.get('progress').attributes('value')).toBe('30');
		await wrapper.setProps({ job: { id: 4, status: 'completed', requested_count: 10, created_count: 10, failed_count: 0 } });
		expect(wrapper.get('[data-test="percent"]').text()).toBe('100 %');
		expect(wrapper.get('[role="progressbar"]').attributes('aria-valuenow')).toBe('100');
	});
});

describe('trouble-notice', () => {
	const lastError = { code: 'bad_request', message: 'Provider rejected the request (HTTP 400): unknown model', at: '2026-01-31T09:30:00.000Z', attempts: 3 };
	const counts = { failed_count: 2, requested_count: 10 };
	it('says what happens, what it costs and what to do while a job is in trouble, with the error behind Details', async () => {
		const wrapper = mount(TroubleNotice, { props: { kind: 'job', record: { status: 'running', attention: true, last_error: lastError, ...counts } }, global });
		const notice = wrapper.get('[data-test="trouble"]');
		expect(notice.classes()).toContain('warning');
		const [summary] = notice.text().split('Details');
		expect(summary!.trim()).toBe('Its last 3 steps failed and the job keeps trying; any page that still fails is refunded. Nothing to do unless it goes on: then cancel it.');
		expect(notice.get('details summary').text()).toBe('Details');
		expect(notice.get('details [data-test="detail"]').text()).toContain('Provider rejected the request (HTTP 400): unknown model (3 attempts, the last');
		expect(notice.get('details time').attributes('datetime')).toBe(lastError.at);
	});

	it('tells a job waiting for its provider how long it has waited, as news, not trouble; once it has ended, as its end', async () => {
		const waiting = { code: 'provider_capacity', message: 'Waiting for provider capacity: OpenAI\'s batch queue holds 2,000,000 of 2,000,000 enqueued tokens; the next part goes when a running part ends.', at: '2026-01-31T09:40:00.000Z', attempts: 12, since: '2026-01-31T09:30:00.000Z' };
		const now = new Date('2026-01-31T09:42:30.000Z');
		const wrapper = mount(TroubleNotice, { props: { kind: 'job', now, record: { status: 'running', attention: false, last_error: waiting, ...counts } }, global });
		const notice = wrapper.get('[data-test="trouble"]');
		expect(notice.classes()).toContain('info');
		expect(notice.get('.body > p').text()).toBe('Waiting for provider capacity for 12 minutes: the provider\'s batch queue or rate limit is full. Nothing fails and nothing is charged again while it waits; the job goes on by itself.');
		expect(notice.get('details [data-test="detail"]').text()).toContain('OpenAI\'s batch queue holds 2,000,000 of 2,000,000 enqueued tokens');
		await wrapper.setProps({ record: { status: 'failed', attention: false, last_error: waiting, ...counts } });
		expect(wrapper.get('[data-test="trouble"]').classes()).toContain('danger');
	});

	it('tells what an ended job left undone and that it was refunded, a publication that it cost nothing, and nothing while all is well', async () => {
		const wrapper = mount(TroubleNotice, { props: { kind: 'job', record: { status: 'failed', attention: false, last_error: lastError, ...counts } }, global });
		expect(wrapper.get('[data-test="trouble"]').classes()).toContain('danger');
		expect(wrapper.get('[data-test="trouble"] > .body > p').text()).toBe('The job ended with 2 of 10 pages not written; their tokens were refunded. Retry the failed pages, or read the details first.');
		await wrapper.setProps({ kind: 'publication' });
		expect(wrapper.get('[data-test="trouble"] > .body > p').text()).toBe('The publication ended with 2 of 10 posts not published; publishing costs no tokens. Check the target in the Publishing tab, then publish again.');
		await wrapper.setProps({ kind: 'job', record: { status: 'completed', attention: false, last_error: null, ...counts } });
		expect(wrapper.find('[data-test="trouble"]').exists()).toBe(false);
	});
});

describe('a failure message', () => {
	it('says what happened, what it cost and what to do in two sentences, with the server\'s words behind Details', async () => {
		const providerDown = { response: { status: 502, data: { success: false, code: 'PSEO_PROVIDER_UNAVAILABLE', error: 'Provider server error (HTTP 500) after 4 attempts: upstream. The 20 tokens were refunded.' } } };
		const failure = explainFailure(providerDown, { paid: true });
		const wrapper = mount(NoticeLine, { props: { type: 'danger', detail: failure.detail }, slots: { default: failure.text }, global });
		const [sentence] = wrapper.text().split('Details');
		expect(sentence!.trim()).toBe('The AI provider did not answer, and the tokens it cost were refunded. Try again in a few minutes.');
		expect(sentence!.split('. ').length).toBe(2);
		expect(wrapper.find('[role="alert"]').exists()).toBe(true);
		const details = wrapper.get('details');
		expect(details.attributes('open')).toBeUndefined();
		expect(details.get('[data-test="detail"]').text()).toBe('HTTP 502 PSEO_PROVIDER_UNAVAILABLE: Provider server error (HTTP 500) after 4 attempts: upstream. The 20 tokens were refunded.');
		// A message without a detail has no disclosure.
		expect(mount(NoticeLine, { props: { type: 'success' }, slots: { default: 'Saved.' }, global }).find('details').exists()).toBe(false);
	});
});

describe('generate-tab', () => {
	const rates = { token_per_page: 10, token_per_batch_page: 5, token_per_main_json: 20 };
	function mountTab(
		balance: number,
		facts: {
			jobs?: unknown[];
			openRoutes?: { open: number; total: number };
			dailyCap?: { limit: number; left: number } | null;
			websiteCap?: number | null;
			spentToday?: number;
			ai?: { provider?: string | null; model?: string | null };
		} = {},
	) {
		const triggered: unknown[][] = [];
		const workspace = {
			api: {
				trigger: async (...args: unknown[]) => (triggered.push(args), { generation_id: 7 }),
				jobs: async () => facts.jobs ?? [],
				openRoutes: async () => facts.openRoutes ?? { open: 50, total: 50 },
				spentToday: async () => facts.spentToday ?? 0,
			},
			pseoId: ref(3),
			website: ref({ id: 3, website_url: 'https://example.com', daily_token_cap: facts.websiteCap ?? null, ...facts.ai }),
			balance: ref(balance),
			rates: ref(rates),
			dailyCap: ref(facts.dailyCap ?? null),
			providers: ref(catalog),
			isAdmin: ref(false),
			refreshBalance: async () => {},
			showTab: () => {},
			live: () => null,
		};
		const stubs = { ...global.stubs, 'native-field': defineComponent({ props: { id: String }, setup: () => () => h('input') }) };
		return { wrapper: mount(GenerateTab, { global: { stubs, provide: { [WORKSPACE as symbol]: workspace } } }), workspace, triggered };
	}

	it('disables Start with the reason beside it while the website has a job running, has no plan, or has too few pages left', async () => {
		const reason = async (facts: Parameters<typeof mountTab>[1]) => {
			const { wrapper } = mountTab(1000, facts);
			await settle();
			expect(wrapper.get('[data-test="start-job"] button').attributes('disabled')).toBeDefined();
			expect(wrapper.get('[data-test="start-job"] button').attributes('aria-describedby')).toBe('start-blocked');
			return wrapper.get('#start-blocked').text();
		};
		expect(await reason({ jobs: [{ id: 12, status: 'completed' }, { id: 11, status: 'running' }] })).toBe('Job 11 is still running on this website: wait for it to end, or cancel it in the Jobs tab.');
		expect(await reason({ openRoutes: { open: 0, total: 0 } })).toBe('This website has no plan yet: generate or import one in the Plan tab.');
		expect(await reason({ openRoutes: { open: 4, total: 9 } })).toBe('The plan has 4 pages without a post: choose 4 or fewer, or add pages in the Plan tab.');
	});

	it('disables Start when the user\'s or the website\'s daily cap would be passed', async () => {
		const first = mountTab(1000, { dailyCap: { limit: 100, left: 30 } });
		await settle();
		// Ten bulk pages at 5 tokens: 50.
		expect(first.wrapper.get('[data-test="start-blocked"]').text()).toBe('Your daily limit of 100 tokens leaves 30 for today: choose fewer pages, or try again after midnight UTC.');
		const second = mountTab(1000, { websiteCap: 60, spentToday: 20 });
		await settle();
		expect(second.wrapper.get('[data-test="start-blocked"]').text()).toBe('This website\'s daily limit of 60 tokens leaves 40 for today: choose fewer pages, or try again after midnight UTC.');
		const third = mountTab(1000, { websiteCap: 60, spentToday: 10, dailyCap: { limit: 100, left: 50 } });
		await settle();
		expect(third.wrapper.find('[data-test="start-blocked"]').exists()).toBe(false);
	});

	it('disables Start with the reason beside it when the balance does not cover the price, and enables it once it does', async () => {
		const { wrapper, workspace, triggered } = mountTab(20);
		// Ten bulk pages at 5 tokens: 50, against a balance of 20.
		const start = wrapper.get('[data-test="start-job"] button');
		expect(start.attributes('disabled')).toBeDefined();
		expect(wrapper.get('[data-test="start-blocked"]').text()).toContain('Start needs 30 more tokens');
		// The reason is named by the button itself, not by the app's wrapper around it.
		expect(start.attributes('aria-describedby')).toBe('start-blocked');
		expect(wrapper.get('[data-test="start-job"]').attributes('aria-describedby')).toBeUndefined();
		await start.trigger('click');
		expect(triggered).toEqual([]);
		workspace.balance.value = 50;
		await wrapper.vm.$nextTick();
		expect(wrapper.find('[data-test="start-blocked"]').exists()).toBe(false);
		expect(wrapper.get('[data-test="start-job"] button').attributes('disabled')).toBeUndefined();
		expect(wrapper.get('[data-test="start-job"] button').attributes('aria-describedby')).toBeUndefined();
		await wrapper.get('[data-test="start-job"] button').trigger('click');
		expect(triggered).toEqual([['bulk', 3, 10]]);
	});

	it('says which provider and model run and how bulk jobs run, and disables Start when the provider cannot run the job', async () => {
		const standard = mountTab(1000);
		await settle();
		expect(standard.wrapper.get('[data-test="ai-run"]').text()).toBe(
			'Runs with OpenAI · gpt-5.4-mini (the default, change it in the AI tab). Bulk jobs run through the provider\'s batch API.',
		);
		const claude = mountTab(1000, { ai: { provider: 'anthropic', model: 'claude-sonnet-4-6' } });
		await settle();
		expect(claude.wrapper.get('[data-test="ai-run"]').text()).toBe(
			'Runs with Anthropic · claude-sonnet-4-6 (this website\'s choice, change it in the AI tab). Bulk jobs run page by page.',
		);
		expect(claude.wrapper.find('[data-test="start-blocked"]').exists()).toBe(false);

		const google = mountTab(1000, { ai: { provider: 'google' } });
		await settle();
		expect(google.wrapper.get('[data-test="start-job"] button').attributes('disabled')).toBeDefined();
		expect(google.wrapper.get('[data-test="start-blocked"]').text()).toBe(
			'Google is not configured: choose another provider in the AI tab, or ask an admin to add its key in Settings → AI.',
		);
		const refused = mountTab(1000, { ai: { provider: 'anthropic', model: 'claude-opus-4' } });
		await settle();
		expect(refused.wrapper.get('[data-test="start-blocked"]').text()).toBe(
			'Anthropic does not allow the model claude-opus-4 here: choose one of claude-haiku-4-5, claude-sonnet-4-6 in the AI tab.',
		);
		await refused.wrapper.get('[data-test="start-job"] button').trigger('click');
		expect(refused.triggered).toEqual([]);
	});
});

describe('cost-preview', () => {
	const rates = { token_per_page: 10, token_per_batch_page: 5, token_per_main_json: 20 };
	it('prices the pages at the mode\'s rate and warns when the balance is short', async () => {
		const wrapper = mount(CostPreview, { props: { mode: 'bulk', pages: 8, rates, balance: 100 }, global });
		expect(wrapper.get('[data-test="cost"]').text()).toBe('40 tokens');
		expect(wrapper.find('[data-test="short"]').exists()).toBe(false);
		await wrapper.setProps({ mode: 'on_demand', pages: 1, balance: 4 });
		expect(wrapper.get('[data-test="cost"]').text()).toBe('10 tokens');
		expect(wrapper.get('[data-test="short"]').text()).toContain('6 more tokens');
	});
});

describe('website-form', () => {
	it('refuses what POST /pseo would refuse, and emits a clean draft once valid', async () => {
		const wrapper = mount(WebsiteForm, { global });
		await wrapper.get('button').trigger('click');
		expect(wrapper.emitted('submit')).toBeUndefined();
		expect(wrapper.get('[data-test="problem-website_url"]').text()).toMatch(/address/);
		expect(wrapper.get('[data-test="problem-master_prompt"]').text()).toMatch(/Describe/);
		await wrapper.get('#pseo-website-url').setValue('ftp://example.com');
		expect(wrapper.get('[data-test="problem-website_url"]').text()).toMatch(/http/);
		await wrapper.get('#pseo-website-url').setValue('  https://example.com  ');
		await wrapper.get('#pseo-master-prompt').setValue('Friendly, precise pages for homeowners.');
		expect(wrapper.find('[data-test="problem-website_url"]').exists()).toBe(false);
		await wrapper.get('button').trigger('click');
		expect(wrapper.emitted('submit')).toEqual([
			[{ website_url: 'https://example.com', master_prompt: 'Friendly, precise pages for homeowners.', website_software: 'wordpress', provider: '', model: '' }],
		]);
	});

	it('picks a provider and one of the models it allows, says when a provider is not configured, and shows an admin where to fix it', async () => {
		const wrapper = mount(WebsiteForm, { props: { catalog, isAdmin: false }, global });
		const provider = wrapper.get('select#pseo-provider');
		expect(provider.findAll('option').map((option) => option.text())).toEqual([
			'Default (OpenAI · gpt-5.4-mini)',
			'OpenAI',
			'Anthropic',
			'Google (not configured)',
			'OpenAI-compatible server (not configured)',
		]);
		// The default provider takes any model: a text field, blank for its default.
		expect(wrapper.get('#pseo-model').element.tagName).toBe('INPUT');
		await provider.setValue('anthropic');
		const model = wrapper.get('select#pseo-model');
		expect(model.findAll('option').map((option) => option.text())).toEqual(['Default (claude-haiku-4-5)', 'claude-haiku-4-5', 'claude-sonnet-4-6']);
		await model.setValue('claude-sonnet-4-6');
		expect(wrapper.find('[data-test="provider-unconfigured"]').exists()).toBe(false);

		await wrapper.get('#pseo-website-url').setValue('https://example.com');
		await wrapper.get('#pseo-master-prompt').setValue('Friendly pages.');
		await wrapper.get('[data-test="create-website"] button').trigger('click');
		expect(wrapper.emitted('submit')).toEqual([
			[{ website_url: 'https://example.com', master_prompt: 'Friendly pages.', website_software: 'wordpress', provider: 'anthropic', model: 'claude-sonnet-4-6' }],
		]);

		// Another provider starts from its own default model.
		await provider.setValue('google');
		expect((wrapper.get('#pseo-model').element as unknown as { value: string }).value).toBe('');
		expect(wrapper.get('[data-test="provider-unconfigured"]').text()).toBe(
			'Google is not configured here: jobs and plans of this website would fail, and be refunded. Ask an admin to add its key in Settings → AI.',
		);
		expect(wrapper.find('[data-test="ai-settings"]').exists()).toBe(false);
		await wrapper.setProps({ isAdmin: true });
		expect(wrapper.get('[data-test="ai-settings"]').attributes('href')).toBe('/settings/ai');
		expect(wrapper.get('[data-test="provider-unconfigured"]').text()).toContain('Add its key in Settings → AI.');
	});

	it('refuses a model of more than 200 characters before sending', async () => {
		const wrapper = mount(WebsiteForm, { props: { catalog }, global });
		await wrapper.get('#pseo-website-url').setValue('https://example.com');
		await wrapper.get('#pseo-master-prompt').setValue('Friendly pages.');
		await wrapper.get('#pseo-model').setValue('m'.repeat(201));
		await wrapper.get('[data-test="create-website"] button').trigger('click');
		expect(wrapper.emitted('submit')).toBeUndefined();
		expect(wrapper.get('[data-test="problem-model"]').text()).toBe('At most 200 characters.');
	});

	it('binds every label to its field, the master prompt\'s text area included, so that a screen reader names it', () => {
		const wrapper = mount(WebsiteForm, { global });
		const labels = wrapper.findAll('label');
		expect(labels.length).toBeGreaterThanOrEqual(3);
		for (const label of labels) {
			const target = wrapper.find(`#${label.attributes('for')}`);
			expect(target.exists(), label.text()).toBe(true);
			expect(['INPUT', 'TEXTAREA', 'SELECT'], label.text()).toContain(target.element.tagName);
		}
		// The app's own text area kept the id on a wrapper; the module's native one carries it on the text area itself.
		expect(wrapper.get('#pseo-master-prompt').element.tagName).toBe('TEXTAREA');
	});
});

describe('markdown-reader', () => {
	it('renders the page and never lets its HTML or script links through', () => {
		const markdown = '## Prices\n\nSee [Paris](/plumbing/paris). <script>alert(1)</script>\n\n<img src=x onerror="alert(2)">\n\n[bad](javascript:alert(3))';
		const wrapper = mount(MarkdownReader, { props: { markdown, websiteUrl: 'https://example.com' }, global });
		const article = wrapper.get('article');
		expect(article.find('h2').text()).toBe('Prices');
		expect(article.find('a').attributes('href')).toBe('https://example.com/plumbing/paris');
		expect(article.findAll('script')).toHaveLength(0);
		expect(article.findAll('img')).toHaveLength(0);
		expect(article.element.querySelectorAll('[onerror], [onclick], a[href^="javascript:"]')).toHaveLength(0);
		expect(article.findAll('a')).toHaveLength(1);
		expect(article.text()).toContain('<script>alert(1)</script>');
		expect(article.text()).toContain('bad');
	});
});

/** The app's stores, as useStores() finds them: a user of `language`. */
const storesOf = (language: string | null, projectLanguage: string | null = null) => ({
	useUserStore: () => ({ currentUser: { id: 'u-self', language } }),
	useServerStore: () => ({ info: { project: { default_language: projectLanguage } } }),
});

describe('local-time', () => {
	const moment = new Date(Date.now() - 3 * 60_000).toISOString();
	it('says how long ago in the user\'s language, with the exact date and time on hover', () => {
		const english = mount(LocalTime, { props: { value: moment }, global: { ...global, provide: { stores: storesOf('en-US') } } }).get('time');
		expect(english.text()).toBe('3 minutes ago');
		expect(english.attributes('datetime')).toBe(moment);
		expect(english.attributes('title')).toBe(new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(moment)));
		const german = mount(LocalTime, { props: { value: moment }, global: { ...global, provide: { stores: storesOf('de-DE') } } }).get('time');
		expect(german.text()).toBe('vor 3 Minuten');
		expect(german.attributes('title')).toMatch(/^\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}$/);
	});

	it('follows the project\'s default language when the user has none', () => {
		const time = mount(LocalTime, { props: { value: moment }, global: { ...global, provide: { stores: storesOf(null, 'de-DE') } } }).get('time');
		expect(time.text()).toBe('vor 3 Minuten');
	});
});

describe('ledger-entries', () => {
	const admin = { id: 'a1b2c3d4-0000-4000-8000-000000000001', first_name: 'Ada', last_name: 'Admin', email: 'ada@example.com' };
	const editor = { id: 'e1b2c3d4-0000-4000-8000-000000000002', first_name: null, last_name: null, email: 'eddie@example.com' };
	const entry = (id: number, user: LedgerRow['user_id'], amount: number, reason: string, note: string | null, pseoId: number | null = null): LedgerRow => ({
		id,
		amount,
		reason,
		balance_after: 12_500 + amount,
		note,
		date_created: new Date(Date.now() - 3600_000).toISOString(),
		pseo_id: pseoId,
		user_id: user,
	});

	function fakeApi(rows: LedgerRow[], total = rows.length) {
		const asked: LedgerQuery[] = [];
		const api = {
			ledger: async (query: LedgerQuery) => (asked.push(query), { rows, total }),
			people: async (ids?: string[]) => [admin, editor].filter((person) => !ids || ids.includes(person.id)),
			websiteNames: async (ids?: number[]) => [{ id: 4, website_url: 'https://plumbers.example' }].filter((site) => !ids || ids.includes(site.id)),
		};
		return { api, asked };
	}
	const mountEntries = (props: Record<string, unknown>, language = 'en-US') =>
		mount(LedgerEntries, { props, global: { ...global, provide: { stores: storesOf(language) } } });

	it('lists the reader\'s own entries only, with the website by its address and the admin who granted by name', async () => {
		const { api, asked } = fakeApi([entry(2, editor.id, -20, 'charge', 'bulk generation of 4 page(s)', 4), entry(1, editor.id, 500, 'grant', `set by ${admin.id}`)]);
		const wrapper = mountEntries({ api, scope: 'own', selfId: editor.id, isAdmin: true });
		await settle();
		expect(asked).toEqual([{ userId: editor.id, pseoId: null, reason: null, page: 1, limit: 25, withUser: false }]);
		expect(wrapper.findAll('th').map((th) => th.text())).not.toContain('User');
		const [charge, grant] = wrapper.findAll('tbody tr');
		expect(charge!.find('a[href="/pseo-workspace/4"]').text()).toBe('https://plumbers.example');
		expect(charge!.text()).toContain('-20');
		expect(grant!.text()).toContain('+500');
		expect(grant!.text()).toContain('13,000');
		expect(grant!.find(`a[href="/users/${admin.id}"]`).text()).toBe('Ada Admin');
		expect(wrapper.text()).not.toContain(admin.id);
	});

	it('names nobody by id to an editor, who may not read other users', async () => {
		const { api } = fakeApi([entry(1, editor.id, 500, 'grant', `set by ${admin.id}`)]);
		const wrapper = mountEntries({ api, scope: 'own', selfId: editor.id, isAdmin: false });
		await settle();
		expect(wrapper.get('tbody tr').text()).toContain('set by an admin');
		expect(wrapper.text()).not.toContain(admin.id);
	});

	it('shows an admin every user\'s entries with a user column by name, filtered by user, website and reason, a page at a time', async () => {
		const { api, asked } = fakeApi([entry(3, editor, -20, 'charge', null, 4), entry(2, admin, 100, 'grant', `set by ${admin.id}`)], 60);
		const wrapper = mountEntries({ api, scope: 'all', selfId: admin.id, isAdmin: true });
		await settle();
		expect(wrapper.findAll('th').map((th) => th.text())).toContain('User');
		expect(wrapper.findAll('[data-test="ledger-user"]').map((cell) => cell.text())).toEqual(['eddie@example.com', 'Ada Admin']);
		expect(wrapper.get('tbody tr:nth-child(2)').text()).toContain('set by you');
		expect(wrapper.get('[data-test="page-status"]').text()).toBe('Page 1 of 3 · 60 entries');
		await wrapper.get('[data-test="page-next"] button').trigger('click');
		await settle();
		expect(asked.at(-1)).toMatchObject({ page: 2, withUser: true, userId: null });
		await wrapper.get('#pseo-ledger-user').setValue(editor.id);
		await wrapper.get('#pseo-ledger-website').setValue('4');
		await wrapper.get('#pseo-ledger-reason').setValue('charge');
		await settle();
		// A new filter starts again from the first page.
		expect(asked.at(-1)).toEqual({ userId: editor.id, pseoId: 4, reason: 'charge', page: 1, limit: 25, withUser: true });
		for (const label of wrapper.findAll('label')) expect(wrapper.find(`#${label.attributes('for')}`).element.tagName).toBe('SELECT');
	});

	it('shows the rows of the latest filter when an older filter\'s answer arrives last', async () => {
		const answers: ((rows: LedgerRow[]) => void)[] = [];
		const api = {
			...fakeApi([]).api,
			ledger: (_query: LedgerQuery) => new Promise<{ rows: LedgerRow[]; total: number }>((resolve) => answers.push((rows) => resolve({ rows, total: rows.length }))),
		};
		const wrapper = mountEntries({ api, scope: 'all', selfId: admin.id, isAdmin: true });
		await vi.waitFor(() => expect(answers).toHaveLength(1));
		answers[0]!([]);
		await wrapper.get('#pseo-ledger-user').setValue(editor.id);
		await wrapper.get('#pseo-ledger-reason').setValue('grant');
		await vi.waitFor(() => expect(answers).toHaveLength(3));
		// The reason's answer first, then the user's older one.
		answers[2]!([entry(2, editor, 500, 'grant', null)]);
		answers[1]!([entry(3, editor, -20, 'charge', null), entry(2, editor, 500, 'grant', null)]);
		await settle();
		await settle();
		expect(wrapper.findAll('tbody tr')).toHaveLength(1);
		expect(wrapper.get('tbody tr').text()).toContain('+500');
	});

	it('formats amounts and balances in the user\'s language', async () => {
		const { api } = fakeApi([entry(1, editor.id, 1500, 'grant', null)]);
		const wrapper = mountEntries({ api, scope: 'own', selfId: editor.id, isAdmin: false }, 'de-DE');
		await settle();
		expect(wrapper.get('tbody tr').text()).toContain('+1.500');
		expect(wrapper.get('tbody tr').text()).toContain('14.000');
		expect(wrapper.get('tbody tr time').text()).toBe('vor 1 Stunde');
	});
});

describe('numbers in the user\'s language', () => {
	const rates = { token_per_page: 10, token_per_batch_page: 5, token_per_main_json: 20 };
	const inLanguage = (language: string) => ({ ...global, provide: { stores: storesOf(language) } });
	it('groups the balance and the price as the language does, in English and in German', () => {
		expect(mount(BalanceBadge, { props: { balance: 12500 }, global: inLanguage('en-US') }).text()).toBe('12,500 tokens');
		expect(mount(BalanceBadge, { props: { balance: 12500 }, global: inLanguage('de-DE') }).text()).toBe('12.500 tokens');
		const german = mount(CostPreview, { props: { mode: 'bulk', pages: 400, rates, balance: 1500 }, global: inLanguage('de-DE') });
		expect(german.get('[data-test="cost"]').text()).toBe('2.000 tokens');
		expect(german.get('[data-test="short"]').text()).toContain('500 more tokens');
		expect(german.text()).toContain('of your 1.500');
	});
});

describe('plan-tab', () => {
	const FOLLOWING = {
		id: 3,
		website_url: 'https://example.com',
		data_source: { collection: 'cities', filter: null, source: 'cities' },
		data_source_state: {
			status: 'following',
			collection: 'cities',
			since: '2026-01-31T09:00:00.000Z',
			syncs: 3,
			last_sync_at: '2026-01-31T09:30:00.000Z',
			last_sync: { trigger: 'follow', added: 1, updated: 4, unchanged: 0, retired: 2, waiting: 2 },
			waiting: 2,
			last_error: null,
			stopped_at: null,
		},
		auto_refresh: false,
		auto_refresh_state: { last_started_at: null, last_job_id: null, last_pages: null, deferred_at: '2026-01-31T09:31:00.000Z', deferred_reason: 'Insufficient tokens: 5 required, 0 available.', next_at: '2026-01-31T10:31:00.000Z' },
	};
	function mountTab(result = { total_pages: 6, added: 1, updated: 2, unchanged: 3, retired: 4, skipped: { duplicate: 5, on_site: 0, invalid: 0, missing_data: 0 } }, site: Record<string, unknown> = { id: 3, website_url: 'https://example.com' }) {
		const imports: Record<string, unknown>[] = [];
		const saved: Record<string, unknown>[] = [];
		const workspace = {
			api: {
				website: async () => site,
				saveFollowing: async (_pseoId: number, body: Record<string, unknown>) => (saved.push(body), {}),
				collectionPaths: async () => ['name', 'population', 'country.name'],
				importPlan: async (body: Record<string, unknown>) => (imports.push(body), result),
				planPages: async () => [
					{ id: 1, route: '/leeds', title: 'Leeds', priority: 1, cluster: null, facts: { price: 95 }, has_post: true, source: 'price-list', retired_at: null },
					{ id: 2, route: '/york', title: 'York', priority: 1, cluster: null, facts: null, has_post: false, source: 'price-list', retired_at: '2026-01-31T09:30:00.000Z' },
				],
			},
			pseoId: ref(3),
			website: ref({ id: 3, website_url: 'https://example.com' }),
			balance: ref(100),
			rates: ref({ token_per_page: 10, token_per_batch_page: 5, token_per_main_json: 20 }),
			dailyCap: ref(null),
			providers: ref(catalog),
			refreshBalance: async () => {},
		};
		// The file library and the collections, through the app's axios instance (useApi).
		const http = {
			get: async (url: string) => {
				if (url === '/collections') return { data: { data: [{ collection: 'cities', schema: {} }, { collection: 'pseo_posts', schema: {} }] } };
				if (url.startsWith('/fields/')) return { data: { data: [{ field: 'id', schema: { is_primary_key: true } }, { field: 'name', schema: {} }] } };
				if (url.startsWith('/items/')) return { data: { data: [{ name: 'Leeds' }] } };
				return { data: { data: [{ id: 'file-1', filename_download: 'prices.csv' }] } };
			},
		};
		const wrapper = mount(PlanTab, { global: { stubs: global.stubs, provide: { [WORKSPACE as symbol]: workspace, api: http } } });
		return { wrapper, imports, saved };
	}

	it('follows a collection: the fields to name, a filter, and the import sent as a sync with follow', async () => {
		const { wrapper, imports } = mountTab();
		await settle();
		expect(wrapper.get('[data-test="following-none"]').text()).toContain('The plan follows no collection.');
		await wrapper.get('#pseo-data-collection').setValue('cities');
		await settle();
		expect(wrapper.get('[data-test="collection-paths"]').text()).toBe('Fields to name in the templates and facts: name, population, country.name');
		await wrapper.get('#pseo-collection-filter').setValue('{"country": ');
		await wrapper.get('#pseo-template-route').setValue('/{name}');
		await wrapper.get('#pseo-template-title').setValue('Plumbers in {name}');
		expect(wrapper.get('[data-test="import-plan"] button').attributes('disabled')).toBeDefined();
		expect(wrapper.get('[data-test="import-plan"] button').attributes('aria-describedby')).toBe('collection-filter-problem');
		await wrapper.get('#pseo-collection-filter').setValue('{"country": {"code": {"_eq": "ES"}}}');
		await wrapper.get('#pseo-follow').setValue(true);
		expect(wrapper.get('#pseo-import-mode').attributes('disabled')).toBeDefined();
		await wrapper.get('[data-test="import-plan"] button').trigger('click');
		await settle();
		expect(imports).toEqual([
			expect.objectContaining({ mode: 'sync', collection: 'cities', filter: { country: { code: { _eq: 'ES' } } }, follow: true, template: { route: '/{name}', title: 'Plumbers in {name}' } }),
		]);
		expect(wrapper.get('[data-test="import-message"]').text()).toContain('The plan now follows cities');
	});

	it('shows the following: its syncs, the pages waiting for the balance and the deferred refresh; stops it and turns the refresh on', async () => {
		const { wrapper, saved } = mountTab(undefined, FOLLOWING);
		await settle();
		expect(wrapper.get('[data-test="following-state"]').text()).toMatch(/^Following cities \(begun .+\): 3 syncs so far\.$/);
		expect(wrapper.get('[data-test="following-last-sync"]').text()).toMatch(/1 added, 4 updated, 2 retired\.$/);
		expect(wrapper.get('[data-test="following-waiting"]').text()).toContain('2 new items wait for your balance or daily cap');
		expect(wrapper.get('[data-test="auto-refresh-deferred"]').text()).toContain('Insufficient tokens: 5 required, 0 available.');
		await wrapper.get('[data-test="auto-refresh"]').setValue(true);
		await settle();
		await wrapper.get('[data-test="stop-following"] button').trigger('click');
		await settle();
		expect(saved).toEqual([{ auto_refresh: true }, { data_source: null }]);
	});

	it('says why a following stopped', async () => {
		const stopped = { ...FOLLOWING, data_source: null, data_source_state: { ...FOLLOWING.data_source_state, status: 'stopped', last_error: 'You don\'t have permission to access collection "cities".', stopped_at: '2026-01-31T09:40:00.000Z' } };
		const { wrapper } = mountTab(undefined, stopped);
		await settle();
		expect(wrapper.get('[data-test="following-stopped"]').text()).toContain('stopped following cities');
		expect(wrapper.get('[data-test="following-stopped"]').text()).toContain('You don\'t have permission to access collection "cities".');
	});

	it('offers a sync with the source\'s name, sends both, and tells what was added, updated, left unchanged and retired', async () => {
		const { wrapper, imports } = mountTab();
		await settle();
		expect(wrapper.findAll('#pseo-import-mode option').map((option) => option.text())).toEqual(['Append to the plan', 'Replace the plan', 'Sync: update changed pages, retire missing ones']);
		await wrapper.get('#pseo-library-file').setValue('file-1');
		await wrapper.get('#pseo-template-route').setValue('/{city}');
		await wrapper.get('#pseo-template-title').setValue('Plumbers in {city}');
		await wrapper.get('#pseo-import-mode').setValue('sync');
		await wrapper.get('#pseo-import-source').setValue('  price-list ');
		expect(wrapper.get('[data-test="import-sync-note"]').text()).toContain('The data is the whole truth of “price-list”');
		await wrapper.get('[data-test="import-plan"] button').trigger('click');
		await settle();
		expect(imports).toEqual([expect.objectContaining({ pseo_id: 3, mode: 'sync', source: 'price-list', file_id: 'file-1', template: { route: '/{city}', title: 'Plumbers in {city}' } })]);
		expect(wrapper.get('[data-test="import-message"]').text()).toBe(
			'1 pages added, 2 updated, 3 unchanged, 4 retired (6 in the plan); skipped: 5 duplicate, 0 already on the site, 0 invalid, 0 missing required data.',
		);
	});

	it('refuses a source without a name, and marks retired pages in the table', async () => {
		const { wrapper } = mountTab();
		await settle();
		await wrapper.get('#pseo-library-file').setValue('file-1');
		await wrapper.get('#pseo-template-route').setValue('/{city}');
		await wrapper.get('#pseo-template-title').setValue('Plumbers in {city}');
		expect(wrapper.get('[data-test="import-plan"] button').attributes('disabled')).toBeUndefined();
		await wrapper.get('#pseo-import-source').setValue('   ');
		expect(wrapper.get('[data-test="import-plan"] button').attributes('disabled')).toBeDefined();
		expect(wrapper.get('[data-test="import-plan"] button').attributes('aria-describedby')).toBe('import-source-problem');
		expect(wrapper.get('#import-source-problem').text()).toBe('Name the source in 1 to 100 characters.');
		expect(wrapper.find('[data-test="retired-1"]').exists()).toBe(false);
		expect(wrapper.get('[data-test="retired-2"]').text()).toBe('retired');
	});
});

describe('posts-tab', () => {
	it('disables publishing with the reason while the website has no publishing target, and enables it once it has one', async () => {
		let target: 'missing' | 'present' = 'missing';
		const workspace = {
			api: {
				posts: async () => [{ id: 1, route: '/a', title: 'A', quality_status: 'pass', quality_score: 90, remote_url: null, date_published: null }],
				target: async () => {
					if (target === 'missing') throw Object.assign(new Error('Not found'), { response: { status: 404, data: { code: 'PSEO_NOT_FOUND' } } });
					return { target: 'webhook', url: 'https://hooks.example' };
				},
				staleCount: async () => 0,
				jobs: async () => [],
			},
			pseoId: ref(3),
			website: ref(null),
			rates: ref(null),
			balance: ref(null),
			dailyCap: ref(null),
			refreshBalance: async () => {},
			showTab: () => {},
			live: () => null,
		};
		const options = { global: { stubs: { ...global.stubs, 'v-drawer': true, 'native-field': true }, provide: { [WORKSPACE as symbol]: workspace } } };
		const wrapper = mount(PostsTab, options);
		await settle();
		const all = wrapper.get('[data-test="publish-all"] button');
		expect(all.attributes('disabled')).toBeDefined();
		expect(all.attributes('aria-describedby')).toBe('publish-blocked');
		expect(wrapper.get('#publish-blocked').text()).toBe('This website has no publishing target yet: set one in the Publishing tab.');
		target = 'present';
		const again = mount(PostsTab, options);
		await settle();
		expect(again.get('[data-test="publish-all"] button').attributes('disabled')).toBeUndefined();
		// Nothing selected: only "Publish selected" waits, and says why.
		expect(again.get('[data-test="publish-selected"] button').attributes('disabled')).toBeDefined();
		expect(again.get('#publish-selected-blocked').text()).toBe('Select the posts to publish in the table.');
	});
});

describe('posts-tab: stale and retired posts, and their refresh', () => {
	const post = (id: number, extra: Record<string, unknown>) => ({ id, route: `/p${id}`, title: `P${id}`, quality_status: 'pass', quality_score: 90, remote_url: null, date_published: null, stale: false, stale_since: null, retired: false, ...extra });
	const rows = [post(1, {}), post(2, { stale: true, stale_since: '2026-01-31T09:00:00.000Z' }), post(3, { stale: true, stale_since: '2026-01-30T09:00:00.000Z' }), post(4, { retired: true })];
	function mountPosts(options: { balance: number; stale: number; jobs?: { id: number; status: string }[] }) {
		const calls: string[] = [];
		const workspace = {
			api: {
				posts: async () => rows,
				target: async () => ({ target: 'webhook' }),
				staleCount: async () => options.stale,
				jobs: async () => options.jobs ?? [],
				refresh: async (pseoId: number) => {
					calls.push(`refresh ${pseoId}`);
					return { generation_id: 41 };
				},
			},
			pseoId: ref(3),
			website: ref(null),
			rates: ref({ token_per_page: 10, token_per_batch_page: 5, token_per_main_json: 20 }),
			balance: ref<number | null>(options.balance),
			dailyCap: ref(null),
			refreshBalance: async () => void calls.push('balance'),
			showTab: (tab: string) => void calls.push(`tab ${tab}`),
			live: () => null,
		};
		const stubs = { ...global.stubs, 'v-drawer': defineComponent({ setup: (_props, { slots }) => () => h('div', slots['default']?.()) }), 'markdown-reader': true, 'native-field': defineComponent({ props: { id: String, modelValue: String }, emits: ['update:modelValue'], setup: (props, { emit }) => () => h('input', { id: props.id, value: props.modelValue, onInput: (event: Event) => emit('update:modelValue', (event.target as unknown as { value: string }).value) }) }) };
		return { wrapper: mount(PostsTab, { global: { stubs, provide: { [WORKSPACE as symbol]: workspace } } }), calls, workspace };
	}

	it('marks stale posts with the date their data changed and retired posts as retired, and filters on either', async () => {
		const { wrapper } = mountPosts({ balance: 100, stale: 2 });
		await settle();
		expect(wrapper.get('[data-test="stale-2"]').text()).toContain('Stale');
		expect(wrapper.get('[data-test="stale-2"] time').attributes('datetime')).toBe('2026-01-31T09:00:00.000Z');
		expect(wrapper.get('[data-test="retired-4"]').text()).toBe('Retired');
		expect(wrapper.find('[data-test="stale-1"]').exists()).toBe(false);
		const routes = () => wrapper.findAll('[data-test="posts"] tbody tr button.open').map((button) => button.text());
		expect(routes()).toEqual(['/p1', '/p2', '/p3', '/p4']);
		await wrapper.get('#pseo-posts-show').setValue('stale');
		expect(routes()).toEqual(['/p2', '/p3']);
		await wrapper.get('#pseo-posts-show').setValue('retired');
		expect(routes()).toEqual(['/p4']);
	});

	it('prices "Refresh N stale pages" at the batch rate, starts it and shows the job in the Jobs tab', async () => {
		const { wrapper, calls } = mountPosts({ balance: 100, stale: 2 });
		await settle();
		const refresh = wrapper.get('[data-test="refresh-stale"] button');
		expect(refresh.text()).toBe('Refresh 2 stale pages');
		// Two pages at 5 tokens (the batch page rate).
		expect(wrapper.get('[data-test="cost"]').text()).toBe('10 tokens');
		expect(refresh.attributes('disabled')).toBeUndefined();
		expect(refresh.attributes('aria-describedby')).toBeUndefined();
		await refresh.trigger('click');
		await settle();
		expect(calls).toEqual(['refresh 3', 'balance', 'tab jobs']);
		expect(wrapper.get('[data-test="refresh-message"]').text()).toBe('Refresh started as job 41.');
	});

	it('disables Refresh with the reason named by its real button when nothing is stale, a job runs, or the balance is short', async () => {
		const reason = async (options: Parameters<typeof mountPosts>[0]) => {
			const { wrapper, calls } = mountPosts(options);
			await settle();
			const refresh = wrapper.get('[data-test="refresh-stale"] button');
			expect(refresh.attributes('disabled')).toBeDefined();
			expect(refresh.attributes('aria-describedby')).toBe('refresh-blocked');
			expect(wrapper.get('[data-test="refresh-stale"]').attributes('aria-describedby')).toBeUndefined();
			await refresh.trigger('click');
			expect(calls).toEqual([]);
			return wrapper.get('#refresh-blocked').text();
		};
		expect(await reason({ balance: 100, stale: 0 })).toBe('No post is stale: a sync import marks the posts whose data changed.');
		expect(await reason({ balance: 100, stale: 2, jobs: [{ id: 9, status: 'running' }] })).toBe('Job 9 is still running on this website: wait for it to end, or cancel it in the Jobs tab.');
		// Two pages at 5 tokens against a balance of 4.
		expect(await reason({ balance: 4, stale: 2 })).toBe('Refresh needs 6 more tokens: ask an admin to add tokens to your balance.');
	});

	it('shows in the reader what changed in a stale post\'s facts since it was written, the old and new values side by side', async () => {
		const { wrapper, workspace } = mountPosts({ balance: 100, stale: 2 });
		const read: string[] = [];
		Object.assign(workspace.api, {
			post: async (id: number) => ({
				id,
				pseo_id: 3,
				route: `/p${id}`,
				title: `P${id}`,
				body: '# P',
				meta_description: null,
				quality_status: 'pass',
				quality_issues: null,
				facts: id === 2 ? { city: 'Leeds', price_from_gbp: 240 } : { city: 'York' },
				structured_data: null,
				stale: id === 2,
				stale_since: id === 2 ? '2026-01-31T09:00:00.000Z' : null,
			}),
			currentFacts: async (pseoId: number, route: string) => {
				read.push(`${pseoId} ${route}`);
				return { city: 'Leeds', price_from_gbp: 250 };
			},
		});
		await settle();
		await wrapper.get('[data-test="open-2"]').trigger('click');
		await settle();
		const rows = wrapper.findAll('[data-test="fact-changes"] tbody tr').map((row) => row.findAll('th, td').map((cell) => cell.text()));
		expect(rows).toEqual([['Price from gbp', '240', '250']]);
		expect(read).toEqual(['3 /p2']);
		// A post that is not stale reads nothing more, and shows no changes.
		await wrapper.get('[data-test="open-1"]').trigger('click');
		await settle();
		expect(wrapper.find('[data-test="fact-changes"]').exists()).toBe(false);
		expect(read).toEqual(['3 /p2']);
	});
});

describe('jobs-tab', () => {
	it('shows each job\'s provider and model, and nothing extra for a job without them', async () => {
		const job = (id: number, provider: string | null, model: string | null) => ({ id, pseo_id: 3, status: 'completed', requested_count: 1, created_count: 1, failed_count: 0, failed_routes: [], date_created: '2026-01-31T09:30:00.000Z', date_completed: '2026-01-31T09:31:00.000Z', last_error: null, attention: false, provider, model });
		let reads = 0;
		const workspace = {
			api: {
				// GET /generations carries each job's provider and model: one read gives the list and both.
				jobs: async () => (reads++, [job(8, 'anthropic', 'claude-sonnet-4-6'), job(7, null, null)]),
			},
			pseoId: ref(3),
			providers: ref(catalog),
			refreshBalance: async () => {},
			live: () => null,
		};
		const wrapper = mount(JobsTab, { global: { stubs: { ...global.stubs, 'empty-state': true, 'local-time': true }, provide: { [WORKSPACE as symbol]: workspace } } });
		// The list arrives when its read resolves: wait for it, not for a guessed time.
		await vi.waitFor(() => expect(wrapper.find('[data-test="job-8"]').exists()).toBe(true));
		expect(wrapper.get('[data-test="job-8"] [data-test="provider-model"]').text()).toBe('Anthropic · claude-sonnet-4-6');
		expect(wrapper.find('[data-test="job-7"] [data-test="provider-model"]').exists()).toBe(false);
		expect(reads).toBe(1);
		wrapper.unmount();
	});

	it('names what started each job, and nothing for a job from a server that does not say', async () => {
		const job = (id: number, kind?: string) => ({ id, pseo_id: 3, status: 'completed', requested_count: 1, created_count: 1, failed_count: 0, failed_routes: [], date_created: '2026-01-31T09:30:00.000Z', date_completed: '2026-01-31T09:31:00.000Z', last_error: null, attention: false, provider: null, model: null, ...(kind ? { kind } : {}) });
		const workspace = {
			api: { jobs: async () => [job(9, 'refresh'), job(8, 'bulk'), job(7)] },
			pseoId: ref(3),
			providers: ref(catalog),
			refreshBalance: async () => {},
			live: () => null,
		};
		const wrapper = mount(JobsTab, { global: { stubs: { ...global.stubs, 'empty-state': true, 'local-time': true }, provide: { [WORKSPACE as symbol]: workspace } } });
		await vi.waitFor(() => expect(wrapper.find('[data-test="job-9"]').exists()).toBe(true));
		expect(wrapper.get('[data-test="job-9"] [data-test="job-kind"]').text()).toBe('Refresh of stale pages');
		expect(wrapper.get('[data-test="job-8"] [data-test="job-kind"]').text()).toBe('Bulk');
		expect(wrapper.find('[data-test="job-7"] [data-test="job-kind"]').exists()).toBe(false);
		wrapper.unmount();
	});
});

describe('ai-tab', () => {
	it('shows the website\'s provider and model, and saves a new choice on the website', async () => {
		const saved: unknown[][] = [];
		const workspace = {
			api: { saveAi: async (...args: unknown[]) => (saved.push(args), {}) },
			pseoId: ref(3),
			website: ref({ id: 3, website_url: 'https://example.com', provider: 'anthropic', model: 'claude-haiku-4-5' }),
			providers: ref(catalog),
			isAdmin: ref(false),
		};
		const wrapper = mount(AiTab, { global: { stubs, provide: { [WORKSPACE as symbol]: workspace } } });
		expect((wrapper.get('select#pseo-provider').element as unknown as { value: string }).value).toBe('anthropic');
		expect((wrapper.get('select#pseo-model').element as unknown as { value: string }).value).toBe('claude-haiku-4-5');
		await wrapper.get('select#pseo-model').setValue('claude-sonnet-4-6');
		await wrapper.get('[data-test="save-ai"] button').trigger('click');
		await settle();
		expect(saved).toEqual([[3, { provider: 'anthropic', model: 'claude-sonnet-4-6' }]]);
		expect(workspace.website.value).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-6' });
		expect(wrapper.get('[data-test="ai-message"]').text()).toContain('Saved');
		// Back to the default: both blank, saved as null.
		await wrapper.get('select#pseo-provider').setValue('');
		await wrapper.get('[data-test="save-ai"] button').trigger('click');
		await settle();
		expect(saved.at(-1)).toEqual([3, { provider: null, model: null }]);
	});
});

describe('usage-chart', () => {
	it('draws a website\'s prompt and completion tokens per day as stacked bars, labelled for screen readers and on hover', () => {
		const usage = {
			pseoId: 4,
			peak: 400,
			days: [
				{ day: '2026-01-30', prompt: 100, completion: 100, requests: 2 },
				{ day: '2026-01-31', prompt: 300, completion: 100, requests: 3 },
			],
		};
		const wrapper = mount(UsageChart, { props: { usage, name: 'https://plumbers.example' }, global: { ...global, provide: { stores: storesOf('de-DE') } } });
		expect(wrapper.get('figcaption a').attributes('href')).toBe('/pseo-workspace/4');
		const svg = wrapper.get('svg');
		expect(svg.attributes('role')).toBe('img');
		expect(svg.attributes('aria-label')).toBe('https://plumbers.example: 400 prompt and 200 completion tokens over 2 days, from 30.01.2026 to 31.01.2026.');
		const heights = wrapper.findAll('rect').map((rect) => Number(rect.attributes('height')));
		// The peak day fills the height (120): 300 prompt below, 100 completion above.
		expect(heights).toEqual([30, 30, 90, 30]);
		expect(wrapper.findAll('g title').map((title) => title.text())[1]).toBe('31.01.2026: 300 prompt and 100 completion tokens, 3 requests');
	});
});

describe('module-title', () => {
	it('lays the header out as breadcrumb, separator, title', () => {
		const wrapper = mount(ModuleTitle, { props: { crumbs: [{ name: 'pSEO websites', to: '/pseo-workspace' }], title: 'https://plumbers.example' }, global });
		const nav = wrapper.get('nav[aria-label="Breadcrumb"]');
		expect(nav.get('a').attributes('href')).toBe('/pseo-workspace');
		expect(nav.get('a').text()).toBe('pSEO websites');
		// The separator stands between them, hidden from screen readers, which have the landmark and the heading.
		expect(nav.element.lastElementChild!.getAttribute('aria-hidden')).toBe('true');
		expect(wrapper.get('h1').text()).toBe('https://plumbers.example');
		expect(wrapper.element.firstElementChild).toBe(nav.element);
	});
});

describe('provider-usage', () => {
	it('charts each website by its address and links to the "pSEO usage" dashboard', async () => {
		const api = {
			usage: async () => [{ pseo_id: 4, date_created_year: 2026, date_created_month: 1, date_created_day: 31, sum: { usage_prompt_tokens: '300', usage_completion_tokens: 100, usage_requests: 3 } }],
			websiteNames: async (ids?: number[]) => [{ id: 4, website_url: 'https://plumbers.example' }].filter((site) => !ids || ids.includes(site.id)),
		};
		const wrapper = mount(ProviderUsage, { props: { api }, global: { ...global, provide: { stores: storesOf('en-US') } } });
		await settle();
		expect(wrapper.get('[data-test="usage-dashboard"]').attributes('href')).toBe('/insights/6f1d3a2e-6c1b-4a3e-9a57-0b9e6c0d5a01');
		expect(wrapper.get('[data-test="usage-chart"] figcaption a').text()).toBe('https://plumbers.example');
		expect(wrapper.get('details tbody tr').text()).toContain('Jan 31, 2026');
		expect(wrapper.get('details tbody tr').text()).toContain('300');
	});
});

describe('tab-bar', () => {
	it('marks the selected tab, names the panel each controls, and asks for the one clicked', async () => {
		const wrapper = mount(TabBar, {
			props: {
				items: [
					{ value: 'plan', text: 'Plan' },
					{ value: 'jobs', text: 'Jobs' },
				],
				modelValue: 'plan',
				label: 'Website sections',
				idPrefix: 'pseo-tab',
				panelId: (value: string) => `pseo-panel-${value}`,
				testPrefix: 'tab',
			},
		});
		expect(wrapper.get('[role="tablist"]').attributes('aria-label')).toBe('Website sections');
		const tabs = wrapper.findAll('[role="tab"]');
		expect(tabs.map((tab) => [tab.attributes('id'), tab.attributes('aria-selected'), tab.attributes('aria-controls')])).toEqual([
			['pseo-tab-plan', 'true', 'pseo-panel-plan'],
			['pseo-tab-jobs', 'false', 'pseo-panel-jobs'],
		]);
		await wrapper.get('[data-test="tab-jobs"]').trigger('click');
		expect(wrapper.emitted('update:modelValue')).toEqual([['jobs']]);
	});
});

describe('facts-editor', () => {
	const facts = { city: 'Leeds', population: 812000 };
	it('shows a plan page\'s facts as JSON, and saves what is edited once it is a flat object of values', async () => {
		const wrapper = mount(FactsEditor, { props: { id: 'facts-1', facts }, global });
		const input = wrapper.get('[data-test="facts-input"]');
		expect(JSON.parse((input.element as unknown as { value: string }).value)).toEqual(facts);
		expect(wrapper.get('label').attributes('for')).toBe('facts-1');
		await input.setValue('{"city": "Leeds", "population": 812001, "open_sundays": true}');
		await wrapper.get('[data-test="facts-save"] button').trigger('click');
		expect(wrapper.emitted('save')).toEqual([[{ city: 'Leeds', population: 812001, open_sundays: true }]]);
	});

	it('names what is wrong instead of saving, and saves no facts from an empty text', async () => {
		const wrapper = mount(FactsEditor, { props: { id: 'facts-2', facts }, global });
		const input = wrapper.get('[data-test="facts-input"]');
		await input.setValue('{"prices": {"low": 1}}');
		await wrapper.get('[data-test="facts-save"] button').trigger('click');
		expect(wrapper.get('[data-test="facts-problem"]').text()).toBe('"facts.prices" must be a string, a number or a boolean, received an object.');
		expect(input.attributes('aria-describedby')).toBe('facts-2-problem');
		await input.setValue('{city: Leeds}');
		await wrapper.get('[data-test="facts-save"] button').trigger('click');
		expect(wrapper.get('[data-test="facts-problem"]').text()).toMatch(/^Not JSON/);
		expect(wrapper.emitted('save')).toBeUndefined();
		await input.setValue('  ');
		await wrapper.get('[data-test="facts-save"] button').trigger('click');
		expect(wrapper.emitted('save')).toEqual([[null]]);
	});
});

describe('facts-table', () => {
	it('shows the data block as the website will: labels from the column names, true and false as marks', () => {
		const wrapper = mount(FactsTable, { props: { facts: { average_price_gbp: '95.50', openingYear: 1998, emergency: true } }, global });
		const rows = wrapper.findAll('tr').map((row) => [row.get('th').text(), row.get('td').text()]);
		expect(rows).toEqual([
			['Average price gbp', '95.50'],
			['Opening year', '1998'],
			['Emergency', '✓'],
		]);
		expect(mount(FactsTable, { props: { facts: null }, global }).find('[data-test="facts-none"]').exists()).toBe(true);
	});
});
