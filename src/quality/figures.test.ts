import { describe, expect, it } from 'vitest';
import { checkFigures, unsupportedFigures } from './figures.ts';

const page = (body: string, faq: { question: string; answer: string }[] = []) => ({ title: 'T', meta_title: null, meta_description: null, h1: 'T', body, faq });
/** The figures of `body` that nothing supports: what the page writes, each once. */
const figures = (body: string, sources = {}) => unsupportedFigures(page(body), sources);

describe('figure extraction', () => {
	it('counts numbers of two or more digits, decimals, currency amounts and percentages, and no single digit', () => {
		expect(figures('We have 3 vans, 12 staff and 812000 customers.')).toEqual(['12', '812000']);
		expect(figures('A rating of 4.5, 4,7 in German; 5 stars.')).toEqual(['4.5', '4,7']);
		expect(figures('From $5, €9 or 7 € a month; 6% off, 8 % more, 3‰, and $5 again.')).toEqual(['$5', '€9', '7 €', '6%', '8 %', '3‰']);
	});

	it('reads thousands separators of every kind as one number', () => {
		expect(figures('1,299 and 1.299 and 1 299 and 1\u00a0299 and 1\u202f299 and 1\'299 and 1,234,567 and 12.345.678')).toEqual(['1,299', '1,234,567', '12.345.678']);
		expect(figures('€1,299.50 or 1.299,50 €')).toEqual(['€1,299.50']);
	});

	it('leaves out list numbering, ordinals and numbering in headings, numbers inside words, links, URLs and 24/7', () => {
		const body = [
			'## 1. Choose a plumber',
			'### The 2nd step, then the 10th',
			'1. first',
			'12) twelfth item',
			'B2B, H2O, mp3, COVID-19 and ISO-9001 are words.',
			'See [Plumbing in Leeds 2024](/plumbing/leeds-2024) or https://example.com/page/123 and www.example.org/99.',
			'Open 24/7, 24 / 7.',
		].join('\n');
		expect(figures(body)).toEqual([]);
		// An ordinal in the body is still a figure; so is an external link's text.
		expect(figures('The 21st year, see [the 2019 report](https://example.com/r).')).toEqual(['21', '2019']);
	});

	it('reads times of day as one figure, and the FAQ as well as the body', () => {
		expect(unsupportedFigures(page('Open from 9:00 to 17:30.', [{ question: 'Since when?', answer: 'Since 1998.' }]), {})).toEqual(['9:00', '17:30', '1998']);
	});
});

describe('figure normalisation against the page\'s data', () => {
	it('matches a figure to a fact whatever its separators, currency sign or percent sign', () => {
		const facts = { population: 812000, price: '1299.50', share: '12%', rate: 4.5, opened: '1998-05-01', hours: '9:00–17:30' };
		const body = 'It has 812,000 people (812 000; 812.000). Prices from €1,299.50, or 1.299,50 €. A 12 % share, rated 4,5, since 1998; open 9:00 to 17:30.';
		expect(figures(body, { facts })).toEqual([]);
		expect(figures('It has 812,001 people, a 13% share and €1,299.', { facts })).toEqual(['812,001', '13%', '€1,299']);
	});

	it('takes a figure from the title or the primary keyword', () => {
		expect(figures('The 10 best plumbers, for 2025.', { title: 'Top 10 plumbers', primaryKeyword: 'plumbers 2025' })).toEqual([]);
		expect(figures('The 10 best plumbers.', { title: 'Top plumbers' })).toEqual(['10']);
	});

	it('reads an ambiguous separator both ways: 1,500 is fifteen hundred or one and a half', () => {
		expect(figures('It costs 1,500.', { facts: { price: 1500 } })).toEqual([]);
		expect(figures('It weighs 1,500 kg.', { facts: { weight: '1.5' } })).toEqual([]);
		expect(figures('It costs 1,50.', { facts: { price: 1500 } })).toEqual(['1,50']);
	});
});

describe('checkFigures', () => {
	const body = 'Prices start at €4,870 here. Leeds has 812,000 people.';
	const facts = { city: 'Leeds', population: 812000 };

	it('fails a page with facts that states a figure they do not give, naming it', () => {
		expect(checkFigures(page(body), { facts }, 'fail')).toEqual([
			{ check: 'figures', severity: 'fail', detail: '"€4,870" is not given by the page\'s facts, title or primary keyword' },
		]);
		expect(checkFigures(page('Leeds has 812,000 people.'), { facts }, 'fail')).toEqual([]);
		expect(checkFigures(page(body), { facts }, 'fail')).toHaveLength(1);
	});

	it('only warns in warn mode, and for a page without facts; checks nothing when off', () => {
		expect(checkFigures(page(body), { facts }, 'warn')).toMatchObject([{ check: 'figures', severity: 'warn' }]);
		expect(checkFigures(page(body), {}, 'fail')).toEqual([
			{ check: 'figures', severity: 'warn', detail: '"€4,870", "812,000" are not given by the page\'s title or primary keyword (the page has no facts)' },
		]);
		expect(checkFigures(page(body), { facts }, 'off')).toEqual([]);
	});

	it('names five figures at most', () => {
		const [found] = checkFigures(page('10 11 12 13 14 15 16'), { facts }, 'fail');
		expect(found!.detail).toBe('"10", "11", "12", "13", "14" and 2 more are not given by the page\'s facts, title or primary keyword');
	});

	it('stays linear in the page\'s size', () => {
		const paragraph = 'In Leeds, 812,000 people pay from €95.50 a visit, 12% less than in 2019; see [Roofing 2024](/roofing). ';
		const time = (repeat: number) => {
			const text = paragraph.repeat(repeat);
			const start = performance.now();
			for (let i = 0; i < 5; i++) checkFigures(page(text), { facts: { population: 812000, price: 95.5 } }, 'fail');
			return performance.now() - start;
		};
		time(200);
		const small = time(500);
		const large = time(5000);
		// Ten times the page, well under a hundred times the work.
		expect(large / Math.max(small, 0.5)).toBeLessThan(30);
	});
});

describe('the facts_used warning', () => {
	const facts = { city: 'Leeds', population: 812000, price: '95.50', emergency: true, note: 'Family business' };
	const checkFactsUsed = (text: { body: string }, given: Record<string, string | number | boolean> | null) =>
		checkFigures(page(text.body), { facts: given }, 'warn').filter((found) => found.check === 'facts_used');

	it('warns when the body uses fewer than min(3, facts) of its fact values, booleans aside', () => {
		expect(checkFactsUsed({ body: 'Plumbers in Leeds, a city of 812,000.' }, facts)).toEqual([
			{ check: 'facts_used', severity: 'warn', detail: 'the body uses 2 of the page\'s 4 facts; at least 3 should be stated' },
		]);
		expect(checkFactsUsed({ body: 'Plumbers in Leeds, a city of 812,000, from £95.50 a visit.' }, facts)).toEqual([]);
		expect(checkFactsUsed({ body: 'A family business in LEEDS: 812 000 people.' }, facts)).toEqual([]);
	});

	it('asks for as many as there are when there are fewer than three, and nothing without facts', () => {
		expect(checkFactsUsed({ body: 'Nothing here.' }, { city: 'Leeds' })).toMatchObject([{ detail: 'the body uses 0 of the page\'s 1 facts; at least 1 should be stated' }]);
		expect(checkFactsUsed({ body: 'In Leeds.' }, { city: 'Leeds' })).toEqual([]);
		expect(checkFactsUsed({ body: 'Nothing here.' }, null)).toEqual([]);
		expect(checkFactsUsed({ body: 'Nothing here.' }, { open: true })).toEqual([]);
	});
});
