import { describe, expect, it } from 'vitest';
import { conformToSchema, findSubSchema, generateFromSchema, strictModeProblems, validateJsonSchema } from './json-schema.ts';
import type { JsonSchema } from './json-schema.ts';

const NESTED: JsonSchema = {
	type: 'object',
	additionalProperties: false,
	required: ['name', 'count', 'ratio', 'kind', 'tags', 'owner', 'items', 'note', 'choice'],
	properties: {
		name: { type: 'string', minLength: 3, maxLength: 12 },
		count: { type: 'integer', minimum: 5, maximum: 9 },
		ratio: { type: 'number', exclusiveMinimum: 0, maximum: 0.5 },
		kind: { type: 'string', enum: ['alpha', 'beta'] },
		tags: { type: 'array', items: { type: 'string' }, minItems: 3, maxItems: 4 },
		owner: { $ref: '#/$defs/person' },
		items: { type: 'array', items: { $ref: '#/$defs/person' }, minItems: 1 },
		note: { type: ['string', 'null'] },
		choice: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/person' }] },
	},
	$defs: {
		person: {
			type: 'object',
			additionalProperties: false,
			required: ['email', 'age', 'slug'],
			properties: {
				email: { type: 'string', format: 'email' },
				age: { type: 'integer', minimum: 18 },
				slug: { type: 'string', pattern: '^/[a-z0-9/-]+$' },
			},
		},
	},
};

describe('validateJsonSchema', () => {
	it('reports each problem with its JSON path', () => {
		const errors = validateJsonSchema(NESTED, { name: 'ab', count: 3.5, kind: 'gamma', tags: [], extra: 1 });
		expect(errors).toEqual(
			expect.arrayContaining([
				'$: missing required property owner',
				'$: unexpected property extra',
				'$.name: length 2 is below minLength 3',
				'$.count: expected integer, got 3.5',
				'$.kind: "gamma" is not one of ["alpha","beta"]',
				'$.tags: 0 items, minItems is 3',
			]),
		);
	});

	it('follows $ref into $defs and checks patterns there', () => {
		const errors = validateJsonSchema(NESTED, {
			name: 'abc',
			count: 5,
			ratio: 0.1,
			kind: 'alpha',
			tags: ['a', 'b', 'c'],
			owner: { email: 'x@y.z', age: 17, slug: 'No-Slash' },
			items: [],
			note: null,
			choice: null,
		});
		expect(errors).toEqual([
			'$.owner.age: 17 < minimum 18',
			'$.owner.slug: "No-Slash" does not match pattern ^/[a-z0-9/-]+$',
			'$.items: 0 items, minItems is 1',
		]);
	});

	it('accepts null for nullable and type-union schemas', () => {
		expect(validateJsonSchema({ type: 'string', nullable: true }, null)).toEqual([]);
		expect(validateJsonSchema({ type: ['integer', 'null'] }, null)).toEqual([]);
		expect(validateJsonSchema({ type: 'string' }, null)).toHaveLength(1);
	});

	it('requires exactly one passing branch for oneOf', () => {
		const schema = { oneOf: [{ type: 'number' }, { type: 'integer' }] };
		expect(validateJsonSchema(schema, 1.5)).toEqual([]);
		expect(validateJsonSchema(schema, 2)).toEqual(['$: matches 2 oneOf branches, expected one']);
	});
});

describe('generateFromSchema', () => {
	it('produces a value that validates against a schema with refs, enums, bounds and unions', () => {
		const value = generateFromSchema(NESTED) as Record<string, unknown>;
		expect(validateJsonSchema(NESTED, value)).toEqual([]);
		expect(value.kind).toBe('alpha');
		expect(value.count).toBe(5);
		expect(value.tags).toHaveLength(3);
		expect(value.choice).not.toBeNull();
	});

	it('stops a recursive schema through its nullable branch', () => {
		const tree: JsonSchema = {
			$ref: '#/$defs/node',
			$defs: {
				node: {
					type: 'object',
					additionalProperties: false,
					required: ['label', 'child'],
					properties: { label: { type: 'string' }, child: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } },
				},
			},
		};
		const value = generateFromSchema(tree);
		expect(validateJsonSchema(tree, value)).toEqual([]);
		expect(JSON.stringify(value)).toContain('null');
	});
});

describe('conformToSchema', () => {
	it('keeps what fits, fills what is missing, drops what is forbidden and clamps what is out of range', () => {
		const draft = { name: 'A very long name indeed', count: 42, ratio: 3, kind: 'beta', tags: ['x'], owner: { email: 'a@b.c', age: 30, slug: '/me' }, junk: true };
		const value = conformToSchema(NESTED, draft) as Record<string, unknown>;
		expect(validateJsonSchema(NESTED, value)).toEqual([]);
		expect(value).toMatchObject({ name: 'A very long ', count: 9, ratio: 0.5, kind: 'beta', owner: { email: 'a@b.c', age: 30, slug: '/me' } });
		expect((value.tags as string[])[0]).toBe('x');
		expect(value).not.toHaveProperty('junk');
	});

	it('keeps a draft string that breaks its pattern, so deliberate faults survive', () => {
		const schema = { type: 'string', pattern: '^/[a-z]+/[a-z]+$' };
		expect(conformToSchema(schema, '/Upper/Case')).toBe('/Upper/Case');
		expect(conformToSchema(schema, 42)).toBe('/example/page');
	});
});

describe('strictModeProblems', () => {
	it('flags objects without additionalProperties false or with properties missing from required', () => {
		const problems = strictModeProblems({
			type: 'object',
			additionalProperties: false,
			required: ['a'],
			properties: { a: { type: 'object', properties: { b: { type: 'string' } } }, c: { type: 'string' } },
		});
		expect(problems).toEqual([
			'$: required must list every property, missing c',
			'$.a: additionalProperties must be false',
			'$.a: required must list every property, missing b',
		]);
		expect(strictModeProblems(NESTED)).toEqual([]);
	});
});

describe('findSubSchema', () => {
	it('walks properties and array items through refs', () => {
		expect(findSubSchema(NESTED, ['items', '*', 'age'])).toEqual({ type: 'integer', minimum: 18 });
		expect(findSubSchema(NESTED, ['nope'])).toBeNull();
	});
});
