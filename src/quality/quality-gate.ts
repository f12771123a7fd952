import { qualityVerdicts } from '../metrics/metrics.ts';
import { setImmediate } from 'node:timers/promises';
import type { Knex } from 'knex';
import { bandNumbers, encodeSignature, signatureOf, similarity } from './minhash.ts';
import {
	checkHeadings,
	checkInternalLinks,
	checkKeyword,
	checkMeta,
	checkSimilarity,
	checkWords,
	type CheckedPage,
	type QualityIssue,
} from './page-checks.ts';
import { nearestStoredPosts } from './similarity-index.ts';
import type { Facts } from '../shared/facts.ts';
import { checkFigures } from './figures.ts';
import type { FiguresMode } from '../config/config.ts';
import { ancestorsOf, buildStructuredData, type StructuredData } from '../posts/structured-data.ts';
import { planTitles } from '../plan/plan-page-store.ts';

/** `PSEO_QUALITY_MIN_WORDS`, `PSEO_QUALITY_MAX_SIMILARITY` and `PSEO_QUALITY_FIGURES`. */
export interface QualitySettings {
	minWords: number;
	maxSimilarity: number;
	/** The figure check: `fail` (the default), `warn` or `off`. */
	figures?: FiguresMode;
}

type QualityStatus = 'pass' | 'warn' | 'fail';

/** The gate's verdict on a page, as a post stores it, with the signature that indexes it. */
export interface QualityReport {
	status: QualityStatus;
	/** 0 to 100: 100 less 30 per failed check and 10 per warning. */
	score: number;
	issues: QualityIssue[];
	/** The page's MinHash signature, base64; null for a page without words. */
	signature: string | null;
	/** The page's schema.org JSON-LD, built when the gate knows the website (see {@link GateSite}). */
	structuredData?: StructuredData;
}

/** What the gate needs of the website to build a page's structured data: its URL and the plan's language. */
export interface GateSite {
	websiteUrl: string;
	language: string;
}

const FAIL_COST = 30;
const WARN_COST = 10;

/** What the gate knows of the page's place in the plan. */
export interface PagePlace {
	route: string;
	/** The plan page's title: a figure it names is one the page may state. */
	title?: string | null | undefined;
	primaryKeyword?: string | null | undefined;
	planRoutes: ReadonlySet<string>;
	/** The page's own data, which its figures must come from. */
	facts?: Facts | null | undefined;
	/** Its parent in the plan (a hub), which its breadcrumb names. */
	parentRoute?: string | null | undefined;
}

/** Every check but the near-duplicate one, which needs the website's other posts: pure and synchronous. */
export function checkPage(page: CheckedPage, place: PagePlace, settings: QualitySettings): QualityIssue[] {
	return [
		...checkWords(page, settings.minWords),
		...checkHeadings(page),
		...checkMeta(page),
		...checkKeyword(page, place.primaryKeyword),
		...checkInternalLinks(page, place.planRoutes, place.route),
		...checkFigures(page, { facts: place.facts, title: place.title ?? page.title, primaryKeyword: place.primaryKeyword }, settings.figures ?? 'fail'),
	];
}

/** Status and score from the issues found. */
export function verdict(issues: readonly QualityIssue[]): Pick<QualityReport, 'status' | 'score'> {
	const fails = issues.filter((found) => found.severity === 'fail').length;
	const warns = issues.length - fails;
	return {
		status: fails > 0 ? 'fail' : warns > 0 ? 'warn' : 'pass',
		score: Math.max(0, 100 - FAIL_COST * fails - WARN_COST * warns),
	};
}

/** The gate of one job run on one website. */
export interface QualityGate {
	/**
	 * Checks pages against the rules and against every other post of the website, the pages of this run not yet
	 * stored, and each other (a page is compared with those before it).
	 */
	assess(pages: readonly { page: CheckedPage; place: PagePlace }[]): Promise<QualityReport[]>;
	/** The pages are stored (or dropped): from now on the index finds them, so the run forgets them. */
	settle(routes: Iterable<string>): void;
}

/**
 * The quality gate of one job run: deterministic, no AI call. The near-duplicate check compares each page with
 * the website's stored posts through the band index (two queries for any number of pages), and with the pages
 * this run has assessed but not stored yet, so that pages written at the same time cannot pass as originals of
 * each other; those are few, bounded by the queue and the write batch.
 */
export function createQualityGate(knex: Knex, pseoId: number, settings: QualitySettings, site?: GateSite): QualityGate {
	const unsettled = createPendingIndex();
	// The plan's title of each ancestor route, for the breadcrumbs: read once per gate, for the routes of each call
	// not read yet (one query for a chunk of any size; the pages of a set share their hub).
	const ancestorTitles = new Map<string, string>();
	const readAncestors = new Set<string>();
	return {
		async assess(entries) {
			if (site) {
				const above = entries.flatMap(({ place }) => [...ancestorsOf(place.route), ...(place.parentRoute ? [place.parentRoute] : [])]);
				const missing = [...new Set(above)].filter((route) => !readAncestors.has(route));
				if (missing.length > 0) {
					for (const [route, title] of await planTitles(knex, pseoId, missing)) ancestorTitles.set(route, title);
					for (const route of missing) readAncestors.add(route);
				}
			}
			const dateModified = new Date().toISOString();
			const signatures = await mapInSlices(entries, ({ page }) => signatureOf(`${page.title}\n${page.body}`));
			const lookups = entries.flatMap(({ place }, i) => {
				const signature = signatures[i];
				return signature ? [{ route: place.route, signature }] : [];
			});
			const stored = lookups.length > 0 ? await nearestStoredPosts(knex, pseoId, lookups) : new Map<string, { route: string; score: number }>();
			// Each page is compared with the unsettled pages, earlier pages of this call included.
			const reports = await mapInSlices(entries, ({ page, place }, i) => {
				const issues = checkPage(page, place, settings);
				const signature = signatures[i];
				if (signature) {
					const indexed = stored.get(place.route) ?? null;
					const keys = bandNumbers(signature);
					const pending = unsettled.nearest(place.route, signature, keys);
					const nearest = pending && (!indexed || pending.score > indexed.score) ? pending : indexed;
					issues.push(...checkSimilarity(nearest, settings.maxSimilarity));
					unsettled.add(place.route, signature, keys);
				}
				const structuredData = site
					? buildStructuredData({ route: place.route, title: page.title, metaDescription: page.meta_description, faq: page.faq, language: site.language, websiteUrl: site.websiteUrl, dateModified, ancestorTitles, parentRoute: place.parentRoute })
					: undefined;
				return { ...verdict(issues), issues, signature: signature ? encodeSignature(signature) : null, ...(structuredData ? { structuredData } : {}) };
			});
			for (const report of reports) qualityVerdicts.inc({ verdict: report.status });
			return reports;
		},
		settle(routes) {
			for (const route of routes) unsettled.remove(route);
		},
	};
}

/**
 * The pages a run has judged but not stored yet, found by band like stored posts: a page is compared only with
 * those sharing a band with it, not with all of them (two chunks of 250 pages each compared with every other page
 * of both cost more than the rest of the gate).
 */
function createPendingIndex() {
	const signatures = new Map<string, { signature: Uint32Array; keys: Float64Array }>();
	// Most bands are a single page's: an array of one route costs less than a set.
	const byBand = new Map<number, string[]>();
	const remove = (route: string) => {
		const entry = signatures.get(route);
		if (!entry) return;
		signatures.delete(route);
		for (const key of entry.keys) {
			const routes = byBand.get(key);
			if (!routes) continue;
			const left = routes.filter((other) => other !== route);
			if (left.length === 0) byBand.delete(key);
			else byBand.set(key, left);
		}
	};
	return {
		nearest(route: string, signature: Uint32Array, keys: Float64Array): { route: string; score: number } | null {
			let nearest: { route: string; score: number } | null = null;
			let compared: Set<string> | undefined;
			for (const key of keys) {
				for (const other of byBand.get(key) ?? []) {
					if (other === route || compared?.has(other)) continue;
					(compared ??= new Set()).add(other);
					const score = similarity(signature, signatures.get(other)!.signature);
					if (!nearest || score > nearest.score) nearest = { route: other, score };
				}
			}
			return nearest;
		},
		add(route: string, signature: Uint32Array, keys: Float64Array) {
			remove(route);
			signatures.set(route, { signature, keys });
			for (const key of keys) {
				const routes = byBand.get(key);
				if (routes) routes.push(route);
				else byBand.set(key, [route]);
			}
		},
		remove,
	};
}

/** Pages judged between two turns of the event loop: a chunk of 250 must not hold requests up for its whole length. */
const SLICE = 10;

/** `items.map(fn)`, in order, giving the event loop a turn every {@link SLICE} items. */
async function mapInSlices<T, R>(items: readonly T[], fn: (item: T, index: number) => R): Promise<R[]> {
	const results: R[] = [];
	for (let i = 0; i < items.length; i++) {
		if (i > 0 && i % SLICE === 0) await setImmediate();
		results.push(fn(items[i]!, i));
	}
	return results;
}
