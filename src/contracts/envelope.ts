import { z } from 'zod';
import { doc, named } from './contract-registry.ts';
import { Timestamp } from './field-rules.ts';

/** A success body of the interface's envelope (section 2.4): `success: true`, the payload, `timestamp`. */
export function success<Shape extends z.ZodRawShape>(id: string, shape: Shape, description: string) {
	return named(id, z.strictObject({ success: z.literal(true), ...shape, timestamp: Timestamp }), { description });
}

/** A `message` of a success body. */
export const message = () => z.string();

/** Every error under /pseo-endpoints, written by the error handler (interface section 7). */
export const ErrorEnvelope = named(
	'ErrorEnvelope',
	z.strictObject({
		success: z.literal(false),
		error: doc(z.string().min(1), { description: 'A human-readable message.' }),
		code: doc(z.string().min(1), {
			description:
				'A machine-readable code: `PSEO_INVALID_PAYLOAD`, `PSEO_UNAUTHORIZED`, `PSEO_INSUFFICIENT_TOKENS`, `PSEO_FORBIDDEN`, `PSEO_NOT_FOUND`, `PSEO_CONFLICT`, `PSEO_PROVIDER_UNAVAILABLE`, `INTERNAL_SERVER_ERROR`, or the code of an error Directus raised itself (`INVALID_CREDENTIALS`, `INVALID_TOKEN`, `TOKEN_EXPIRED`, `INVALID_PAYLOAD`, `FORBIDDEN`, `SERVICE_UNAVAILABLE`...).',
			examples: ['PSEO_NOT_FOUND'],
		}),
		timestamp: Timestamp,
	}),
	{
		description:
			'Every error under /pseo-endpoints, Directus\'s own included (an invalid token, malformed JSON, an unknown path), has this shape (interface section 7).',
	},
);
