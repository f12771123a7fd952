import type { ServiceContext } from '../shared/services.ts';
import { systemServiceOptions } from '../shared/system-context.ts';

/** The app module's id (src/pseo-module/index.ts). */
const MODULE_ID = 'pseo-workspace';

/** Directus's default module bar, used when the setting was never saved (`module_bar` null means this list). */
const DEFAULT_MODULE_BAR: readonly Record<string, unknown>[] = [
	{ type: 'module', id: 'content', enabled: true },
	{ type: 'module', id: 'visual', enabled: false },
	{ type: 'module', id: 'users', enabled: true },
	{ type: 'module', id: 'files', enabled: true },
	{ type: 'module', id: 'insights', enabled: true },
	{ type: 'module', id: 'deployments', enabled: false },
	{ type: 'link', id: 'docs', enabled: true, name: '$t:documentation', icon: 'help', url: 'https://directus.com/docs' },
	{ type: 'module', id: 'settings', enabled: true, locked: true },
];

/**
 * Puts the pSEO module in the app's module bar once: an app module shows only when the bar lists it enabled. An
 * admin who later disables or moves it keeps that choice, because an existing entry is never touched.
 */
export async function provisionModuleBar(context: ServiceContext): Promise<boolean> {
	const { database, services } = context;
	const schema = await context.getSchema({ database });
	const settings = new services.SettingsService(systemServiceOptions(database, schema));
	const current = (await settings.readSingleton({ fields: ['module_bar'] })) as { module_bar?: unknown };
	let bar = current.module_bar;
	if (typeof bar === 'string') bar = JSON.parse(bar) as unknown;
	const entries = Array.isArray(bar) ? (bar as Record<string, unknown>[]) : [...DEFAULT_MODULE_BAR];
	if (entries.some((entry) => entry['id'] === MODULE_ID)) return false;
	const settingsAt = entries.findIndex((entry) => entry['id'] === 'settings');
	const next = [...entries];
	next.splice(settingsAt === -1 ? next.length : settingsAt, 0, { type: 'module', id: MODULE_ID, enabled: true });
	await settings.upsertSingleton({ module_bar: next });
	return true;
}
