import type { Logger } from './logger.ts';
import type { DirectusServices } from './services.ts';

/*
 * The extension writes its jobs and publications with its own SQL (leases, fenced counters, ingest), which Directus's
 * ItemsService never sees, so Directus emits no event for them. Where WebSockets are enabled, each such write that a
 * person watches is announced afterwards the one way an extension can reach Directus's core events: an ItemsService
 * update of the changed rows with an empty payload. Directus then does what it does for any update: it touches
 * `date_updated` (the write had set it already) and emits `items.update`, which feeds its WebSocket
 * subscriptions (the app module's live progress), Flows with an event trigger and other hooks, on this instance and,
 * through its bus, on the others. Each subscriber reads the item back with its own permissions, so an editor never
 * hears of another's jobs. (The `emitter` an extension is handed is a separate one that core listeners never hear.)
 *
 * Announcements are coalesced per collection over a short window, so an ingest of thousands of pages costs a few
 * updates a second, not one per chunk; they purge no cache. Without WebSockets (or in a CLI command, or the data
 * modules' own tests) nothing is sent.
 */

/** How long changes gather before one announcement carries them all. */
const WINDOW_MS = 250;

interface Announcer {
	note(collection: string, keys: readonly (string | number)[]): void;
}

let announcer: Announcer | null = null;

/** Starts (or, with null, stops) announcing changes through Directus's ItemsService. */
export function setItemAnnouncer(context: (DirectusServices & { logger: Logger }) | null): void {
	announcer = context ? createAnnouncer(context) : null;
}

function createAnnouncer({ services, getSchema, logger }: DirectusServices & { logger: Logger }): Announcer {
	const pending = new Map<string, Set<string | number>>();
	let timer: ReturnType<typeof setTimeout> | null = null;

	/** Keys whose announcement failed once: they go out with the next window, and are dropped if it fails again. */
	const retried = new Set<string>();

	const schedule = () => {
		if (timer) return;
		timer = setTimeout(() => void flush(), WINDOW_MS);
		timer.unref?.();
	};

	const add = (collection: string, keys: Iterable<string | number>) => {
		const set = pending.get(collection) ?? new Set();
		for (const key of keys) set.add(key);
		pending.set(collection, set);
	};

	const flush = async () => {
		timer = null;
		const batches = [...pending];
		pending.clear();
		for (const [collection, keys] of batches) {
			try {
				const items = new services.ItemsService(collection, { schema: await getSchema(), accountability: null });
				// No cache purge: with CACHE_AUTO_PURGE on, each announcement would empty Directus's whole data cache.
				await items.updateMany([...keys], {}, { autoPurgeCache: false });
				for (const key of keys) retried.delete(`${collection}:${key}`);
			} catch (error) {
				// The write has committed either way; a job's last change (its end) has no later one to carry it, so a
				// failed announcement is tried once more with the next window.
				const again = [...keys].filter((key) => !retried.has(`${collection}:${key}`));
				for (const key of keys) retried.delete(`${collection}:${key}`);
				for (const key of again) retried.add(`${collection}:${key}`);
				if (again.length > 0) {
					add(collection, again);
					schedule();
				}
				logger.warn({ err: error, collection, keys: [...keys], retrying: again.length }, 'pseo-automation: a change could not be announced to Directus');
			}
		}
	};

	return {
		note(collection, keys) {
			add(collection, keys);
			schedule();
		},
	};
}

/** Announces that rows of `collection` were created or changed, after the write has committed. */
export function itemsChanged(collection: string, keys: readonly (string | number)[]): void {
	if (keys.length > 0) announcer?.note(collection, keys);
}
