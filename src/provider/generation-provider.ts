import type { OpenAiProvider } from './types.ts';

export type { BatchInfo } from './types.ts';

/** What the engine needs of a provider: JSON completions, and the Batch API for bulk jobs. */
export type GenerationProvider = OpenAiProvider;

/** Batch states after which the provider will not change the results any more. */
export const FINAL_BATCH_STATES: ReadonlySet<string> = new Set(['completed', 'expired', 'cancelled', 'failed']);
