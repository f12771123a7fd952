import { createHash } from 'node:crypto';
import type { ProviderKind } from '../../shared/provider-kinds.ts';

/**
 * The id under which the instances pace one provider key's calls to one model: the provider kind, then a digest of
 * the kind, the base URL, the model and a digest of the API key. The vendors set their limits per key and model
 * (OpenAI per model, Anthropic per model class, Gemini per project and model), so two models of one key are paced
 * apart. Nothing in it shows the key: it names Redis keys, database rows and log lines.
 */
export function pacerKey(kind: ProviderKind, baseURL: string | undefined, model: string, apiKey: string): string {
	const keyDigest = createHash('sha256').update(apiKey).digest('hex');
	const digest = createHash('sha256').update(JSON.stringify([kind, baseURL ?? '', model, keyDigest])).digest('hex');
	return `${kind}:${digest.slice(0, 40)}`;
}
