import { TextDecoder } from 'node:util';
import type { CrawlContext } from './crawl.ts';
import { BodyLimitError } from './decode-body.ts';
import { BodyReadError } from './guarded-fetch.ts';
import { LineReader } from './text-sitemap-reader.ts';
import { resolveHttpUrl } from './urls.ts';

const SITEMAP_LINE = /^sitemap\s*:\s*(\S+)/i;

/**
 * The `Sitemap:` lines of the robots.txt at `robotsUrl`, resolved against it, http(s) only, deduplicated, in
 * file order. A missing, HTML or unreadable robots.txt gives none; problems are noted on the context.
 */
export async function readRobotsSitemaps(ctx: CrawlContext, robotsUrl: string): Promise<string[]> {
	const found: string[] = [];
	const fetched = await ctx.limiter.run(() => ctx.fetcher.fetch(robotsUrl, { signal: ctx.signal }));
	if (!fetched.ok) {
		ctx.note(fetched.kind === 'not-found' ? 'debug' : 'warn', fetched.url, `robots.txt not read: ${fetched.message}`, { kind: fetched.kind });
		return found;
	}
	const decoder = new TextDecoder('utf-8');
	let html = false;
	let started = false;
	const lines = new LineReader((line) => {
		if (!started) {
			started = true;
			// A soft-404 page served with status 200 is not a robots.txt.
			if (line.startsWith('<')) {
				html = true;
				return false;
			}
		}
		const match = SITEMAP_LINE.exec(line);
		const url = match?.[1] ? resolveHttpUrl(match[1], fetched.url) : null;
		if (url === null || found.includes(url)) return true;
		if (found.length >= ctx.options.maxChildren) {
			ctx.note('warn', fetched.url, `more than ${ctx.options.maxChildren} Sitemap: lines; the rest are not read`);
			return false;
		}
		found.push(url);
		return true;
	});
	try {
		for await (const chunk of fetched.body) {
			lines.write(decoder.decode(chunk, { stream: true }));
			if (lines.stopped) break;
		}
		lines.write(decoder.decode());
		lines.end();
	} catch (error) {
		if (!(error instanceof BodyLimitError || error instanceof BodyReadError)) throw error;
		ctx.note('warn', fetched.url, `robots.txt read interrupted (${error.message}); lines read so far kept`);
	}
	if (html) {
		ctx.note('debug', fetched.url, 'robots.txt is an HTML page; ignored');
		return [];
	}
	return found;
}
