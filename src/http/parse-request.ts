import type { Request } from 'express';
import type { z } from 'zod';
import type { RouteContract } from '../contracts/route-contract.ts';
import { InvalidPayloadError } from '../errors/index.ts';

type Parsed<Part> = Part extends z.ZodType ? z.output<Part> : undefined;

/** A validated request: its path parameters, query and body as the route's contract gives them. */
export interface ParsedRequest<Params, Query, Body> {
	params: Parsed<Params>;
	query: Parsed<Query>;
	body: Parsed<Body>;
}

/**
 * Validates a request against its route's contract. The first problem is a 400 in the interface's envelope
 * ({@link InvalidPayloadError}), worded by the contract; a field the object does not know is reported before the
 * rules of the fields it does, since the rest of the request may only be a typo away from valid.
 */
export function parseRequest<Params extends z.ZodType | undefined, Query extends z.ZodType | undefined, Body extends z.ZodType | undefined>(
	contract: RouteContract<Params, Query, Body>,
	req: Request,
): ParsedRequest<Params, Query, Body> {
	return {
		params: parsePart(contract.params, req.params),
		query: parsePart(contract.query, req.query),
		body: parsePart(contract.body, req.body),
	} as ParsedRequest<Params, Query, Body>;
}

function parsePart(schema: z.ZodType | undefined, value: unknown): unknown {
	if (!schema) return undefined;
	const result = schema.safeParse(value);
	if (result.success) return result.data;
	const { issues } = result.error;
	const first = issues.find((issue) => issue.code === 'unrecognized_keys') ?? issues[0];
	throw new InvalidPayloadError({ reason: first?.message ?? 'The request is invalid.' });
}
