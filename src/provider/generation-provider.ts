import type { BatchProvider, JsonProvider } from './types.ts';

export type { BatchInfo } from './types.ts';

/** A provider that runs bulk jobs through its batch API, besides answering calls one at a time. */
export type BatchCapableProvider = JsonProvider & BatchProvider;

/**
 * What the engine needs of a provider: JSON completions, and, when the provider has one, a batch API for bulk
 * jobs. A bulk job whose provider has none is written page by page, as in concurrent mode.
 */
export type GenerationProvider = JsonProvider | BatchCapableProvider;

/** Why no provider can run a call: none is configured (`missing_api_key`), or Settings → AI does not allow its model. */
export interface ProviderUnavailable {
	unavailable: string;
	code?: 'model_not_allowed';
}

/** Whether bulk jobs of this provider go through its batch API. */
export function hasBatchApi(provider: GenerationProvider): provider is BatchCapableProvider {
	return typeof (provider as Partial<BatchProvider>).createBatch === 'function';
}

/** Batch states after which the provider will not change the results any more. */
export const FINAL_BATCH_STATES: ReadonlySet<string> = new Set(['completed', 'expired', 'cancelled', 'failed']);
