import { createHash } from 'node:crypto';
import type { PseoConfig } from '../config/config.ts';
import type { Logger } from '../shared/logger.ts';
import { DEFAULT_MODELS, isProviderKind, PROVIDER_KINDS, PROVIDER_NAMES, type ProviderKind } from '../shared/provider-kinds.ts';
import type { AiSettings } from './ai-settings.ts';
import { createAnthropicProvider } from './anthropic/anthropic-provider.ts';
import type { GenerationProvider, ProviderUnavailable } from './generation-provider.ts';
import type { BatchApiProbe, JsonProvider, OpenAiProvider } from './types.ts';
import { createOpenAiProvider } from './openai/openai-provider.ts';
import { createGoogleProvider } from './google/google-provider.ts';
import type { Pacing } from './pacing/pacing.ts';

/** The provider a call runs with, or why there is none. */
type ProviderChoice = GenerationProvider | ProviderUnavailable;

/** Where a provider's credentials come from. */
type ProviderOrigin = 'environment' | 'directus-settings';

/** What a website asks for: its `provider` and `model`, each null for the instance's default. */
interface ProviderWish {
	provider?: string | null;
	model?: string | null;
}

/** The provider and model a call runs with, and whether it can. */
export interface ProviderPlan {
	kind: ProviderKind;
	model: string;
	/** Where its credentials come from; null when it has none. */
	origin: ProviderOrigin | null;
	/** Why the model may not run: Settings → AI does not allow it for the provider. */
	refused: string | null;
}

/**
 * The provider for each call. A website may name its provider and model; otherwise `PSEO_PROVIDER` and
 * `PSEO_MODEL`, or the defaults, apply. Each provider's key comes from the environment when it is set there
 * (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), which wins as it always did; otherwise from Settings → AI, read when a call
 * starts (cached for `SETTINGS_TTL_MS`, and forgotten at once when this instance saves the settings), so an admin's
 * change takes effect without a restart. The models Settings → AI allows bind the providers whose keys it holds; a
 * provider configured in the environment runs the model the environment or the website names.
 */
export interface ProviderSource {
	/** `environment` when the environment configures a provider, else `directus-settings`. */
	readonly origin: ProviderOrigin;
	choose(wish?: ProviderWish): Promise<ProviderPlan>;
	/** Every provider, whether it can run and with which models: what a website may name. No key is in it. */
	catalog(): Promise<ProviderCatalog>;
	current(wish?: ProviderWish): Promise<ProviderChoice>;
	/** Forgets what was read of the settings (`settings.update`). */
	invalidate(): void;
}

/** One provider as the catalog describes it. */
interface CatalogEntry {
	provider: ProviderKind;
	name: string;
	/** Whether it has a key (or, for an OpenAI-compatible server, a base URL), and where from; null when it has none. */
	origin: ProviderOrigin | null;
	/** The models a website may name; null when any may be named (a provider configured in the environment). */
	models: string[] | null;
	/** The model that runs when a website names none. */
	default_model: string;
	/** How its bulk jobs run: through its batch API, or page by page. */
	bulk: 'batch' | 'page_by_page';
}

interface ProviderCatalog {
	/** The provider and model of websites that name none. */
	default: { provider: ProviderKind; model: string };
	providers: CatalogEntry[];
}

/** How long what was read of Settings → AI is used: a change saved on another instance is seen this late at most. */
const SETTINGS_TTL_MS = 10_000;
/** How long an OpenAI-compatible server that gave no answer about its Batch API is taken to have one before it is asked again. */
const PROBE_RETRY_MS = 60_000;
/** Clients kept, one per distinct provider, model and credentials; more are dropped and built again on need. */
const MAX_CLIENTS = 32;

/** Why generation cannot run; lands in failed_routes and the job's error. */
const NOT_CONFIGURED =
	'No AI provider is configured: set OPENAI_API_KEY, or an OpenAI key or an OpenAI-compatible server in Settings → AI. The tokens were refunded.';

interface Credentials {
	origin: ProviderOrigin;
	apiKey: string;
	baseURL: string | undefined;
	headers?: Record<string, string>;
}

/**
 * The provider source of an instance; with `pacing`, every client's online calls are paced to their key's limits
 * (pacing/), without it they go unpaced.
 */
export function createProviderSource(config: PseoConfig, logger: Logger, readSettings: () => Promise<AiSettings | null>, pacing?: Pacing): ProviderSource {
	const fromEnvironment: Partial<Record<ProviderKind, Credentials>> = {};
	if (config.openaiApiKey) fromEnvironment.openai = { origin: 'environment', apiKey: config.openaiApiKey, baseURL: config.openaiBaseUrl };
	if (config.anthropicApiKey) fromEnvironment.anthropic = { origin: 'environment', apiKey: config.anthropicApiKey, baseURL: config.anthropicBaseUrl };
	if (config.geminiApiKey) fromEnvironment.google = { origin: 'environment', apiKey: config.geminiApiKey, baseURL: config.geminiBaseUrl };

	let read: { at: number; settings: Promise<AiSettings | null> } | null = null;
	const settings = (): Promise<AiSettings | null> => {
		if (!read || Date.now() - read.at > SETTINGS_TTL_MS) {
			const pending = readSettings();
			read = { at: Date.now(), settings: pending };
			// A failed read is not kept: the next call reads again.
			pending.catch(() => {
				if (read?.settings === pending) read = null;
			});
		}
		return read.settings;
	};

	const credentialsFrom = (kind: ProviderKind, ai: AiSettings | null): Credentials | null => {
		switch (kind) {
			case 'openai':
				return ai?.openaiApiKey ? { origin: 'directus-settings', apiKey: ai.openaiApiKey, baseURL: config.openaiBaseUrl } : null;
			case 'anthropic':
				return ai?.anthropicApiKey ? { origin: 'directus-settings', apiKey: ai.anthropicApiKey, baseURL: config.anthropicBaseUrl } : null;
			case 'openai_compatible':
				// Servers such as Ollama or LM Studio take no key; the SDK needs one, so a placeholder goes in its header.
				return ai?.compatible ? { origin: 'directus-settings', apiKey: ai.compatible.apiKey ?? 'none', baseURL: ai.compatible.baseUrl, headers: ai.compatible.headers } : null;
			case 'google':
				return ai?.googleApiKey ? { origin: 'directus-settings', apiKey: ai.googleApiKey, baseURL: config.geminiBaseUrl } : null;
		}
	};

	/** The provider of websites that name none. Settings → AI are read only when the environment does not decide. */
	const defaultKind = async (): Promise<ProviderKind> => {
		if (config.provider) return config.provider;
		if (fromEnvironment.openai) return 'openai';
		if (fromEnvironment.anthropic) return 'anthropic';
		if (fromEnvironment.google) return 'google';
		const ai = await settings();
		return (['openai', 'anthropic', 'google', 'openai_compatible'] as const).find((kind) => credentialsFrom(kind, ai) !== null) ?? 'openai';
	};

	const plan = async (wish: ProviderWish = {}): Promise<ProviderPlan & { credentials: Credentials | null }> => {
		const fallback = await defaultKind();
		const kind = isProviderKind(wish.provider) ? wish.provider : fallback;
		const environment = fromEnvironment[kind];
		const ai = environment ? null : await settings();
		const credentials = environment ?? credentialsFrom(kind, ai);
		// The models Settings → AI allows bind only the providers whose keys it holds.
		const allowed = credentials?.origin === 'directus-settings' ? (ai?.allowedModels[kind] ?? null) : null;
		const preferred = kind === fallback ? config.model : null;
		const standard = kind === 'openai_compatible' ? (ai?.compatible?.models[0] ?? config.model ?? DEFAULT_MODELS.openai) : DEFAULT_MODELS[kind];
		const named = wish.model?.trim() || preferred;
		// Without a model named, the default runs, or the first model allowed when the default is not.
		const model = named ?? (allowed && !allowed.includes(standard) ? allowed[0]! : standard);
		const refused =
			allowed && !allowed.includes(model)
				? `The model "${model}" is not allowed for ${PROVIDER_NAMES[kind]} in Settings → AI; allowed: ${allowed.join(', ')}.`
				: null;
		return { kind, model, origin: credentials?.origin ?? null, refused, credentials };
	};

	const clients = new Map<string, GenerationProvider>();
	const clientFor = (kind: ProviderKind, model: string, credentials: Credentials): GenerationProvider => {
		// A digest, not the key: nothing kept here would show a key in a heap dump's strings beside its purpose.
		const fingerprint = createHash('sha256').update(JSON.stringify([kind, model, credentials])).digest('hex');
		let client = clients.get(fingerprint);
		if (!client) {
			if (clients.size >= MAX_CLIENTS) clients.clear();
			const common = {
				apiKey: credentials.apiKey,
				...(credentials.baseURL !== undefined ? { baseURL: credentials.baseURL } : {}),
				...(credentials.headers && Object.keys(credentials.headers).length > 0 ? { headers: credentials.headers } : {}),
				model,
				timeoutMs: config.providerTimeoutMs,
				maxAttempts: config.providerMaxAttempts,
				backoff: { baseMs: config.providerBackoffMs, maxMs: Math.max(config.providerBackoffMs, 30_000) },
				logger,
				...(pacing ? { pacer: pacing.pacerFor(kind, credentials.baseURL, model, credentials.apiKey) } : {}),
				rateWaitMs: config.pacing.rateWaitMs,
			};
			client = kind === 'anthropic' ? createAnthropicProvider(common) : kind === 'google' ? createGoogleProvider(common) : createOpenAiProvider(common);
			clients.set(fingerprint, client);
			logger.info(
				{ provider: kind, model, origin: credentials.origin, baseURL: credentials.baseURL ?? 'the vendor API' },
				credentials.origin === 'environment' ? 'pseo-automation: AI provider configured from the environment' : 'pseo-automation: AI provider configured from Settings → AI',
			);
		}
		return client;
	};

	/*
	 * An OpenAI-compatible server may have no Batch API (Ollama, vLLM answer 404): its bulk jobs then run page by page.
	 * Each client asks its server once; an answer that decides is kept, anything else (the server down, a refused
	 * key) is asked again after PROBE_RETRY_MS, and meanwhile the Batch API is assumed, as it was before the question.
	 */
	const probes = new WeakMap<GenerationProvider, { answer: Promise<BatchApiProbe>; settled: BatchApiProbe | null; until: number }>();
	const chatOnly = new WeakMap<GenerationProvider, JsonProvider>();
	const batchApiOf = (client: GenerationProvider): Promise<BatchApiProbe> => {
		const probe = (client as Partial<OpenAiProvider>).probeBatchApi;
		if (!probe) return Promise.resolve('available');
		const known = probes.get(client);
		if (known && Date.now() < known.until) return known.answer;
		const entry = { answer: Promise.resolve<BatchApiProbe>('unknown'), settled: null as BatchApiProbe | null, until: Number.POSITIVE_INFINITY };
		entry.answer = probe
			.call(client)
			.catch((): BatchApiProbe => 'unknown')
			.then((found) => {
				entry.settled = found;
				if (found === 'unknown') entry.until = Date.now() + PROBE_RETRY_MS;
				else if (found === 'missing') logger.info({ provider: 'openai_compatible' }, 'pseo-automation: the OpenAI-compatible server has no Batch API; its bulk jobs run page by page');
				return found;
			});
		probes.set(client, entry);
		return entry.answer;
	};
	/** The client a call runs with: without its batch operations when its server has no Batch API. */
	const withBatchApiOf = async (kind: ProviderKind, client: GenerationProvider): Promise<GenerationProvider> => {
		if (kind !== 'openai_compatible' || config.bulkMode !== 'batch' || (await batchApiOf(client)) !== 'missing') return client;
		let view = chatOnly.get(client);
		if (!view) {
			view = { completeJson: (request) => client.completeJson(request) };
			chatOnly.set(client, view);
		}
		return view;
	};
	/**
	 * How a provider's bulk jobs run, as the catalog says it. The catalog does not wait for a server's answer (a
	 * server that does not answer would hold `GET /providers` up to the probe's timeout): it says what is known, and
	 * the question it starts is answered by the next read.
	 */
	const bulkOf = (kind: ProviderKind, chosen: ProviderPlan & { credentials: Credentials | null }): CatalogEntry['bulk'] => {
		if (config.bulkMode !== 'batch') return 'page_by_page';
		if (kind !== 'openai_compatible' || !chosen.credentials) return 'batch';
		const client = clientFor(kind, chosen.model, chosen.credentials);
		void batchApiOf(client);
		return probes.get(client)?.settled === 'missing' ? 'page_by_page' : 'batch';
	};

	return {
		origin: Object.keys(fromEnvironment).length > 0 ? 'environment' : 'directus-settings',
		async catalog() {
			const fallback = await plan();
			const ai = await settings();
			const providers: CatalogEntry[] = [];
			for (const kind of PROVIDER_KINDS) {
				const chosen = kind === fallback.kind ? fallback : await plan({ provider: kind });
				const allowed = chosen.origin === 'directus-settings' ? (ai?.allowedModels[kind] ?? null) : null;
				providers.push({
					provider: kind,
					name: kind === 'openai_compatible' && ai?.compatible?.name ? ai.compatible.name : PROVIDER_NAMES[kind],
					origin: chosen.origin,
					models: allowed,
					default_model: chosen.model,
					bulk: bulkOf(kind, chosen),
				});
			}
			return { default: { provider: fallback.kind, model: fallback.model }, providers };
		},
		async choose(wish) {
			const { credentials: _credentials, ...chosen } = await plan(wish);
			return chosen;
		},
		async current(wish) {
			const { kind, model, credentials, refused } = await plan(wish);
			if (refused) return { unavailable: `${refused} The tokens were refunded.`, code: 'model_not_allowed' };
			if (!credentials) {
				return { unavailable: wish?.provider && isProviderKind(wish.provider) && kind !== 'openai' ? `${PROVIDER_NAMES[kind]} is not configured: add its key in Settings → AI. The tokens were refunded.` : NOT_CONFIGURED };
			}
			return withBatchApiOf(kind, clientFor(kind, model, credentials));
		},
		invalidate() {
			read = null;
		},
	};
}
