import type { z } from 'zod';

/** One request as the document shows it: path and query values (as written in a URL) and a body. */
interface RequestExample {
	summary: string;
	params?: Record<string, string>;
	query?: Record<string, string>;
	body?: unknown;
}

/** A success answer of a route. */
interface SuccessResponse {
	description: string;
	/** A named schema (see `named`), written as a reference in the document. */
	schema: z.ZodType;
	/** The body's media type; `application/json` unless said. */
	mediaType?: string;
}

/** An error status a route can answer, alone or with what it means on this route. */
export type ErrorStatus = number | [status: number, description: string];

type Part = z.ZodType | undefined;

/**
 * Everything the interface says of one route, declared once: the route validates its request with it
 * (`parseRequest`) and the OpenAPI document is generated from it (`buildOpenApi`).
 */
export interface RouteContract<Params extends Part = Part, Query extends Part = Part, Body extends Part = Part> {
	method: 'get' | 'post' | 'put' | 'delete';
	/** The path relative to /pseo-endpoints, with OpenAPI's `{name}` for a path parameter. */
	path: string;
	operationId: string;
	tag: string;
	summary: string;
	description?: string;
	/** True for the routes that need no Bearer token (the health check and the document). */
	open?: boolean;
	/**
	 * True for a POST that creates or charges: it takes an `Idempotency-Key` header (idempotency/), and may answer
	 * 409 (the key's first request still runs) and 422 (the key was used with another body).
	 */
	idempotent?: boolean;
	/** An object schema of the path parameters, each a string as Express gives it. */
	params?: Params;
	/** An object schema of the query parameters, each a string (or an array, when repeated) as Express gives it. */
	query?: Query;
	/** The JSON body: a named schema (see `named`). */
	body?: Body;
	/** True when the body may be left out. */
	bodyOptional?: boolean;
	/**
	 * Requests that succeed, by name; the document shows each under its name, on the body and on every parameter,
	 * and test/openapi-examples.test.ts sends each one to a running instance.
	 */
	examples?: Record<string, RequestExample>;
	responses: Record<number, SuccessResponse>;
	errors: ErrorStatus[];
}

/** Declares a route's contract, keeping the types of its parts for `parseRequest`. */
export function defineRoute<Params extends Part = undefined, Query extends Part = undefined, Body extends Part = undefined>(
	contract: RouteContract<Params, Query, Body>,
): RouteContract<Params, Query, Body> {
	return contract;
}

/** The Express form of a contract's path: `/generations/{id}` is `/generations/:id`. */
export const expressPath = (contract: RouteContract): string => contract.path.replace(/\{(\w+)\}/g, ':$1');
