import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BodyLimitError, decodeBody } from './decode-body.ts';
import { fixture } from '../../test/support/sitemap-fixture-server.ts';
import { readDocument } from './read-document.ts';
import type { DocumentKind, DocumentReport } from './read-document.ts';

const ORIGIN = 'https://ex.com';

async function* chunks(text: string | Buffer, size = 7): AsyncGenerator<Buffer> {
	const buffer = typeof text === 'string' ? Buffer.from(text) : text;
	for (let at = 0; at < buffer.length; at += size) yield buffer.subarray(at, at + size);
}

async function parse(body: string | Buffer | AsyncIterable<Buffer>, documentUrl = `${ORIGIN}/sitemap.xml`, chunkSize = 7): Promise<{ kind: DocumentKind; urls: string[]; report: DocumentReport }> {
	const urls: string[] = [];
	const source = typeof body === 'string' || Buffer.isBuffer(body) ? chunks(body, chunkSize) : body;
	const report = await readDocument(source, documentUrl, (url) => {
		urls.push(url);
		return true;
	});
	return { kind: report.kind, urls, report };
}

function shape(name: string): string {
	return fixture(name).replaceAll('{{origin}}', ORIGIN);
}

describe('readDocument shapes (issue 5, section 2)', () => {
	it('reads a Yoast index with an XSL stylesheet instruction, tabs and a trailing comment', async () => {
		const { kind, urls } = await parse(shape('yoast-index.xml'));
		expect(kind).toBe('sitemapindex');
		expect(urls).toEqual([`${ORIGIN}/post-sitemap.xml`, `${ORIGIN}/page-sitemap.xml.gz`]);
	});

	it('reads the WordPress core wp-sitemap.xml index', async () => {
		const { kind, urls } = await parse(shape('wp-sitemap.xml'));
		expect(kind).toBe('sitemapindex');
		expect(urls).toEqual([
			`${ORIGIN}/wp-sitemap-posts-post-1.xml`,
			`${ORIGIN}/wp-sitemap-taxonomies-category-1.xml`,
			`${ORIGIN}/wp-sitemap-users-1.xml`,
		]);
	});

	it('keeps Shopify child query strings exactly, with &amp; decoded', async () => {
		const { urls } = await parse(shape('shopify-index.xml'));
		expect(urls).toEqual([`${ORIGIN}/sitemap_products_1.xml?from=1&to=999`, `${ORIGIN}/sitemap_pages_1.xml`]);
	});

	it('reads Wix indexes and Squarespace urlsets without emitting image:loc as a page', async () => {
		expect((await parse(shape('wix-index.xml'))).urls).toEqual([`${ORIGIN}/pages-sitemap.xml`, `${ORIGIN}/store-products-sitemap.xml`]);
		expect((await parse(shape('squarespace.xml'))).urls).toEqual([`${ORIGIN}/about`, `${ORIGIN}/blog`]);
	});

	it('counts only the direct url/loc with image, video, news and xhtml:link extensions present', async () => {
		const { urls } = await parse(shape('extensions.xml'));
		expect(urls).toEqual([`${ORIGIN}/en/`, `${ORIGIN}/p/`, `${ORIGIN}/v/`, `${ORIGIN}/n/1`]);
	});

	it('reads CDATA locs, trimming whitespace around and inside the CDATA', async () => {
		const { urls } = await parse(shape('cdata.xml'));
		expect(urls).toEqual([`${ORIGIN}/c?a=1&b=2`, `${ORIGIN}/spaced`]);
	});

	it('decodes predefined and numeric entities', async () => {
		const { urls } = await parse(shape('entities.xml'));
		expect(urls).toEqual([`${ORIGIN}/q?a=1&b=2&c=3&d=4%3C%3E%22%27`]);
	});

	it('reads locs with bare ampersands, which strict XML forbids but generators emit', async () => {
		for (const size of [1, 5, 4096]) {
			const { urls } = await parse('<urlset><url><loc>https://ex.com/?a=1&b=2</loc></url><url><loc><![CDATA[https://ex.com/?c=3&d=4]]></loc></url><url><loc>https://ex.com/&amp;x</loc></url></urlset>', undefined, size);
			expect(urls).toEqual([`${ORIGIN}/?a=1&b=2`, `${ORIGIN}/?c=3&d=4`, `${ORIGIN}/&x`]);
		}
	});

	it('accepts a UTF-8 BOM and whitespace before <?xml', async () => {
		expect((await parse(shape('bom.xml'), undefined, 1)).urls).toEqual([`${ORIGIN}/bom`]);
		expect((await parse(shape('leading-whitespace.xml'))).urls).toEqual([`${ORIGIN}/leading`]);
	});

	it('accepts a UTF-16 document with its BOM', async () => {
		const text = '\ufeff<urlset><url><loc>https://ex.com/wide</loc></url></urlset>';
		const { urls } = await parse(Buffer.from(text, 'utf16le'));
		expect(urls).toEqual([`${ORIGIN}/wide`]);
	});

	it('matches prefixed, missing and upper-case namespaces by local name', async () => {
		expect((await parse(shape('prefixed.xml'))).urls).toEqual([`${ORIGIN}/prefixed`]);
		expect((await parse(shape('no-namespace.xml'))).urls).toEqual([`${ORIGIN}/no-namespace`]);
		expect((await parse(shape('uppercase.xml'))).urls).toEqual([`${ORIGIN}/upper`]);
	});

	it('trims pretty-printed locs and reads a single-entry urlset', async () => {
		expect((await parse(shape('pretty-printed.xml'))).urls).toEqual([`${ORIGIN}/pretty`]);
		const single = await parse(shape('single-entry.xml'));
		expect(single).toMatchObject({ kind: 'urlset', urls: [`${ORIGIN}/only`] });
	});

	it('reads a plain-text sitemap line by line, keeping only absolute http(s) lines', async () => {
		const { kind, urls } = await parse(shape('plain.txt'), `${ORIGIN}/sitemap`);
		expect(kind).toBe('text');
		expect(urls).toEqual([`${ORIGIN}/t1`, `${ORIGIN}/t2`, `${ORIGIN}/t3`, `${ORIGIN}/t4`]);
	});

	it('resolves relative locs against the document URL and drops non-http(s) ones', async () => {
		const { urls } = await parse(shape('relative.xml'), `${ORIGIN}/maps/sitemap.xml`);
		expect(urls).toEqual([`${ORIGIN}/relative-path`, `${ORIGIN}/maps/sibling`]);
	});

	it('calls an empty index a sitemap with no entries', async () => {
		expect(await parse(shape('empty-index.xml'))).toMatchObject({ kind: 'sitemapindex', urls: [] });
	});
});

describe('readDocument broken input (issue 5, section 2)', () => {
	it('skips a <sitemap> without <loc> and keeps its siblings', async () => {
		const { urls } = await parse(shape('index-missing-loc.xml'));
		expect(urls).toEqual([`${ORIGIN}/good.xml`]);
	});

	it('keeps the complete entries of a truncated document and drops the partial one', async () => {
		const { kind, urls, report } = await parse(shape('truncated.xml'));
		expect(kind).toBe('urlset');
		expect(urls).toEqual([`${ORIGIN}/t1`, `${ORIGIN}/t2`]);
		expect(report.errorCount).toBeGreaterThan(0);
	});

	it('drops the partial last line of a plain-text sitemap cut by the size cap', async () => {
		const body = decodeBody(chunks('https://ex.com/a\nhttps://ex.com/bbbbbbbbbb\n'), undefined, 25);
		const { urls, report } = await parse(body);
		expect(urls).toEqual([`${ORIGIN}/a`]);
		expect(report.interruption?.kind).toBe('max-bytes');
	});

	it('calls an HTML page not a sitemap and reports none of its links', async () => {
		const html = await parse(fixture('soft-404.html'));
		expect(html).toMatchObject({ kind: 'html', urls: [] });
	});

	it('stops at an HTML doctype (a page, not a sitemap) and refuses any other DOCTYPE', async () => {
		for (const size of [1, 5, 4096]) {
			expect(await parse(fixture('html-page.html'), undefined, size)).toMatchObject({ kind: 'html', urls: [] });
			expect(await parse('<!doctype html><html><body><a href="/x">x</a></body></html>', undefined, size)).toMatchObject({ kind: 'html', urls: [] });
			expect((await parse(shape('billion-laughs.xml'), undefined, size)).kind).toBe('refused');
		}
		expect((await parse('<urlset><url><loc>https://ex.com/a</loc></url></urlset><!DOCTYPE')).kind).toBe('refused');
	});

	it('refuses a document whose <!ENTITY comes after entries, even split across chunks', async () => {
		for (const size of [1, 3, 4096]) {
			const { kind } = await parse(shape('external-entity.xml'), undefined, size);
			expect(kind).toBe('refused');
		}
	});

	it('refuses the billion-laughs document at once, whatever its size', async () => {
		const started = performance.now();
		const huge = shape('billion-laughs.xml').replace('<urlset', `${' '.repeat(1_000_000)}<urlset`);
		const { kind, urls } = await parse(huge, undefined, 65_536);
		expect(kind).toBe('refused');
		expect(urls).toEqual([]);
		expect(performance.now() - started).toBeLessThan(1000);
	});

	it('calls RSS, garbage and empty bodies not sitemaps', async () => {
		expect((await parse(shape('rss.xml'))).kind).toBe('other');
		expect((await parse(fixture('garbage.bin'))).kind).toBe('other');
		expect((await parse('   \n\t  ')).kind).toBe('empty');
	});

	it('stops reading when the entry callback says so', async () => {
		const seen: string[] = [];
		await readDocument(chunks(shape('duplicates.xml')), `${ORIGIN}/s.xml`, (url) => {
			seen.push(url);
			return false;
		});
		expect(seen).toEqual([`${ORIGIN}/d`]);
	});
});

describe('decodeBody', () => {
	async function collect(source: AsyncIterable<Buffer>): Promise<string> {
		const parts: Buffer[] = [];
		for await (const chunk of source) parts.push(chunk);
		return Buffer.concat(parts).toString();
	}

	it('gunzips by the magic bytes, whatever the headers', async () => {
		expect(await collect(decodeBody(chunks(gzipSync('<urlset/>'), 1), undefined, 1000))).toBe('<urlset/>');
	});

	it('passes plain bodies through untouched', async () => {
		expect(await collect(decodeBody(chunks('<urlset/>'), 'gzip', 1000))).toBe('<urlset/>');
	});

	it('undoes gzip inside gzip (a .gz file sent with Content-Encoding: gzip)', async () => {
		expect(await collect(decodeBody(chunks(gzipSync(gzipSync('<urlset/>'))), 'gzip', 1000))).toBe('<urlset/>');
	});

	it('stops a gzip bomb at maxBytes counted after decompression', async () => {
		const bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024, 0x20));
		let seen = 0;
		const consume = async (): Promise<void> => {
			for await (const chunk of decodeBody(chunks(bomb, 16_384), undefined, 1024 * 1024)) seen += chunk.length;
		};
		await expect(consume()).rejects.toBeInstanceOf(BodyLimitError);
		expect(seen).toBe(1024 * 1024);
	});
});
