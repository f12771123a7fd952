// @vitest-environment happy-dom
import { mount as mountComponent, type VueWrapper } from '@vue/test-utils';
import { defineComponent, h } from 'vue';
import { describe, expect, it } from 'vitest';
import CostPreview from './cost-preview.vue';
import JobProgress from './job-progress.vue';
import TroubleNotice from './trouble-notice.vue';
import GenerateTab from './generate-tab.vue';
import { ref } from 'vue';
import { WORKSPACE } from '../lib/workspace.ts';
import MarkdownReader from './markdown-reader.vue';
import WebsiteForm from './website-form.vue';
import FactsEditor from './facts-editor.vue';
import FactsTable from './facts-table.vue';

/*
 * The stateful parts of the module, mounted for real. The app's global components (v-button, v-input…) are the
 * host's; here they are plain elements with the same props and events, so the tests see what the component does.
 */
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
		setup: (props, { slots, emit }) => () => h('button', { type: 'button', disabled: props.disabled, onClick: () => emit('click') }, slots['default']?.()),
	}),
	'v-notice': defineComponent({ props: { type: String }, setup: (props, { slots }) => () => h('div', { class: `notice ${props.type}` }, slots['default']?.()) }),
	'v-progress-linear': defineComponent({ props: { value: Number, indeterminate: Boolean }, setup: (props) => () => h('progress', { value: props.value, max: 100 }) }),
};
const global = { stubs };
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
	it('says what keeps failing while the job is in trouble, its last error once it has ended, and nothing while all is well', async () => {
		const wrapper = mount(TroubleNotice, { props: { record: { status: 'running', attention: true, last_error: lastError } }, global });
		const notice = wrapper.get('[data-test="trouble"]');
		expect(notice.classes()).toContain('warning');
		expect(notice.text()).toContain('Its last 3 steps failed; it is tried again.');
		expect(notice.text()).toContain('unknown model');
		await wrapper.setProps({ record: { status: 'failed', attention: false, last_error: lastError } });
		expect(wrapper.get('[data-test="trouble"]').classes()).toContain('danger');
		expect(wrapper.get('[data-test="trouble"]').text()).toContain('Its last error before it ended: Provider rejected the request (HTTP 400): unknown model');
		await wrapper.setProps({ record: { status: 'completed', attention: false, last_error: null } });
		expect(wrapper.find('[data-test="trouble"]').exists()).toBe(false);
	});
});

describe('generate-tab', () => {
	const rates = { token_per_page: 10, token_per_batch_page: 5, token_per_main_json: 20 };
	function mountTab(balance: number) {
		const triggered: unknown[][] = [];
		const workspace = {
			api: { trigger: async (...args: unknown[]) => (triggered.push(args), { generation_id: 7 }) },
			pseoId: ref(3),
			website: ref(null),
			balance: ref(balance),
			rates: ref(rates),
			refreshBalance: async () => {},
			showTab: () => {},
			live: () => null,
		};
		const stubs = { ...global.stubs, 'native-field': defineComponent({ props: { id: String }, setup: () => () => h('input') }) };
		return { wrapper: mount(GenerateTab, { global: { stubs, provide: { [WORKSPACE as symbol]: workspace } } }), workspace, triggered };
	}

	it('disables Start with the reason beside it when the balance does not cover the price, and enables it once it does', async () => {
		const { wrapper, workspace, triggered } = mountTab(20);
		// Ten bulk pages at 5 tokens: 50, against a balance of 20.
		const start = wrapper.get('[data-test="start-job"]');
		expect(start.attributes('disabled')).toBeDefined();
		expect(wrapper.get('[data-test="start-blocked"]').text()).toContain('Start needs 30 more tokens');
		await start.trigger('click');
		expect(triggered).toEqual([]);
		workspace.balance.value = 50;
		await wrapper.vm.$nextTick();
		expect(wrapper.find('[data-test="start-blocked"]').exists()).toBe(false);
		expect(wrapper.get('[data-test="start-job"]').attributes('disabled')).toBeUndefined();
		await wrapper.get('[data-test="start-job"]').trigger('click');
		expect(triggered).toEqual([['bulk', 3, 10]]);
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
		expect(wrapper.emitted('submit')).toEqual([[{ website_url: 'https://example.com', master_prompt: 'Friendly, precise pages for homeowners.', website_software: 'wordpress' }]]);
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

describe('facts-editor', () => {
	const facts = { city: 'Leeds', population: 812000 };
	it('shows a plan page\'s facts as JSON, and saves what is edited once it is a flat object of values', async () => {
		const wrapper = mount(FactsEditor, { props: { id: 'facts-1', facts }, global });
		const input = wrapper.get('[data-test="facts-input"]');
		expect(JSON.parse((input.element as unknown as { value: string }).value)).toEqual(facts);
		expect(wrapper.get('label').attributes('for')).toBe('facts-1');
		await input.setValue('{"city": "Leeds", "population": 812001, "open_sundays": true}');
		await wrapper.get('[data-test="facts-save"]').trigger('click');
		expect(wrapper.emitted('save')).toEqual([[{ city: 'Leeds', population: 812001, open_sundays: true }]]);
	});

	it('names what is wrong instead of saving, and saves no facts from an empty text', async () => {
		const wrapper = mount(FactsEditor, { props: { id: 'facts-2', facts }, global });
		const input = wrapper.get('[data-test="facts-input"]');
		await input.setValue('{"prices": {"low": 1}}');
		await wrapper.get('[data-test="facts-save"]').trigger('click');
		expect(wrapper.get('[data-test="facts-problem"]').text()).toBe('"facts.prices" must be a string, a number or a boolean, received an object.');
		expect(input.attributes('aria-describedby')).toBe('facts-2-problem');
		await input.setValue('{city: Leeds}');
		await wrapper.get('[data-test="facts-save"]').trigger('click');
		expect(wrapper.get('[data-test="facts-problem"]').text()).toMatch(/^Not JSON/);
		expect(wrapper.emitted('save')).toBeUndefined();
		await input.setValue('  ');
		await wrapper.get('[data-test="facts-save"]').trigger('click');
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
