import { z } from 'zod';

/** What the OpenAPI document says of a schema besides its rules: its component name, prose and examples. */
export interface ContractMeta {
	/** The name under `components/schemas`; a schema with an id is referenced, one without is written inline. */
	id?: string;
	description?: string;
	examples?: unknown[];
	default?: unknown;
	/** JSON Schema keywords for rules a refinement checks, which the generator cannot see (`minLength`, `const`...). */
	[keyword: string]: unknown;
}

/**
 * The registry the OpenAPI document is generated from. Kept apart from zod's global registry so that the document
 * holds this interface's schemas and nothing else.
 */
export const contractRegistry = z.registry<ContractMeta>();

/**
 * `schema` with its documentation. A copy is registered, so a shared schema (an identifier, a timestamp) can be
 * described per use; the copy of a named schema is written as a reference to it.
 */
export function doc<T extends z.ZodType>(schema: T, meta: ContractMeta): T {
	const copy = schema.clone() as T;
	contractRegistry.add(copy as z.ZodType, meta);
	return copy;
}

/** `schema` as a named component of the document (`components/schemas/<id>`). */
export function named<T extends z.ZodType>(id: string, schema: T, meta: Omit<ContractMeta, 'id'> = {}): T {
	contractRegistry.add(schema as z.ZodType, { id, ...meta });
	return schema;
}
