/**
 * A small JSON-schema toolkit for the fake provider: validate a value, generate a value from a schema, and bend a
 * draft value into one that fits. It covers what strict structured outputs use (types and type unions, nullable,
 * enum, const, properties/required/additionalProperties, items, min/max items, string lengths and patterns, numeric
 * bounds, anyOf/oneOf/allOf, `$ref` into `$defs`/`definitions`), not the whole JSON-schema standard.
 */

export type JsonSchema = boolean | { [keyword: string]: unknown };

type SchemaObject = { [keyword: string]: unknown };

const MAX_DEPTH = 12;

function isPlainObject(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asObject(schema: JsonSchema | undefined): SchemaObject {
	if (schema === undefined || schema === true) return {};
	if (schema === false) return { not: {} };
	return schema;
}

/** Resolves a local `$ref` (`#`, `#/$defs/x`, `#/definitions/x`, any JSON pointer into the root). */
function resolveRef(ref: string, root: JsonSchema): JsonSchema {
	if (!ref.startsWith('#')) throw new TypeError(`Only local $ref values are supported, got ${JSON.stringify(ref)}`);
	const pointer = ref.slice(1);
	if (pointer === '' || pointer === '/') return root;
	let node: unknown = root;
	for (const raw of pointer.slice(1).split('/')) {
		const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
		if (!isPlainObject(node) && !Array.isArray(node)) {
			throw new TypeError(`$ref ${JSON.stringify(ref)} does not resolve`);
		}
		node = (node as Record<string, unknown>)[key];
	}
	if (node === undefined) throw new TypeError(`$ref ${JSON.stringify(ref)} does not resolve`);
	return node as JsonSchema;
}

/** Follows `$ref` chains until a schema without one. */
function deref(schema: JsonSchema | undefined, root: JsonSchema): SchemaObject {
	let current = asObject(schema);
	for (let hops = 0; typeof current.$ref === 'string'; hops++) {
		if (hops > 32) throw new TypeError(`$ref cycle at ${JSON.stringify(current.$ref)}`);
		current = asObject(resolveRef(current.$ref, root));
	}
	return current;
}

function typesOf(schema: SchemaObject): string[] | null {
	const types = typeof schema.type === 'string' ? [schema.type] : Array.isArray(schema.type) ? (schema.type as string[]) : null;
	if (types && schema.nullable === true && !types.includes('null')) return [...types, 'null'];
	return types;
}

function typeMatches(type: string, value: unknown): boolean {
	switch (type) {
		case 'null':
			return value === null;
		case 'boolean':
			return typeof value === 'boolean';
		case 'string':
			return typeof value === 'string';
		case 'integer':
			return typeof value === 'number' && Number.isInteger(value);
		case 'number':
			return typeof value === 'number' && Number.isFinite(value);
		case 'array':
			return Array.isArray(value);
		case 'object':
			return isPlainObject(value);
		default:
			return false;
	}
}

function codePoints(value: string): number {
	let count = 0;
	for (const _ of value) count++;
	return count;
}

function deepEqual(a: unknown, b: unknown): boolean {
	if (a === b) return true;
	if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
	if (isPlainObject(a) && isPlainObject(b)) {
		const keys = Object.keys(a);
		return keys.length === Object.keys(b).length && keys.every((key) => deepEqual(a[key], b[key]));
	}
	return false;
}

function describe(value: unknown): string {
	const text = JSON.stringify(value);
	if (text === undefined) return String(value);
	return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * Validates `value` against `schema` and returns the list of problems, each prefixed with its JSON path
 * (`$.pages[2].route`); an empty list means the value is valid.
 */
export function validateJsonSchema(schema: JsonSchema, value: unknown, root: JsonSchema = schema): string[] {
	const errors: string[] = [];
	check(schema, value, root, '$', errors);
	return errors;
}

function check(input: JsonSchema, value: unknown, root: JsonSchema, path: string, errors: string[]): void {
	if (input === true) return;
	if (input === false) {
		errors.push(`${path}: no value is allowed here`);
		return;
	}
	const schema = deref(input, root);
	const types = typesOf(schema);
	if (types && !types.some((type) => typeMatches(type, value))) {
		errors.push(`${path}: expected ${types.join(' | ')}, got ${describe(value)}`);
		return;
	}
	if (schema.nullable === true && value === null) return;
	if ('const' in schema && !deepEqual(schema.const, value)) errors.push(`${path}: must equal ${describe(schema.const)}`);
	if (Array.isArray(schema.enum) && !schema.enum.some((option) => deepEqual(option, value))) {
		errors.push(`${path}: ${describe(value)} is not one of ${describe(schema.enum)}`);
	}
	if (Array.isArray(schema.allOf)) for (const sub of schema.allOf as JsonSchema[]) check(sub, value, root, path, errors);
	for (const keyword of ['anyOf', 'oneOf'] as const) {
		const branches = schema[keyword];
		if (!Array.isArray(branches)) continue;
		const passing = (branches as JsonSchema[]).filter((sub) => validateJsonSchema(sub, value, root).length === 0).length;
		if (passing === 0) errors.push(`${path}: matches none of the ${keyword} branches`);
		else if (keyword === 'oneOf' && passing > 1) errors.push(`${path}: matches ${passing} oneOf branches, expected one`);
	}
	if (typeof value === 'string') checkString(schema, value, path, errors);
	else if (typeof value === 'number') checkNumber(schema, value, path, errors);
	else if (Array.isArray(value)) checkArray(schema, value, root, path, errors);
	else if (isPlainObject(value)) checkObject(schema, value, root, path, errors);
}

function checkString(schema: SchemaObject, value: string, path: string, errors: string[]): void {
	const length = codePoints(value);
	if (typeof schema.minLength === 'number' && length < schema.minLength) {
		errors.push(`${path}: length ${length} is below minLength ${schema.minLength}`);
	}
	if (typeof schema.maxLength === 'number' && length > schema.maxLength) {
		errors.push(`${path}: length ${length} is above maxLength ${schema.maxLength}`);
	}
	if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) {
		errors.push(`${path}: ${describe(value)} does not match pattern ${schema.pattern}`);
	}
}

function checkNumber(schema: SchemaObject, value: number, path: string, errors: string[]): void {
	if (typeof schema.minimum === 'number' && value < schema.minimum) errors.push(`${path}: ${value} < minimum ${schema.minimum}`);
	if (typeof schema.maximum === 'number' && value > schema.maximum) errors.push(`${path}: ${value} > maximum ${schema.maximum}`);
	if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) {
		errors.push(`${path}: ${value} <= exclusiveMinimum ${schema.exclusiveMinimum}`);
	}
	if (typeof schema.exclusiveMaximum === 'number' && value >= schema.exclusiveMaximum) {
		errors.push(`${path}: ${value} >= exclusiveMaximum ${schema.exclusiveMaximum}`);
	}
	if (typeof schema.multipleOf === 'number' && Math.abs(value / schema.multipleOf - Math.round(value / schema.multipleOf)) > 1e-9) {
		errors.push(`${path}: ${value} is not a multiple of ${schema.multipleOf}`);
	}
}

function checkArray(schema: SchemaObject, value: unknown[], root: JsonSchema, path: string, errors: string[]): void {
	if (typeof schema.minItems === 'number' && value.length < schema.minItems) {
		errors.push(`${path}: ${value.length} items, minItems is ${schema.minItems}`);
	}
	if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) {
		errors.push(`${path}: ${value.length} items, maxItems is ${schema.maxItems}`);
	}
	if (schema.items !== undefined && !Array.isArray(schema.items)) {
		value.forEach((item, i) => check(schema.items as JsonSchema, item, root, `${path}[${i}]`, errors));
	}
	if (schema.uniqueItems === true) {
		const seen = value.map((item) => JSON.stringify(item));
		if (new Set(seen).size !== seen.length) errors.push(`${path}: items are not unique`);
	}
}

function checkObject(schema: SchemaObject, value: Record<string, unknown>, root: JsonSchema, path: string, errors: string[]): void {
	const properties = isPlainObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {};
	if (Array.isArray(schema.required)) {
		for (const key of schema.required as string[]) if (!(key in value)) errors.push(`${path}: missing required property ${key}`);
	}
	for (const [key, item] of Object.entries(value)) {
		const sub = properties[key];
		if (sub !== undefined) check(sub, item, root, `${path}.${key}`, errors);
		else if (schema.additionalProperties === false) errors.push(`${path}: unexpected property ${key}`);
		else if (schema.additionalProperties !== undefined && schema.additionalProperties !== true) {
			check(schema.additionalProperties as JsonSchema, item, root, `${path}.${key}`, errors);
		}
	}
}

const PATTERN_CANDIDATES = ['example', '/example', '/example/page', 'example-1', 'en-US', 'en', 'EXAMPLE', 'a', '1', 'a1', ''];

/** Fits a string to the length bounds and, when asked and where it can, to the pattern of its schema. */
function fitString(schema: SchemaObject, draft: string, matchPattern: boolean): string {
	let text = draft;
	const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
	const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
	if (matchPattern && typeof schema.pattern === 'string') {
		const pattern = new RegExp(schema.pattern, 'u');
		if (!pattern.test(text)) text = PATTERN_CANDIDATES.find((candidate) => pattern.test(candidate)) ?? text;
	}
	if (codePoints(text) > max) text = Array.from(text).slice(0, max).join('');
	while (codePoints(text) < min) text += text.length === 0 ? 'x' : ` ${text}`.slice(0, min - codePoints(text));
	return text;
}

function fitNumber(schema: SchemaObject, draft: number, integer: boolean): number {
	let value = integer ? Math.round(draft) : draft;
	let low = typeof schema.minimum === 'number' ? schema.minimum : -Infinity;
	let high = typeof schema.maximum === 'number' ? schema.maximum : Infinity;
	const step = integer ? 1 : 0.01;
	if (typeof schema.exclusiveMinimum === 'number') low = Math.max(low, schema.exclusiveMinimum + step);
	if (typeof schema.exclusiveMaximum === 'number') high = Math.min(high, schema.exclusiveMaximum - step);
	if (integer) {
		low = Math.ceil(low);
		high = Math.floor(high);
	}
	value = Math.min(Math.max(value, low), high);
	if (typeof schema.multipleOf === 'number') value = Math.ceil(value / schema.multipleOf) * schema.multipleOf;
	return value;
}

function generateString(schema: SchemaObject, hint: string): string {
	switch (schema.format) {
		case 'date-time':
			return new Date(0).toISOString();
		case 'date':
			return '1970-01-01';
		case 'uri':
		case 'url':
			return 'https://example.com/';
		case 'email':
			return 'someone@example.com';
		case 'uuid':
			return '00000000-0000-4000-8000-000000000000';
		default:
			return fitString(schema, hint ? `Example ${hint.replace(/[_-]+/g, ' ')}` : 'Example text', true);
	}
}

function mergeAllOf(schema: SchemaObject, root: JsonSchema): SchemaObject {
	const merged: SchemaObject = { ...schema };
	delete merged.allOf;
	const properties: Record<string, JsonSchema> = { ...(merged.properties as Record<string, JsonSchema> | undefined) };
	const required = new Set<string>(Array.isArray(merged.required) ? (merged.required as string[]) : []);
	for (const sub of schema.allOf as JsonSchema[]) {
		const part = deref(sub, root);
		Object.assign(properties, part.properties as Record<string, JsonSchema> | undefined);
		if (Array.isArray(part.required)) for (const key of part.required as string[]) required.add(key);
		for (const [key, item] of Object.entries(part)) if (!(key in merged) && key !== 'properties' && key !== 'required') merged[key] = item;
	}
	merged.properties = properties;
	merged.required = [...required];
	return merged;
}

/** Branches of an anyOf/oneOf, with the non-null ones first so generated values carry content. */
function branchesOf(schema: SchemaObject): JsonSchema[] | null {
	const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
	if (!Array.isArray(branches)) return null;
	const isNull = (branch: JsonSchema): boolean => typeof branch === 'object' && branch.type === 'null';
	return [...branches.filter((b) => !isNull(b)), ...branches.filter(isNull)];
}

/** Produces a value that satisfies `schema`, with readable placeholder content; `hint` names the property. */
export function generateFromSchema(schema: JsonSchema, root: JsonSchema = schema, hint = '', depth = 0): unknown {
	let node = deref(schema, root);
	if (Array.isArray(node.allOf)) node = mergeAllOf(node, root);
	if ('const' in node) return node.const;
	if (Array.isArray(node.enum)) return node.enum.find((option) => option !== null) ?? node.enum[0];
	const branches = branchesOf(node);
	if (branches) {
		// Deep in a recursive schema, the null branch stops the recursion.
		const pick = depth >= MAX_DEPTH ? branches[branches.length - 1] : branches[0];
		return generateFromSchema(pick ?? {}, root, hint, depth + 1);
	}
	const types = typesOf(node);
	let type = types?.find((t) => t !== 'null') ?? types?.[0];
	if (type === undefined) type = node.properties ? 'object' : node.items ? 'array' : 'string';
	if (depth >= MAX_DEPTH && types?.includes('null')) return null;
	switch (type) {
		case 'null':
			return null;
		case 'boolean':
			return true;
		case 'integer':
			return fitNumber(node, 1, true);
		case 'number':
			return fitNumber(node, 1, false);
		case 'string':
			return generateString(node, hint);
		case 'array': {
			const min = typeof node.minItems === 'number' ? node.minItems : 0;
			const max = typeof node.maxItems === 'number' ? node.maxItems : Infinity;
			const count = depth >= MAX_DEPTH ? min : Math.min(Math.max(2, min), max);
			const itemSchema = (node.items as JsonSchema | undefined) ?? {};
			return Array.from({ length: count }, (_, i) => {
				const item = generateFromSchema(itemSchema, root, hint, depth + 1);
				return typeof item === 'string' && count > 1 && node.uniqueItems === true ? `${item} ${i + 1}` : item;
			});
		}
		default: {
			const properties = isPlainObject(node.properties) ? (node.properties as Record<string, JsonSchema>) : {};
			const out: Record<string, unknown> = {};
			for (const [key, sub] of Object.entries(properties)) out[key] = generateFromSchema(sub, root, key, depth + 1);
			return out;
		}
	}
}

/**
 * Bends `draft` into a value that satisfies `schema`: keeps what already fits, fills missing properties and items
 * with generated values, drops properties the schema forbids, clamps numbers, trims or pads strings, and maps
 * values outside an enum to its first option. A draft string that breaks a `pattern` is kept, so that deliberately
 * bad content (such as invalid plan routes) survives.
 */
export function conformToSchema(schema: JsonSchema, draft: unknown, root: JsonSchema = schema, hint = '', depth = 0): unknown {
	if (validateJsonSchema(schema, draft, root).length === 0) return draft;
	let node = deref(schema, root);
	if (Array.isArray(node.allOf)) node = mergeAllOf(node, root);
	if ('const' in node) return node.const;
	if (Array.isArray(node.enum)) {
		const found = node.enum.find((option) => deepEqual(option, draft));
		return found !== undefined ? found : generateFromSchema(node, root, hint, depth);
	}
	const branches = branchesOf(node);
	if (branches) {
		const fitting = branches.find((branch) => {
			const types = typesOf(deref(branch, root));
			return !types || types.some((type) => typeMatches(type, draft) || (type === 'integer' && typeof draft === 'number'));
		});
		return fitting ? conformToSchema(fitting, draft, root, hint, depth + 1) : generateFromSchema(node, root, hint, depth);
	}
	const types = typesOf(node);
	const matching = types ? types.find((type) => typeMatches(type, draft) || (type === 'integer' && typeof draft === 'number')) : undefined;
	if (types && matching === undefined) return generateFromSchema(node, root, hint, depth);
	if (typeof draft === 'string') return fitString(node, draft, false);
	if (typeof draft === 'number') return fitNumber(node, draft, matching === 'integer');
	if (Array.isArray(draft)) {
		const itemSchema = (node.items as JsonSchema | undefined) ?? {};
		const max = typeof node.maxItems === 'number' ? node.maxItems : Infinity;
		const min = typeof node.minItems === 'number' ? node.minItems : 0;
		const items = draft.slice(0, max).map((item) => conformToSchema(itemSchema, item, root, hint, depth + 1));
		while (items.length < min) items.push(generateFromSchema(itemSchema, root, hint, depth + 1));
		return items;
	}
	if (isPlainObject(draft)) {
		const properties = isPlainObject(node.properties) ? (node.properties as Record<string, JsonSchema>) : {};
		const out: Record<string, unknown> = {};
		for (const [key, sub] of Object.entries(properties)) {
			out[key] = key in draft ? conformToSchema(sub, draft[key], root, key, depth + 1) : generateFromSchema(sub, root, key, depth + 1);
		}
		if (node.additionalProperties !== false) {
			for (const [key, item] of Object.entries(draft)) if (!(key in out)) out[key] = item;
		}
		return out;
	}
	return generateFromSchema(node, root, hint, depth);
}

/**
 * The sub-schema found by walking `path` through `properties` (a `*` step walks into `items`), or null when the
 * schema has no such place. Lets responders read enums and bounds of the schema they answer.
 */
export function findSubSchema(schema: JsonSchema, path: string[], root: JsonSchema = schema): SchemaObject | null {
	let node: SchemaObject = deref(schema, root);
	for (const step of path) {
		const branches = branchesOf(node);
		if (branches) node = deref(branches[0] ?? {}, root);
		if (step === '*') {
			if (node.items === undefined || Array.isArray(node.items)) return null;
			node = deref(node.items as JsonSchema, root);
		} else {
			const properties = node.properties as Record<string, JsonSchema> | undefined;
			if (!properties || properties[step] === undefined) return null;
			node = deref(properties[step], root);
		}
	}
	return node;
}

/**
 * What structured outputs' strict mode would reject in `schema`: a root that is not an object, and objects that
 * do not set `additionalProperties: false` or do not list every property in `required`.
 */
export function strictModeProblems(schema: JsonSchema): string[] {
	const problems: string[] = [];
	const root = asObject(schema);
	if (root.type !== 'object' && typeof root.$ref !== 'string') problems.push('the root schema must be of type object');
	if (root.anyOf !== undefined) problems.push('the root schema must not be anyOf');
	const seen = new Set<unknown>();
	const walk = (node: unknown, path: string): void => {
		if (!isPlainObject(node) || seen.has(node)) return;
		seen.add(node);
		const types = typesOf(node);
		if (isPlainObject(node.properties) || types?.includes('object')) {
			const keys = isPlainObject(node.properties) ? Object.keys(node.properties) : [];
			if (node.additionalProperties !== false) problems.push(`${path}: additionalProperties must be false`);
			const required = Array.isArray(node.required) ? (node.required as string[]) : [];
			const missing = keys.filter((key) => !required.includes(key));
			if (missing.length > 0) problems.push(`${path}: required must list every property, missing ${missing.join(', ')}`);
		}
		if (isPlainObject(node.properties)) for (const [key, sub] of Object.entries(node.properties)) walk(sub, `${path}.${key}`);
		if (node.items !== undefined) walk(node.items, `${path}[]`);
		for (const keyword of ['anyOf', 'allOf', 'oneOf'] as const) {
			if (Array.isArray(node[keyword])) (node[keyword] as unknown[]).forEach((sub, i) => walk(sub, `${path}.${keyword}[${i}]`));
		}
		for (const keyword of ['$defs', 'definitions'] as const) {
			if (isPlainObject(node[keyword])) for (const [key, sub] of Object.entries(node[keyword])) walk(sub, `#/${keyword}/${key}`);
		}
	};
	walk(root, '$');
	return problems;
}
