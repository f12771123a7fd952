/*
 * The AI providers a website may name, as Settings → AI lists them. Import-free: the app's website form uses the
 * same list.
 */

export const PROVIDER_KINDS = ['openai', 'anthropic', 'google', 'openai_compatible'] as const;

export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** How each provider is named to people. */
export const PROVIDER_NAMES: Readonly<Record<ProviderKind, string>> = {
	openai: 'OpenAI',
	anthropic: 'Anthropic',
	google: 'Google',
	openai_compatible: 'OpenAI-compatible server',
};

/**
 * The model a provider runs when neither the website nor `PSEO_MODEL` names one: the smallest current model of each
 * vendor that Directus 12 allows by default in Settings → AI (`gpt-5.4-mini`, `claude-haiku-4-5`,
 * `gemini-2.5-flash`). An OpenAI-compatible server has no such default: its first model in Settings → AI runs.
 */
export const DEFAULT_MODELS: Readonly<Record<Exclude<ProviderKind, 'openai_compatible'>, string>> = {
	openai: 'gpt-5.4-mini',
	anthropic: 'claude-haiku-4-5',
	google: 'gemini-2.5-flash',
};

export function isProviderKind(value: unknown): value is ProviderKind {
	return typeof value === 'string' && (PROVIDER_KINDS as readonly string[]).includes(value);
}
