import { PROVIDER_KINDS, PROVIDER_NAMES, type ProviderKind } from '../../shared/provider-kinds.ts';

/*
 * The AI providers as GET /providers describes them (src/contracts/providers.ts), and what the module makes of them:
 * the items of the provider and model pickers, and the provider and model a website's jobs will run with. A
 * website names neither, one, or both; what it leaves blank is the catalog's default.
 */

/** One provider of GET /providers. */
export interface ProviderEntry {
	provider: ProviderKind;
	name: string;
	/** Where its key comes from; null when it is not configured, and a job of a website that names it fails (refunded). */
	origin: 'environment' | 'directus-settings' | null;
	/** The models a website may name; null when any may be named. */
	models: string[] | null;
	default_model: string;
	bulk: 'batch' | 'page_by_page';
}

export interface ProviderCatalog {
	default: { provider: ProviderKind; model: string };
	providers: ProviderEntry[];
}

/** A website's choice as its form edits it: blank for the default. */
export interface AiChoice {
	provider: string;
	model: string;
}

/** How a provider is named to people: by the catalog (an OpenAI-compatible server by its own name), else by its kind. */
export function providerName(kind: string, catalog: ProviderCatalog | null): string {
	return catalog?.providers.find((entry) => entry.provider === kind)?.name ?? PROVIDER_NAMES[kind as ProviderKind] ?? kind;
}

/** The catalog's entry of the provider a choice runs with: the one named, or the default's. */
export function entryOf(catalog: ProviderCatalog | null, provider: string): ProviderEntry | null {
	if (!catalog) return null;
	const kind = provider || catalog.default.provider;
	return catalog.providers.find((entry) => entry.provider === kind) ?? null;
}

/** The provider picker: blank for the default, named with what it runs; a provider without a key says so. */
export function providerItems(catalog: ProviderCatalog | null): { text: string; value: string }[] {
	const standard = catalog ? `Default (${providerName(catalog.default.provider, catalog)} · ${catalog.default.model})` : 'Default';
	const kinds = catalog ? catalog.providers : PROVIDER_KINDS.map((provider) => ({ provider, name: PROVIDER_NAMES[provider], origin: 'environment' as const }));
	return [{ text: standard, value: '' }, ...kinds.map((entry) => ({ text: entry.origin === null ? `${entry.name} (not configured)` : entry.name, value: entry.provider }))];
}

/**
 * The model picker's items when the provider lists its models, blank for its default; null when any model may be
 * named (a text field then). A model the website names that the list no longer allows stays shown, marked, so the
 * picker never hides what is saved.
 */
export function modelItems(entry: ProviderEntry | null, current: string): { text: string; value: string }[] | null {
	if (!entry || entry.models === null) return null;
	const items = [{ text: `Default (${entry.default_model})`, value: '' }, ...entry.models.map((model) => ({ text: model, value: model }))];
	const named = current.trim();
	return named && !entry.models.includes(named) ? [...items, { text: `${named} (not allowed)`, value: named }] : items;
}

/** What a website's jobs run with, whether the website chose it, and what stops them before they start. */
export interface AiRun {
	name: string;
	model: string;
	/** True when the website names the provider or the model itself. */
	chosen: boolean;
	/** True when the website names no provider, so the default runs. */
	defaultProvider: boolean;
	configured: boolean;
	/** The models allowed; null when any may be named. */
	allowed: string[] | null;
	bulk: 'batch' | 'page_by_page';
}

/** The provider and model the jobs of a website with `choice` run with; null while the catalog is unknown. */
export function aiRun(catalog: ProviderCatalog | null, choice: { provider?: string | null; model?: string | null }): AiRun | null {
	const entry = entryOf(catalog, choice.provider ?? '');
	if (!entry) return null;
	return {
		name: entry.name,
		model: choice.model?.trim() || entry.default_model,
		chosen: Boolean(choice.provider || choice.model?.trim()),
		defaultProvider: !choice.provider,
		configured: entry.origin !== null,
		allowed: entry.models,
		bulk: entry.bulk,
	};
}
