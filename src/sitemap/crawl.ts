import type { FetchFailureKind, GuardedFetcher } from './guarded-fetch.ts';
import type { Limiter } from './limiter.ts';
import type { Logger, SitemapOptions } from './limits.ts';
import { readDocument } from './read-document.ts';
import type { DocumentKind, DocumentReport } from './read-document.ts';
import { visitKey } from './urls.ts';

/** A document's page URLs, or an index's children in document order; flattened once the crawl is over. */
export type UrlTree = { urls: string[] } | { children: UrlTree[] };

const MAX_REASONS = 100;

/** State shared by every document of one `readSitemap` call. */
export class CrawlContext {
	readonly options: SitemapOptions;
	readonly logger: Logger;
	readonly fetcher: GuardedFetcher;
	readonly limiter: Limiter;
	/** Aborts on the total budget, the caller's signal or `stop()`. */
	readonly signal: AbortSignal;
	/** Visit keys of every sitemap document requested so far, redirect targets included. */
	readonly seen = new Set<string>();
	/** Distinct page URLs kept so far. */
	readonly urls = new Set<string>();
	readonly reasons: string[] = [];
	children = 0;
	#droppedReasons = 0;
	readonly #stopper = new AbortController();
	#stopReason: string | null = null;

	constructor(options: SitemapOptions, logger: Logger, fetcher: GuardedFetcher, limiter: Limiter, signals: AbortSignal[]) {
		this.options = options;
		this.logger = logger;
		this.fetcher = fetcher;
		this.limiter = limiter;
		this.signal = AbortSignal.any([...signals, this.#stopper.signal]);
	}

	/** Ends the crawl early (a cap was reached); in-flight documents keep what they read. */
	stop(reason: string): void {
		if (this.#stopReason !== null) return;
		this.#stopReason = reason;
		this.note('warn', null, reason);
		this.#stopper.abort();
	}

	get stopped(): boolean {
		return this.signal.aborted;
	}

	/** Logs a problem and keeps it, bounded, for the result's `reasons`. */
	note(level: 'debug' | 'warn', url: string | null, message: string, extra: object = {}): void {
		this.logger[level]({ url, ...extra }, `sitemap: ${message}`);
		if (this.reasons.length < MAX_REASONS) this.reasons.push(url === null ? message : `${url}: ${message}`);
		else this.#droppedReasons++;
	}

	/** `reasons` plus a count of those left out. */
	allReasons(): string[] {
		return this.#droppedReasons === 0 ? [...this.reasons] : [...this.reasons, `${this.#droppedReasons} more problems not listed`];
	}
}

export interface DocumentOutcome {
	/** What the document was, or `failed` when it could not be fetched. */
	kind: DocumentKind | 'failed' | 'skipped';
	tree: UrlTree;
	/** Why a `failed` document failed, and the URL (after redirects) that failed. */
	failure?: { kind: FetchFailureKind; url: string };
}

const EMPTY: UrlTree = { urls: [] };

/**
 * Reads the sitemap document at `url` (already marked as seen) at index depth `depth`, and the children of an
 * index to the depth limit, every fetch going through the shared pool. Never throws for network or content
 * problems: a failing document is noted and contributes nothing, and its siblings are unaffected.
 */
export async function crawlDocument(ctx: CrawlContext, url: string, depth: number): Promise<DocumentOutcome> {
	const read = await ctx.limiter.run(() => readOne(ctx, url, depth));
	if (read.kind !== 'sitemapindex' || read.childUrls.length === 0) return { kind: read.kind, tree: { urls: read.pageUrls }, failure: read.failure };
	const children: Promise<DocumentOutcome>[] = [];
	if (depth + 1 > ctx.options.maxDepth) {
		ctx.note('warn', url, `index nested deeper than ${ctx.options.maxDepth} levels; its ${read.childUrls.length} children are not read`);
		return { kind: read.kind, tree: EMPTY };
	}
	for (const child of read.childUrls) {
		const key = visitKey(child);
		if (ctx.seen.has(key)) {
			ctx.logger.debug({ url, child }, 'sitemap: child already read (cycle or duplicate), skipped');
			continue;
		}
		if (ctx.children >= ctx.options.maxChildren) {
			ctx.note('warn', url, `cap of ${ctx.options.maxChildren} child sitemaps reached; remaining children are not read`);
			break;
		}
		ctx.seen.add(key);
		ctx.children++;
		children.push(crawlDocument(ctx, child, depth + 1));
	}
	const outcomes = await Promise.all(children);
	return { kind: read.kind, tree: { children: outcomes.map((outcome) => outcome.tree) } };
}

interface ReadResult {
	kind: DocumentOutcome['kind'];
	failure?: DocumentOutcome['failure'];
	pageUrls: string[];
	childUrls: string[];
}

async function readOne(ctx: CrawlContext, url: string, depth: number): Promise<ReadResult> {
	const pageUrls: string[] = [];
	const childUrls: string[] = [];
	if (ctx.stopped) return { kind: 'skipped', pageUrls, childUrls };
	const role = depth === 0 ? 'sitemap' : 'child sitemap';
	const fetched = await ctx.fetcher.fetch(url, {
		signal: ctx.signal,
		onRedirect(target) {
			const key = visitKey(target);
			if (ctx.seen.has(key)) return `redirects to ${target}, which was already read`;
			ctx.seen.add(key);
			return null;
		},
	});
	if (!fetched.ok) {
		if (fetched.kind === 'aborted' && ctx.stopped) return { kind: 'skipped', pageUrls, childUrls };
		const expected = fetched.kind === 'not-found' || (depth === 0 && fetched.kind === 'redirect');
		ctx.note(expected ? 'debug' : 'warn', fetched.url, `${role} not read: ${fetched.message}`, { kind: fetched.kind });
		return { kind: 'failed', pageUrls, childUrls, failure: { kind: fetched.kind, url: fetched.url } };
	}
	const { maxUrlsPerDocument, maxUrls } = ctx.options;
	let entries = 0;
	let overDocumentCap = false;
	const onEntry = (entry: string, kind: DocumentKind): boolean => {
		if (++entries > maxUrlsPerDocument) {
			overDocumentCap = true;
			return false;
		}
		if (kind === 'sitemapindex') {
			childUrls.push(entry);
			return true;
		}
		const known = ctx.urls.size;
		if (known >= maxUrls) {
			if (ctx.urls.has(entry)) return true;
			ctx.stop(`cap of ${maxUrls} URLs reached; returning the first ${maxUrls}`);
			return false;
		}
		// One hash lookup instead of has() then add(): the size tells whether the URL was new.
		if (ctx.urls.add(entry).size === known) return true;
		pageUrls.push(entry);
		return true;
	};
	let report: DocumentReport;
	try {
		report = await readDocument(fetched.body, fetched.url, onEntry);
	} catch (error) {
		// Not a network or content problem but a fault of our own; siblings still count, and it must be seen.
		await fetched.body.return(undefined);
		for (const page of pageUrls) ctx.urls.delete(page);
		ctx.logger.error({ url: fetched.url, err: error }, 'sitemap: unexpected error while reading a document');
		ctx.reasons.push(`${fetched.url}: unexpected error while reading`);
		return { kind: 'failed', pageUrls: [], childUrls: [] };
	}
	const where = fetched.url;
	if (report.kind === 'refused' || report.kind === 'html') {
		// Entries may have been handed out before the declaration was seen; the whole document goes.
		for (const page of pageUrls) ctx.urls.delete(page);
		if (report.kind === 'refused') ctx.note('warn', where, `${role} refused: it contains <!DOCTYPE or <!ENTITY`);
		else ctx.note(depth === 0 ? 'debug' : 'warn', where, `${role} is an HTML page; ignored`);
		return { kind: report.kind, pageUrls: [], childUrls: [] };
	}
	if (report.kind === 'other' || report.kind === 'empty') {
		ctx.note(depth === 0 ? 'debug' : 'warn', where, `${role} is ${report.kind === 'empty' ? 'empty' : 'not a sitemap'}; ignored`);
	}
	if (overDocumentCap) {
		ctx.note('warn', where, `more than ${maxUrlsPerDocument} entries; the first ${maxUrlsPerDocument} are kept`);
	}
	if (report.interruption && !(report.interruption.kind === 'aborted' && ctx.stopped)) {
		ctx.note('warn', where, `read interrupted (${report.interruption.message}); ${entries} complete entries kept`, { kind: report.interruption.kind });
	}
	if (report.errorCount > 0) {
		ctx.logger.debug({ url: where, errorCount: report.errorCount, errors: report.errors }, 'sitemap: document is not well-formed; complete entries kept');
	}
	return { kind: report.kind, pageUrls, childUrls };
}

/** The page URLs of a tree in document order. */
export function flattenTree(tree: UrlTree, into: string[] = []): string[] {
	if ('urls' in tree) {
		for (const url of tree.urls) into.push(url);
	} else {
		for (const child of tree.children) flattenTree(child, into);
	}
	return into;
}
