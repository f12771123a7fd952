import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { marked, type Token, type Tokens } from 'marked';
import { describe, expect, it } from 'vitest';

/*
 * Every relative link and anchor in the project's Markdown resolves: the README sends newcomers into docs/, the docs
 * link each other and the code, and a moved section or a renamed file must fail a test rather than a reader.
 * External links are not fetched.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The Markdown files git knows of, committed or new (ignored ones, node_modules among them, are not). */
function markdownFiles(): string[] {
	const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', '*.md'], { cwd: ROOT, encoding: 'utf8' });
	return [...new Set(listed.split('\0').filter(Boolean))].filter((file) => existsSync(path.join(ROOT, file))).sort();
}

/**
 * GitHub's heading anchor, as github-slugger computes it: lower case, every character dropped that is not a letter,
 * a mark, a decimal or letter number, a connector (`_`), a hyphen or a space, then each space a hyphen.
 */
function githubSlug(text: string): string {
	return text.toLowerCase().replace(/[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The text GitHub renders for inline tokens: code without backticks, links by their text, HTML tags left out. */
function plainText(tokens: Token[] | undefined): string {
	return (tokens ?? [])
		.map((token) => {
			if (token.type === 'html') return '';
			if ('tokens' in token && token.tokens) return plainText(token.tokens);
			return 'text' in token ? String(token.text) : '';
		})
		.join('');
}

const HTML_ATTRIBUTE = /\b(href|src|id|name)\s*=\s*["']([^"']*)["']/gi;

interface Document {
	links: string[];
	anchors: Set<string>;
}

function readDocument(source: string): Document {
	const tokens = marked.lexer(source);
	const links: string[] = [];
	const anchors = new Set<string>();
	const seen = new Map<string, number>();
	marked.walkTokens(tokens, (token) => {
		if (token.type === 'heading') {
			// Repeated headings get -1, -2... as on GitHub.
			const base = githubSlug(plainText((token as Tokens.Heading).tokens));
			let slug = base;
			while (seen.has(slug)) {
				const count = seen.get(base)! + 1;
				seen.set(base, count);
				slug = `${base}-${count}`;
			}
			seen.set(slug, 0);
			anchors.add(slug);
		} else if (token.type === 'link' || token.type === 'image') {
			links.push((token as Tokens.Link | Tokens.Image).href);
		} else if (token.type === 'html') {
			for (const [, attribute, value] of (token as Tokens.HTML).text.matchAll(HTML_ATTRIBUTE)) {
				if (/^(href|src)$/i.test(attribute!)) links.push(value!);
				else anchors.add(value!);
			}
		}
	});
	return { links, anchors };
}

const documents = new Map<string, Document>();
function documentAt(file: string): Document {
	let document = documents.get(file);
	if (!document) {
		document = readDocument(readFileSync(file, 'utf8'));
		documents.set(file, document);
	}
	return document;
}

/** What is wrong with one link of `file` (a path from the root), or undefined when it resolves. */
function brokenLink(file: string, href: string): string | undefined {
	if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) return undefined; // external: http(s), mailto...
	const hash = href.indexOf('#');
	const target = decodeURIComponent(hash === -1 ? href : href.slice(0, hash)).replace(/\?.*$/, '');
	const anchor = hash === -1 ? undefined : decodeURIComponent(href.slice(hash + 1));
	const absolute = target === '' ? path.join(ROOT, file) : target.startsWith('/') ? path.join(ROOT, target) : path.resolve(ROOT, path.dirname(file), target);
	if (!absolute.startsWith(ROOT + path.sep)) return `${href}: outside the repository`;
	if (!existsSync(absolute)) return `${href}: no such file`;
	if (anchor === undefined || anchor === '' || !absolute.endsWith('.md') || statSync(absolute).isDirectory()) return undefined;
	if (!documentAt(absolute).anchors.has(anchor)) return `${href}: no heading with the anchor #${anchor}`;
	return undefined;
}

describe('githubSlug', () => {
	it.each([
		['Behaviour the interface leaves open (decisions)', 'behaviour-the-interface-leaves-open-decisions'],
		["The editors' workspace (app module)", 'the-editors-workspace-app-module'],
		['4.4 Start on-demand generation (test mode)', '44-start-on-demand-generation-test-mode'],
		['npm test & the rest', 'npm-test--the-rest'],
		['Roles, permissions and the Directus licence', 'roles-permissions-and-the-directus-licence'],
		['snake_case Ünïcödé 東京', 'snake_case-ünïcödé-東京'],
	])('%j -> %j', (heading, slug) => {
		expect(githubSlug(heading)).toBe(slug);
	});

	it('numbers repeated headings as GitHub does, and reads headings as rendered text', () => {
		const { anchors } = readDocument('# Notes\n\n## Notes\n\n## Notes\n\n## The `npm test` [command](x.md) <b>now</b>\n\n```\n# not a heading\n```\n');
		expect([...anchors]).toEqual(['notes', 'notes-1', 'notes-2', 'the-npm-test-command-now']);
	});
});

describe('brokenLink (the control cases)', () => {
	it('refuses a missing file, a missing anchor, and a path out of the repository; passes external links', () => {
		expect(brokenLink('README.md', 'docs/no-such-page.md')).toMatch(/no such file/);
		expect(brokenLink('README.md', '#no-such-heading')).toMatch(/no heading/);
		expect(brokenLink('README.md', 'docs/configuration.md#no-such-heading')).toMatch(/no heading/);
		expect(brokenLink('docs/api.md', '../../elsewhere.md')).toMatch(/outside/);
		expect(brokenLink('README.md', 'https://example.com/missing.md#nowhere')).toBeUndefined();
		expect(brokenLink('README.md', 'docs/configuration.md')).toBeUndefined();
	});
});

describe('Markdown links', () => {
	const files = markdownFiles();

	it('finds the project documentation', () => {
		expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/configuration.md', 'docs/api.md', 'docs/deployment.md']));
	});

	it.each(files)('%s: every relative link and anchor resolves', (file) => {
		const { links } = documentAt(path.join(ROOT, file));
		expect(links.map((href) => brokenLink(file, href)).filter(Boolean)).toEqual([]);
	});
});
