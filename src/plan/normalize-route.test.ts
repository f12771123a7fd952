import { describe, expect, it } from 'vitest';
import { isCanonicalRoute, normalizeRoute, routeKey, ROUTE_PATTERN } from './normalize-route.ts';

describe('normalizeRoute', () => {
	it.each([
		['/plumbing/leak-repair', '/plumbing/leak-repair'],
		['/Plumbing/Leak-Repair', '/plumbing/leak-repair'],
		['plumbing/leak-repair', '/plumbing/leak-repair'],
		['/plumbing/leak-repair/', '/plumbing/leak-repair'],
		['//plumbing///leak--repair//', '/plumbing/leak-repair'],
		['/about_us page', '/about-us-page'],
		['  /boiler   service  ', '/boiler-service'],
		['/--a--b--/', '/a-b'],
		["/beginner's-guide", '/beginners-guide'],
		['/a/./../b', '/a/b'],
		['\\windows\\style', '/windows/style'],
	])('turns %j into the slug route %j', (input, expected) => {
		expect(normalizeRoute(input)).toBe(expected);
	});

	it.each([
		['/İstanbul/kombi-servisi', '/istanbul/kombi-servisi'],
		['/ırmak-ığdır-şişli-çağrı', '/irmak-igdir-sisli-cagri'],
		['/Straße/Größe', '/strasse/grosse'],
		['/café-crème/Ærø', '/cafe-creme/aero'],
		['/Łódź/Đakovo', '/lodz/dakovo'],
		['/Москва/ремонт-квартир', '/moskva/remont-kvartir'],
		['/Αθήνα', '/athina'],
		['/ﬁle/Ａｂｃ', '/file/abc'],
	])('folds diacritics and transliterates %j to %j', (input, expected) => {
		expect(normalizeRoute(input)).toBe(expected);
	});

	it('folds decomposed (NFD) input the same as composed input', () => {
		expect(normalizeRoute('/s\u0327is\u0327li')).toBe('/sisli');
		expect(normalizeRoute('/şişli')).toBe('/sisli');
	});

	it.each([
		['https://example.com/Über-uns/?ref=x#top', '/uber-uns'],
		['HTTPS://EX.COM/A%20B', '/a-b'],
		['http://example.com:8080/blog/post-1?page=2', '/blog/post-1'],
		['/services?utm_source=x', '/services'],
		['/services#pricing', '/services'],
		['/%C3%BCber%20uns', '/uber-uns'],
		['/a%zz', '/a-zz'],
	])('strips the origin, query and fragment of %j', (input, expected) => {
		expect(normalizeRoute(input)).toBe(expected);
	});

	it.each([
		['/about.html', '/about'],
		['/blog/index.html', '/blog'],
		['/index.php', '/'],
		['/node.js', '/node-js'],
	])('drops page-file suffixes and index pages: %j → %j', (input, expected) => {
		expect(normalizeRoute(input)).toBe(expected);
	});

	it.each([['/'], ['///'], ['https://example.com'], ['https://example.com/']])('returns the root for %j', (input) => {
		expect(normalizeRoute(input)).toBe('/');
	});

	it.each([[''], ['   '], ['?q=1'], ['#top'], ['/日本語'], ['/---/'], ['http://[bad'], ['/!!!']])('returns null for %j', (input) => {
		expect(normalizeRoute(input)).toBeNull();
	});

	it('keeps usable segments when others vanish', () => {
		expect(normalizeRoute('/日本/tokyo-guide')).toBe('/tokyo-guide');
	});

	it('returns routes that match the stored route pattern and are stable under a second pass', () => {
		const inputs = ['/İstanbul/Kombi Servisi/', 'https://ex.com/A_B/c.d?x', '/Москва', '/x--y//z', '/a b/c_d/e.html'];
		for (const input of inputs) {
			const route = normalizeRoute(input);
			expect(route).not.toBeNull();
			expect(route).toMatch(ROUTE_PATTERN);
			expect(normalizeRoute(route!)).toBe(route);
		}
	});

	it('throws a TypeError naming a value that is not a string', () => {
		expect(() => normalizeRoute(42 as unknown as string)).toThrow(/received number 42/);
		expect(() => normalizeRoute(null as unknown as string)).toThrow(TypeError);
	});
});

describe('routeKey', () => {
	it('gives a sitemap URL and the matching plan route the same key', () => {
		expect(routeKey('https://www.example.com/Hizmetler/Kombi-Bakımı/')).toBe(routeKey('/hizmetler/kombi-bakimi'));
		expect(routeKey('https://example.com/blog/post.html?x=1')).toBe('/blog/post');
	});

	it('gives different paths different keys', () => {
		expect(routeKey('https://example.com/a/b')).not.toBe(routeKey('https://example.com/a-b'));
	});
});

describe('isCanonicalRoute', () => {
	it('accepts stored routes and refuses anything normalizeRoute would change', () => {
		expect(isCanonicalRoute('/')).toBe(true);
		expect(isCanonicalRoute('/a/b-c/d1')).toBe(true);
		expect(isCanonicalRoute('/a/')).toBe(false);
		expect(isCanonicalRoute('/A')).toBe(false);
		expect(isCanonicalRoute('a')).toBe(false);
		expect(isCanonicalRoute('/a--b')).toBe(false);
		expect(isCanonicalRoute('//a')).toBe(false);
	});
});
