import { z } from 'zod';
import { doc } from './contract-registry.ts';
import { success } from './envelope.ts';
import { count } from './field-rules.ts';
import { defineRoute } from './route-contract.ts';

/** GET /balance. */
export const balanceRoute = defineRoute({
	method: 'get',
	path: '/balance',
	operationId: 'getBalance',
	tag: 'Tokens',
	summary: 'The caller\'s token balance and the rates',
	responses: {
		200: {
			description: 'The balance.',
			schema: success(
				'Balance',
				{
					data: z.strictObject({
						balance: doc(count(), { description: 'The caller\'s token balance.' }),
						rates: z.strictObject({
							token_per_page: doc(count(), { description: 'Charged per on-demand page.' }),
							token_per_batch_page: doc(count(), { description: 'Charged per bulk page.' }),
							token_per_main_json: doc(count(), { description: 'Charged per content plan.' }),
						}),
						daily_cap: doc(
							z
								.strictObject({
									limit: doc(count(), { description: 'The most tokens the caller may spend per UTC day (`PSEO_USER_DAILY_TOKEN_CAP`).' }),
									left: doc(count(), { description: 'What is left of it today: the limit less today\'s charges, refunds given back.' }),
								})
								.nullable(),
							{ description: 'The caller\'s daily spending cap, so that a client can tell before a trigger that it would pass it; null without a cap.' },
						),
					}),
				},
				'The caller\'s balance and the current rates.',
			),
		},
	},
	errors: [401],
});
