import { describe, expect, it } from 'vitest';
import { PAGE_SCHEMA, PAGE_SCHEMA_NAME } from './page-schema.ts';
import type { PageOutput } from './page-schema.ts';

type Schema = Record<string, unknown>;

/** Every object node of a schema, with its path. */
function objectNodes(schema: Schema, path = '$'): { path: string; node: Schema }[] {
	const found: { path: string; node: Schema }[] = [];
	if (schema.type === 'object') found.push({ path, node: schema });
	for (const [key, child] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) found.push(...objectNodes(child, `${path}.${key}`));
	if (schema.items) found.push(...objectNodes(schema.items as Schema, `${path}[]`));
	return found;
}

describe('page-schema', () => {
	it('is named pseo_page, a valid json_schema name', () => {
		expect(PAGE_SCHEMA_NAME).toBe('pseo_page');
		expect(PAGE_SCHEMA_NAME).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
	});

	it('meets strict mode: every object lists all its properties as required and forbids others', () => {
		const nodes = objectNodes(PAGE_SCHEMA);
		expect(nodes.map((n) => n.path)).toEqual(['$', '$.faq[]', '$.internal_links[]']);
		for (const { node } of nodes) {
			expect(node.additionalProperties).toBe(false);
			expect([...(node.required as string[])].sort()).toEqual(Object.keys(node.properties as object).sort());
		}
	});

	it('describes exactly the fields of PageOutput, with the root an object and not a union', () => {
		const example: PageOutput = {
			title: 't',
			meta_title: 'm',
			meta_description: 'd',
			h1: 'h',
			body_markdown: 'b',
			faq: [{ question: 'q', answer: 'a' }],
			internal_links: [{ anchor: 'a', route: '/r' }],
		};
		expect(PAGE_SCHEMA.type).toBe('object');
		expect(PAGE_SCHEMA.anyOf).toBeUndefined();
		expect(Object.keys(PAGE_SCHEMA.properties as object)).toEqual(Object.keys(example));
		const properties = PAGE_SCHEMA.properties as Record<string, Schema>;
		expect(Object.keys((properties.faq?.items as Schema).properties as object)).toEqual(Object.keys(example.faq[0]!));
		expect(Object.keys((properties.internal_links?.items as Schema).properties as object)).toEqual(Object.keys(example.internal_links[0]!));
	});

	it('avoids keywords some OpenAI-compatible servers reject in strict mode', () => {
		const text = JSON.stringify(PAGE_SCHEMA);
		for (const keyword of ['minLength', 'maxLength', 'pattern', 'format', 'allOf', 'oneOf', 'not', 'if']) expect(text).not.toContain(`"${keyword}"`);
	});

	it('cannot be changed by a caller', () => {
		expect(Object.isFrozen(PAGE_SCHEMA)).toBe(true);
		expect(Object.isFrozen((PAGE_SCHEMA.properties as Record<string, Schema>).faq)).toBe(true);
	});
});
