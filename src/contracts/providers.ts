import { z } from 'zod';
import { PROVIDER_KINDS } from '../shared/provider-kinds.ts';
import { doc, named } from './contract-registry.ts';
import { success } from './envelope.ts';
import { defineRoute } from './route-contract.ts';

const Provider = doc(z.enum(PROVIDER_KINDS), { examples: ['anthropic'] });

const CatalogEntry = named(
	'ProviderEntry',
	z.strictObject({
		provider: Provider,
		name: doc(z.string().min(1), { description: 'How the provider is named to people (an OpenAI-compatible server by its name in Settings → AI).', examples: ['Anthropic'] }),
		origin: doc(z.enum(['environment', 'directus-settings']).nullable(), {
			description: 'Where its key comes from: the environment, or Settings → AI; null when it is not configured, and a website that names it fails its jobs and plans (refunded).',
		}),
		models: doc(z.array(z.string()).nullable(), {
			description: 'The models a website may name for it (those Settings → AI allows); null when any may be named, as for a provider configured in the environment.',
		}),
		default_model: doc(z.string().min(1), { description: 'The model that runs when a website names none.', examples: ['claude-haiku-4-5'] }),
		bulk: doc(z.enum(['batch', 'page_by_page']), { description: 'How its bulk jobs run: through its batch API (half price at the provider), or page by page.' }),
		batch_queue: doc(
			z.strictObject({
				limit_tokens: doc(z.number().int().positive().nullable(), { description: 'The input tokens its batch queue holds, as far as this cluster knows; null when no limit is known (parts go as they come until the provider refuses one).' }),
				limit_source: doc(z.enum(['configured', 'learnt']).nullable(), {
					description: '`configured`: PSEO_BATCH_MAX_ENQUEUED_TOKENS; `learnt`: from the provider\'s latest refusal of a part (kept an hour); null when none is known.',
				}),
				enqueued_tokens: doc(z.number().int().nonnegative(), { description: 'Input tokens (estimated) that the running parts of every instance hold in it now.' }),
				jobs_waiting: doc(z.number().int().nonnegative(), { description: 'Bulk jobs whose next part waits for room in it.' }),
			}),
			{ description: 'Its batch queue: the limit on what running batches may hold, and what is in use. Parts of bulk jobs are sent as it has room.' },
		),
		rate_limit: doc(
			z.strictObject({
				requests_per_minute: doc(z.number().int().positive().nullable(), { description: 'PSEO_PROVIDER_RPM for it; null when unset: the pace is then read from the provider\'s rate-limit headers, or learnt from its 429s, per key and model.' }),
				tokens_per_minute: doc(z.number().int().positive().nullable(), { description: 'PSEO_PROVIDER_TPM for it (input tokens); null when unset.' }),
			}),
			{ description: 'The rate limit its online calls (pages, plans) are paced to, across every instance, where the environment sets one.' },
		),
	}),
	{ description: 'One AI provider a website may name. No key is ever part of it.' },
);

/** GET /providers. */
export const providersRoute = defineRoute({
	method: 'get',
	path: '/providers',
	operationId: 'listProviders',
	tag: 'Websites',
	summary: 'The AI providers and models a website may name',
	responses: {
		200: {
			description: 'The providers.',
			schema: success(
				'Providers',
				{
					data: z.strictObject({
						default: doc(z.strictObject({ provider: Provider, model: z.string().min(1) }), {
							description: 'The provider and model of websites that name none (PSEO_PROVIDER and PSEO_MODEL, or the first configured provider).',
						}),
						providers: z.array(CatalogEntry),
					}),
				},
				'What each provider can do here, read from the environment and Settings → AI.',
			),
		},
	},
	errors: [401],
});
