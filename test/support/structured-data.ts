import sdtt from 'structured-data-testing-tool';

/*
 * JSON-LD checked by a library validator (structured-data-testing-tool, offline: it reads the HTML it is given and
 * fetches nothing): it must find the schema.org types in the page's <script type="application/ld+json">, and every
 * property that Google's rich results ask of them must hold:
 * - Article: @type, a headline of at most 110 characters, description, inLanguage, an absolute url, dateModified as
 *   a date-time;
 * - FAQPage: every mainEntity a Question with a name and an acceptedAnswer Answer with text;
 * - BreadcrumbList: at least two ListItems, positions 1, 2, 3..., each with a name and an absolute item URL.
 */

/** What failed, test by test; empty when the JSON-LD validates. */
export async function structuredDataProblems(jsonLd: unknown, options: { faq: boolean }): Promise<string[]> {
	const html = `<!doctype html><html><head><script type="application/ld+json">${JSON.stringify(jsonLd).replace(/</g, '\\u003c')}</script></head><body></body></html>`;
	const is = (expression: string, description: string) => ({ test: `to_string(${expression})`, type: 'jsonld' as const, expect: 'true', description });
	const tests = [
		is(`Article[0]."@type" == 'Article'`, 'Article type'),
		is(`length(Article[0].headline) > \`0\` && length(Article[0].headline) <= \`110\``, 'Article headline, at most 110 characters'),
		is(`length(Article[0].description) > \`0\``, 'Article description'),
		is(`length(Article[0].inLanguage) > \`1\``, 'Article inLanguage'),
		is(`starts_with(Article[0].url, 'http')`, 'Article absolute url'),
		is(`length(Article[0].dateModified) >= \`20\` && contains(Article[0].dateModified, 'T')`, 'Article dateModified, a date-time'),
		is(`length(BreadcrumbList[0].itemListElement) >= \`2\``, 'BreadcrumbList of two items or more'),
		is(`length(BreadcrumbList[0].itemListElement[?"@type" == 'ListItem' && length(name) > \`0\` && starts_with(item, 'http')]) == length(BreadcrumbList[0].itemListElement)`, 'BreadcrumbList items named, with absolute URLs'),
		...(options.faq
			? [
					is(`length(FAQPage[0].mainEntity) > \`0\``, 'FAQPage questions'),
					is(
						`length(FAQPage[0].mainEntity[?"@type" == 'Question' && length(name) > \`0\` && acceptedAnswer."@type" == 'Answer' && length(acceptedAnswer.text) > \`0\`]) == length(FAQPage[0].mainEntity)`,
						'FAQPage: every Question named, with an accepted Answer',
					),
				]
			: []),
	];
	const schemas = ['jsonld:Article', 'jsonld:BreadcrumbList', ...(options.faq ? ['jsonld:FAQPage'] : [])];
	try {
		const result = await sdtt.structuredDataTest(html, { schemas, tests });
		return [...positionProblems(result.structuredData.jsonld)];
	} catch (error) {
		const res = (error as { res?: { failed: { description?: string; test: string; error?: { message: string } | null }[] } }).res;
		if (!res) throw error;
		return res.failed.map((failed) => `${failed.description ?? failed.test}: ${failed.error?.message ?? 'failed'}`);
	}
}

/** Positions from 1, one after the other, as the validator extracted them. */
function* positionProblems(jsonld: Record<string, unknown[]>): Generator<string> {
	const list = (jsonld['BreadcrumbList']?.[0] ?? {}) as { itemListElement?: { position?: unknown }[] };
	const positions = (list.itemListElement ?? []).map((item) => Number(item.position));
	if (positions.some((position, i) => position !== i + 1)) yield `BreadcrumbList positions are ${positions.join(', ')}, not 1, 2, 3...`;
}
