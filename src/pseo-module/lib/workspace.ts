import type { InjectionKey, Ref } from 'vue';
import type { CapToday } from './blockers.ts';
import type { Rates } from './cost.ts';
import type { LiveChannel } from './live-updates.ts';
import type { PseoApi, Website } from './pseo-api.ts';
import type { ProviderCatalog } from './providers.ts';

/** What a website's tabs share: the API, the website, the caller's balance and the rates. */
export interface Workspace {
	api: PseoApi;
	pseoId: Ref<number>;
	website: Ref<Website | null>;
	balance: Ref<number | null>;
	rates: Ref<Rates | null>;
	/** The caller's daily cap and what is left of it today; null without one. */
	dailyCap: Ref<CapToday | null>;
	/** The AI providers and models a website may name; null when they could not be read. */
	providers: Ref<ProviderCatalog | null>;
	/** Whether the user is an admin, who may open Settings → AI. */
	isAdmin: Readonly<Ref<boolean>>;
	refreshBalance: () => Promise<void>;
	showTab: (tab: string) => void;
	/** A WebSocket subscription on a topic when Directus has WebSockets enabled, else null (the tabs poll). */
	live: (topic: { collection: string; query: Record<string, unknown> }) => LiveChannel | null;
}

export const WORKSPACE: InjectionKey<Workspace> = Symbol('pseo-workspace');
