import { describe, expect, it } from 'vitest';
import { checkPage, verdict } from './quality-gate.ts';
import type { QualityIssue } from './page-checks.ts';

const fail: QualityIssue = { check: 'words', severity: 'fail', detail: 'x' };
const warn: QualityIssue = { check: 'meta_title', severity: 'warn', detail: 'y' };

describe('verdict', () => {
	it('passes a page without issues with 100', () => {
		expect(verdict([])).toEqual({ status: 'pass', score: 100 });
	});

	it('takes 10 per warning and 30 per failure, never below 0', () => {
		expect(verdict([warn, warn])).toEqual({ status: 'warn', score: 80 });
		expect(verdict([fail, warn])).toEqual({ status: 'fail', score: 60 });
		expect(verdict([fail, fail, fail, fail])).toEqual({ status: 'fail', score: 0 });
	});
});

describe('checkPage', () => {
	it('runs every check but the near-duplicate one, with the settings given', () => {
		const issues = checkPage(
			{ title: 'Roofs', meta_title: 'Roofs', meta_description: 'Short.', h1: '', body: '# Roofs\n\nA thin page.', faq: [] },
			{ route: '/roofs', primaryKeyword: 'roof repair', planRoutes: new Set(['/roofs', '/gutters']) },
			{ minWords: 300, maxSimilarity: 0.8 },
		);
		expect(issues.map((found) => found.check).sort()).toEqual(['h1', 'h1', 'internal_links', 'keyword', 'meta_description', 'meta_title', 'words']);
		expect(checkPage({ title: 'A', meta_title: null, meta_description: null, h1: 'A', body: 'a b c', faq: [] }, { route: '/a', planRoutes: new Set() }, { minWords: 0, maxSimilarity: 1 }).map((f) => f.check)).toEqual([
			'meta_title',
			'meta_description',
		]);
	});
});
