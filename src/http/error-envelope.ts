import type { ErrorRequestHandler, NextFunction, Request, Response } from 'express';
import type { Logger } from '../shared/logger.ts';

/** The interface's error body (section 7), plus a machine-readable code. */
export interface ErrorEnvelope {
	success: false;
	error: string;
	code: string;
	timestamp: string;
}

interface DirectusLikeError {
	status: number;
	code: string;
	message: string;
}

function isDirectusLikeError(value: unknown): value is DirectusLikeError {
	if (typeof value !== 'object' || value === null) return false;
	const candidate = value as Record<string, unknown>;
	return (
		typeof candidate['status'] === 'number' &&
		typeof candidate['code'] === 'string' &&
		typeof candidate['message'] === 'string' &&
		candidate['status'] >= 400 &&
		candidate['status'] < 600
	);
}

/** Directus's codes for a bearer token it could not accept: unknown static token, bad JWT, expired JWT. */
const TOKEN_CODES = new Set(['INVALID_CREDENTIALS', 'INVALID_TOKEN', 'TOKEN_EXPIRED']);

/**
 * The status a Directus error answers with under `/pseo-endpoints`. Directus answers a JWT with a wrong
 * signature or a malformed body with `INVALID_TOKEN` as 403; the interface (sections 5.3 and 7) promises 401 for
 * every missing or invalid Bearer token, so every token failure is 401 here.
 */
export function statusFor(status: number, code: string): number {
	return TOKEN_CODES.has(code) ? 401 : status;
}

function envelope(status: number, code: string, message: string): ErrorEnvelope {
	// Directus says "Invalid user credentials." for a bad bearer token, which reads like a failed login.
	const error = status === 401 && TOKEN_CODES.has(code) ? 'Invalid or expired Bearer token.' : message;
	return { success: false, error, code, timestamp: new Date().toISOString() };
}

/** Maps any thrown value to a status and envelope; unknown errors become a 500 that leaks nothing. */
export function toErrorResponse(error: unknown): { status: number; body: ErrorEnvelope } {
	if (isDirectusLikeError(error)) {
		const status = statusFor(error.status, error.code);
		return { status, body: envelope(status, error.code, error.message) };
	}
	return { status: 500, body: envelope(500, 'INTERNAL_SERVER_ERROR', 'An unexpected error occurred.') };
}

/** The router's error handler: every error under the endpoint leaves in the interface's envelope. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
	return (error: unknown, req: Request, res: Response, next: NextFunction) => {
		if (res.headersSent) return next(error);
		const { status, body } = toErrorResponse(error);
		if (status >= 500) logger.error({ err: error, path: req.originalUrl }, 'pseo-endpoints request failed');
		res.status(status).json(body);
	};
}

/**
 * Rewrites Directus's own error bodies (`{ errors: [...] }`) into the envelope for responses under `prefix`.
 * Directus answers some requests before the endpoint's router runs: an invalid or expired token (401 from its
 * authenticate middleware), malformed JSON (400 from its body parser), an unknown sub-path (404). Installed
 * before those middlewares, this keeps the interface's promise that every error there has one shape.
 */
export function directusErrorEnvelope(prefix: string) {
	return (req: Request, res: Response, next: NextFunction) => {
		if (!isUnder(req.path, prefix)) return next();
		const json = res.json.bind(res);
		res.json = (body?: unknown) => {
			const rewritten = rewriteDirectusErrors(res.statusCode, body);
			if (isEnvelope(rewritten)) res.status(statusFor(res.statusCode, rewritten.code));
			return json(rewritten);
		};
		next();
	};
}

function isUnder(path: string, prefix: string): boolean {
	return path === prefix || path.startsWith(`${prefix}/`);
}

export function rewriteDirectusErrors(status: number, body: unknown): unknown {
	if (status < 400 || typeof body !== 'object' || body === null) return body;
	const errors = (body as { errors?: unknown }).errors;
	if (!Array.isArray(errors) || errors.length === 0) return body;
	const first = errors[0] as { message?: unknown; extensions?: { code?: unknown } };
	const message = typeof first.message === 'string' ? first.message : 'Request failed.';
	const code = typeof first.extensions?.code === 'string' ? first.extensions.code : 'ERROR';
	return envelope(statusFor(status, code), code, message);
}

function isEnvelope(body: unknown): body is ErrorEnvelope {
	return typeof body === 'object' && body !== null && (body as { success?: unknown }).success === false && typeof (body as { code?: unknown }).code === 'string';
}
