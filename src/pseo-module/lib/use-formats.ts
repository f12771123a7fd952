import { useStores } from '@directus/extensions-sdk';
import { computed, type ComputedRef } from 'vue';
import { appLocale, formatsFor, type Formats } from './formats.ts';

/**
 * The formats of the signed-in user's language (lib/formats.ts), following a change of language. Outside the app
 * (a component mounted without its stores) the browser's language.
 */
export function useFormats(): ComputedRef<Formats> {
	let stores: ReturnType<typeof useStores> | null = null;
	try {
		stores = useStores();
	} catch {
		stores = null;
	}
	const user = stores?.useUserStore();
	const server = stores?.useServerStore();
	return computed(() => {
		const language = (user?.currentUser as { language?: unknown } | null | undefined)?.language;
		const project = (server?.info as { project?: { default_language?: unknown } | null } | null | undefined)?.project?.default_language;
		return formatsFor(appLocale(language, project, globalThis.navigator?.language));
	});
}
