import type { FiguresMode } from '../config/config.ts';
import type { Facts } from '../shared/facts.ts';
import type { CheckedPage, QualityIssue } from './page-checks.ts';

/*
 * The figure check of the quality gate: every figure a page states in its body and FAQ must be one its own data
 * gives (its facts, its title or its primary keyword), so that a page cannot invent a price, a population or a
 * date. A figure is a number of two or more digits, a decimal, a currency amount or a percentage; list numbering
 * and ordinals in headings do not count, nor do numbers inside words (B2B, H2O, COVID-19), link targets and URLs,
 * internal links' anchor text (the titles of other pages) or the idiom 24/7.
 *
 * Figures are compared after normalisation: thousands separators (comma, point, space, apostrophe), decimal comma
 * or point, currency signs and `%` are dropped, so `€1,299.50`, `1.299,50 €` and `1299.5` are one figure. A number
 * whose one separator could be either (`1,299`, `1.500`) stands for both readings. The page is read once, in one
 * pass of one regular expression: the cost grows with the page, and nothing is read from the database.
 */


/** A figure as the page writes it, and the values it may stand for once normalised. */
interface Figure {
	text: string;
	values: string[];
	/** A figure in the check's sense: two or more digits, a decimal, a currency amount or a percentage. */
	counts: boolean;
}

const CURRENCY = '$€£¥₹₺₽₩₪₫₦฿₴₱₣₲₵₡';
/** Separators a number's digit groups may use: comma, point, space, no-break and thin spaces, apostrophes. */
const GROUP = `[,.\\u0020\\u00a0\\u202f\\u2009'’]`;
/*
 * One number, with what goes with it: a currency sign before or after, a percent sign after. A time of day (9:00)
 * is one figure; `\d{1,3}(?:sep\d{3})+` is a grouped number, with decimals after; otherwise digits with one decimal
 * separator. The lookbehind keeps numbers inside words out (B2B, mp3, COVID-19: a letter, or a letter and a hyphen).
 */
const NUMBER = new RegExp(
	`(?<![\\p{L}\\p{N}_]|\\p{L}-)([${CURRENCY}]\\s?)?(\\d{1,2}:\\d{2}(?!\\d)|\\d{1,3}(?:${GROUP}\\d{3})+(?:[.,]\\d+)?(?![\\d])|\\d+(?:[.,]\\d+)?(?![\\d]))(\\s?(?:%|‰|[${CURRENCY}]))?`,
	'gu',
);
const ORDINAL_SUFFIX = /^(?:st|nd|rd|th|er|re|e|ème|eme|º|ª|\.)(?![\p{L}])/u;
const URL = /\b(?:https?:\/\/|www\.)\S+/gi;
/** Markdown links and images: `[text](target)`; internal ones (a root-relative target) lose their text too. */
const LINK = /!?\[((?:[^\][\\]|\\.)*)\]\(\s*<?([^\s)>]*)>?(?:\s+"[^"]*")?\s*\)/g;
const HEADING = /^\s{0,3}#{1,6}\s/;
const LIST_MARKER = /^(\s*)\d{1,9}[.)](?=\s)/;
const HEADING_NUMBERING = /^(\s{0,3}#{1,6}\s+)\d{1,9}[.):](?=\s)/;

/** The figures of a text, each with the values it may stand for; `inHeading` drops ordinals (1st, 2.) as headings number steps. */
function figuresOf(text: string, inHeading = false): Figure[] {
	const found: Figure[] = [];
	for (const match of text.matchAll(NUMBER)) {
		const [whole, before, number, after] = match;
		const end = match.index + whole.length;
		const next = text.slice(end, end + 4);
		// 24/7 is an idiom, not a figure.
		if (number === '24' && /^\s?\/\s?7(?!\d)/.test(next)) continue;
		if (inHeading && !after && ORDINAL_SUFFIX.test(next)) continue;
		const values = valuesOf(number!);
		if (values.length === 0) continue;
		const digits = number!.replace(/\D/g, '').length;
		const decimal = values.some((value) => value.includes('.')) && !/^\d{1,3}[.,]\d{3}$/.test(number!);
		const counts = number!.includes(':') || digits >= 2 || decimal || !!before || !!after;
		found.push({ text: whole.trim(), values, counts });
	}
	return found;
}

/**
 * The values a written number stands for, normalised: no grouping, a point for decimals, no leading zeros of the
 * whole part, no trailing zeros of the decimals. `1,299` and `1.299` give both 1299 and 1.299.
 */
function valuesOf(number: string): string[] {
	if (number.includes(':')) {
		const [hours, minutes] = number.split(':');
		return [`${Number(hours)}:${minutes}`];
	}
	const compact = number.replace(/[\u0020\u00a0\u202f\u2009'’]/g, '');
	const separators = [...compact.matchAll(/[.,]/g)];
	if (separators.length === 0) return [canonical(compact, '')];
	const last = separators.at(-1)!;
	const kinds = new Set(separators.map((separator) => separator[0]));
	const whole = compact.slice(0, last.index).replace(/[.,]/g, '');
	const fraction = compact.slice(last.index + 1);
	if (kinds.size > 1) return [canonical(whole, fraction)];
	// One kind of separator: several of them group thousands (1,234,567); one with three digits after may be either.
	if (separators.length > 1) return [canonical(compact.replace(/[.,]/g, ''), '')];
	const grouped = fraction.length === 3 && whole.length <= 3 && !/^0\d*$/.test(whole);
	return grouped ? [canonical(whole + fraction, ''), canonical(whole, fraction)] : [canonical(whole, fraction)];
}

function canonical(whole: string, fraction: string): string {
	const integer = whole.replace(/^0+(?=\d)/, '') || '0';
	const decimals = fraction.replace(/0+$/, '');
	return decimals === '' ? integer : `${integer}.${decimals}`;
}

/** Every value the page's own data gives: the numbers of its facts, title and primary keyword, whatever their size. */
function allowedValues(facts: Facts | null | undefined, title: string | null | undefined, keyword: string | null | undefined): Set<string> {
	const allowed = new Set<string>();
	const add = (text: string) => {
		for (const figure of figuresOf(text)) for (const value of figure.values) allowed.add(value);
	};
	for (const value of Object.values(facts ?? {})) {
		if (typeof value === 'number') add(numberText(value));
		else if (typeof value === 'string') add(value);
	}
	if (title) add(title);
	if (keyword) add(keyword);
	return allowed;
}

/** A number as plain digits (no exponent), for reading as a figure. */
function numberText(value: number): string {
	const text = String(value);
	return /e/i.test(text) ? value.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 20 }) : text;
}

/** Whether a line has a digit: most lines of prose have none, and are then not read any further. */
const DIGIT = /[0-9]/;

/**
 * The lines of the page whose figures count, each read only when it has a digit: the body (without URLs, link
 * targets, internal links' text and list numbering; headings marked so that their ordinals are dropped), then each
 * FAQ question and answer.
 */
function* checkedLines(page: CheckedPage): Generator<{ text: string; heading: boolean; body: boolean }> {
	for (const line of page.body.split('\n')) {
		if (!DIGIT.test(line)) continue;
		yield { text: readable(line.replace(HEADING_NUMBERING, '$1').replace(LIST_MARKER, '$1')), heading: HEADING.test(line), body: true };
	}
	if (!Array.isArray(page.faq)) return;
	for (const entry of page.faq as { question?: unknown; answer?: unknown }[]) {
		for (const text of [String(entry?.question ?? ''), String(entry?.answer ?? '')]) if (DIGIT.test(text)) yield { text: readable(text), heading: false, body: false };
	}
}

/** A line without URLs, link targets, and the text of internal links (the titles of other pages). */
function readable(line: string): string {
	return line.replace(LINK, (_whole, label: string, target: string) => (target.startsWith('/') && !target.startsWith('//') ? ' ' : label)).replace(URL, ' ');
}

/** Where the page's figures may come from. */
export interface FigureSources {
	facts?: Facts | null | undefined;
	title?: string | null | undefined;
	primaryKeyword?: string | null | undefined;
}

/** The page's figures read once: those nothing supports (as written, each once), and every value the body states. */
function readFigures(page: CheckedPage, sources: FigureSources): { unsupported: string[]; stated: Set<string> } {
	const allowed = allowedValues(sources.facts, sources.title, sources.primaryKeyword);
	const unsupported = new Map<string, string>();
	const stated = new Set<string>();
	for (const { text, heading, body } of checkedLines(page)) {
		for (const figure of figuresOf(text, heading)) {
			if (body) for (const value of figure.values) stated.add(value);
			if (!figure.counts || figure.values.some((value) => allowed.has(value))) continue;
			const key = figure.values[0]!;
			if (!unsupported.has(key)) unsupported.set(key, figure.text);
		}
	}
	return { unsupported: [...unsupported.values()], stated };
}

/** The figures of the page's body and FAQ that its facts, title and primary keyword do not give, each once, as written. */
export function unsupportedFigures(page: CheckedPage, sources: FigureSources): string[] {
	return readFigures(page, sources).unsupported;
}

/** Figures a finding names at most. */
const NAMED = 5;

/**
 * The figure checks of a page, its figures read once:
 * - `figures`: each figure of the body and FAQ that the page's facts, title and primary keyword do not give is
 *   named; a page with facts fails in `fail` mode, a page without facts, or any page in `warn` mode, is warned;
 * - `facts_used`: a page whose body uses fewer than min(3, its facts) of its facts is warned, naming how many it used.
 *   A fact with numbers is used when the body states one of them, a text fact when the body holds it (without
 *   case); true-or-false facts cannot be quoted, so they are not counted.
 * Nothing is checked in `off` mode.
 */
export function checkFigures(page: CheckedPage, sources: FigureSources, mode: FiguresMode): QualityIssue[] {
	if (mode === 'off') return [];
	const { unsupported, stated } = readFigures(page, sources);
	const found: QualityIssue[] = [];
	const hasFacts = !!sources.facts && Object.keys(sources.facts).length > 0;
	if (unsupported.length > 0) {
		const named = unsupported.slice(0, NAMED).map((figure) => `"${figure}"`);
		const more = unsupported.length > NAMED ? ` and ${unsupported.length - NAMED} more` : '';
		const where = hasFacts ? 'the page\'s facts, title or primary keyword' : 'the page\'s title or primary keyword (the page has no facts)';
		const detail = `${named.join(', ')}${more} ${unsupported.length === 1 ? 'is' : 'are'} not given by ${where}`;
		found.push({ check: 'figures', severity: hasFacts && mode === 'fail' ? 'fail' : 'warn', detail });
	}
	if (hasFacts) found.push(...factsUsed(page.body, sources.facts!, stated));
	return found;
}

function factsUsed(body: string, facts: Facts, stated: ReadonlySet<string>): QualityIssue[] {
	const entries = Object.values(facts).filter((value): value is string | number => typeof value !== 'boolean');
	const wanted = Math.min(3, entries.length);
	if (wanted === 0) return [];
	let lower: string | undefined;
	let used = 0;
	for (const value of entries) {
		const text = typeof value === 'number' ? numberText(value) : value;
		const figures = figuresOf(text);
		const found =
			figures.length > 0
				? figures.some((figure) => figure.values.some((candidate) => stated.has(candidate)))
				: // As written first, which is the common case and needs no lower-cased copy of the body.
					body.includes(text.trim()) || (lower ??= body.toLowerCase().replace(/\s+/g, ' ')).includes(text.toLowerCase().replace(/\s+/g, ' ').trim());
		if (found && ++used >= wanted) return [];
	}
	return [{ check: 'facts_used', severity: 'warn', detail: `the body uses ${used} of the page's ${entries.length} facts; at least ${wanted} should be stated` }];
}
