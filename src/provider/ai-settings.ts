import type { DirectusServices } from '../shared/services.ts';
import type { Knex } from 'knex';
import { systemServiceOptions } from '../shared/system-context.ts';
import { jsonValue } from '../shared/json-value.ts';

/*
 * The AI providers an admin configured in Directus (Settings → AI, `directus_settings`), which Directus's own AI
 * features read too. Directus 12 added them; on Directus 11 there is nothing to read. The keys are stored
 * encrypted (`special: encrypt`), so they are read through Directus's SettingsService, which decrypts them, with
 * the system's full access: no request stands behind a job's step.
 */

/** What Settings → AI says about the providers this extension can call. */
export interface AiSettings {
	openaiApiKey: string | null;
	compatible: { baseUrl: string; apiKey: string | null; name: string | null; headers: Record<string, string> } | null;
}

const FIELDS = ['ai_openai_api_key', 'ai_openai_compatible_base_url', 'ai_openai_compatible_api_key', 'ai_openai_compatible_name', 'ai_openai_compatible_headers'] as const;

/** Reads Settings → AI; null on a Directus without AI settings (Directus 11). */
export async function readAiSettings(context: DirectusServices & { database: Knex }): Promise<AiSettings | null> {
	const schema = await context.getSchema({ database: context.database });
	const fields = schema.collections['directus_settings']?.fields ?? {};
	if (!FIELDS.every((field) => field in fields)) return null;
	const settings = new context.services.SettingsService(systemServiceOptions(context.database, schema));
	const row = ((await settings.readSingleton({ fields: [...FIELDS] })) ?? {}) as Record<string, unknown>;
	const text = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : null);
	const baseUrl = text(row['ai_openai_compatible_base_url']);
	return {
		openaiApiKey: text(row['ai_openai_api_key']),
		compatible: baseUrl
			? { baseUrl, apiKey: text(row['ai_openai_compatible_api_key']), name: text(row['ai_openai_compatible_name']), headers: headersOf(row['ai_openai_compatible_headers']) }
			: null,
	};
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
