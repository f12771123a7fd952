import type { DirectusServices } from '../shared/services.ts';
import type { Knex } from 'knex';
import { systemServiceOptions } from '../shared/system-context.ts';
import { jsonValue } from '../shared/json-value.ts';
import type { ProviderKind } from '../shared/provider-kinds.ts';

/*
 * The AI providers an admin configured in Directus (Settings → AI, `directus_settings`), which Directus's own AI
 * features read too. Directus 12 added them; on Directus 11 there is nothing to read. The keys are stored
 * encrypted (`special: encrypt`), so they are read through Directus's SettingsService, which decrypts them, with
 * the system's full access: no request stands behind a job's step.
 */

/** What Settings → AI says about the providers this extension can call. */
export interface AiSettings {
	openaiApiKey: string | null;
	anthropicApiKey: string | null;
	googleApiKey: string | null;
	compatible: { baseUrl: string; apiKey: string | null; name: string | null; headers: Record<string, string>; models: string[] } | null;
	/**
	 * The models Directus allows per provider (`ai_<provider>_allowed_models`; for the OpenAI-compatible server, the
	 * ids of its models). Null when the setting is empty: Directus then allows none of its own features to run, and
	 * this extension takes the list as not given.
	 */
	allowedModels: Record<ProviderKind, string[] | null>;
}

const FIELDS = [
	'ai_openai_api_key',
	'ai_anthropic_api_key',
	'ai_google_api_key',
	'ai_openai_compatible_base_url',
	'ai_openai_compatible_api_key',
	'ai_openai_compatible_name',
	'ai_openai_compatible_headers',
	'ai_openai_compatible_models',
	'ai_openai_allowed_models',
	'ai_anthropic_allowed_models',
	'ai_google_allowed_models',
] as const;

/** Reads Settings → AI; null on a Directus without AI settings (Directus 11). */
export async function readAiSettings(context: DirectusServices & { database: Knex }): Promise<AiSettings | null> {
	const schema = await context.getSchema({ database: context.database });
	const known = schema.collections['directus_settings']?.fields ?? {};
	// Directus added the settings over several releases: read those this one has.
	const fields = FIELDS.filter((field) => field in known);
	if (!fields.includes('ai_openai_api_key')) return null;
	const settings = new context.services.SettingsService(systemServiceOptions(context.database, schema));
	const row = ((await settings.readSingleton({ fields: [...fields] })) ?? {}) as Record<string, unknown>;
	const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);
	const baseUrl = text(row['ai_openai_compatible_base_url']);
	const compatibleModels = modelIds(row['ai_openai_compatible_models']);
	return {
		openaiApiKey: text(row['ai_openai_api_key']),
		anthropicApiKey: text(row['ai_anthropic_api_key']),
		googleApiKey: text(row['ai_google_api_key']),
		compatible: baseUrl
			? {
					baseUrl,
					apiKey: text(row['ai_openai_compatible_api_key']),
					name: text(row['ai_openai_compatible_name']),
					headers: headersOf(row['ai_openai_compatible_headers']),
					models: compatibleModels ?? [],
				}
			: null,
		allowedModels: {
			openai: modelIds(row['ai_openai_allowed_models']),
			anthropic: modelIds(row['ai_anthropic_allowed_models']),
			google: modelIds(row['ai_google_allowed_models']),
			openai_compatible: compatibleModels,
		},
	};
}

/** A list of model names (`["gpt-5.4-mini"]`) or of model definitions (`[{ id, name }]`); null when empty. */
function modelIds(value: unknown): string[] | null {
	const list = jsonValue(value);
	if (!Array.isArray(list)) return null;
	const ids = list
		.map((entry: unknown) => (typeof entry === 'string' ? entry : (entry as { id?: unknown } | null)?.id))
		.filter((id): id is string => typeof id === 'string' && id.trim() !== '')
		.map((id) => id.trim());
	return ids.length > 0 ? ids : null;
}

/** The `{ header, value }` list of the settings' form, as request headers; rows without a name are skipped. */
function headersOf(value: unknown): Record<string, string> {
	const list = jsonValue(value);
	const headers: Record<string, string> = {};
	if (!Array.isArray(list)) return headers;
	for (const entry of list as Record<string, unknown>[]) {
		const name = typeof entry?.['header'] === 'string' ? entry['header'].trim() : '';
		if (name !== '' && typeof entry['value'] === 'string') headers[name] = entry['value'];
	}
	return headers;
}
