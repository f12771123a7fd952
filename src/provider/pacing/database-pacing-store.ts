import type { Knex } from 'knex';
import type { PacingStore, SharedPace } from './pacing-store.ts';
import { reserveSlot, type LearntRate, type SlotState } from './slot-schedule.ts';

/** The table of the pacing shared through the database: one row per provider key (pacer-key.ts). */
export const PACING_TABLE = 'pseo_provider_pacing';

interface Row {
	id: string;
	request_tat_us: unknown;
	token_tat_us: unknown;
	hold_until_us: unknown;
	learnt_requests_per_hour: unknown;
	learnt_since: unknown;
	learnt_phase: unknown;
}

interface Known extends SlotState {
	learnt: LearntRate | null;
}

/** Conflicting writers met in a row before a reservation gives up (and the pacer paces alone for that call). */
const MAX_CONFLICTS = 16;

const micros = (ms: number) => Math.round(ms * 1000);
const toNumber = (value: unknown) => (value === null || value === undefined ? 0 : Number(value));

function knownOf(row: Row): Known {
	const rate = toNumber(row.learnt_requests_per_hour);
	const since = toNumber(row.learnt_since);
	return {
		requestTat: toNumber(row.request_tat_us) / 1000,
		tokenTat: toNumber(row.token_tat_us) / 1000,
		holdUntil: toNumber(row.hold_until_us) / 1000,
		learnt: rate > 0 && since > 0 ? { rate: rate / 3600, since, phase: row.learnt_phase === 'start' ? 'start' : 'steady' } : null,
	};
}

const sharedOf = (known: Known): SharedPace => ({ holdUntil: known.holdUntil, learnt: known.learnt });

/**
 * The pacing shared through the database, for instances without Redis. A slot is one conditional UPDATE: the row
 * as this instance last saw it (kept from its own last write) is replaced by the row with the slot taken, on the
 * condition that nobody changed it meanwhile; another instance's write makes the UPDATE match nothing, and the row
 * is read again and the slot computed anew. Times are stored in microseconds, so that a schedule that advances by a
 * fraction of a millisecond per request does not drift by rounding.
 */
export function createDatabasePacingStore(database: Knex): PacingStore {
	const cache = new Map<string, Known>();

	const readRow = async (key: string): Promise<Known> => {
		let row = (await database(PACING_TABLE).where('id', key).first()) as Row | undefined;
		if (!row) {
			// The kind before the colon names the provider for whoever reads the table.
			await database(PACING_TABLE)
				.insert({ id: key, provider: key.split(':')[0]!.slice(0, 32), request_tat_us: 0, token_tat_us: 0, hold_until_us: 0, learnt_requests_per_hour: 0, learnt_since: 0 })
				.onConflict('id')
				.ignore();
			row = (await database(PACING_TABLE).where('id', key).first()) as Row;
		}
		const known = knownOf(row);
		cache.set(key, known);
		return known;
	};

	/** The row's state as a condition: every field this store writes, as they were read. */
	const unchanged = (key: string, known: Known) => ({
		id: key,
		request_tat_us: micros(known.requestTat),
		token_tat_us: micros(known.tokenTat),
		hold_until_us: micros(known.holdUntil),
		learnt_since: known.learnt?.since ?? 0,
	});

	return {
		async reserve(key, demand, now, notAfter) {
			let known = cache.get(key) ?? (await readRow(key));
			for (let conflicts = 0; ; conflicts++) {
				const slot = reserveSlot(known, demand, now, notAfter);
				if (!slot.state) {
					// Too far on what this instance last saw: read once more before saying so, the row may have moved back.
					if (conflicts > 0) return { at: slot.at, taken: false, shared: sharedOf(known) };
					known = await readRow(key);
					continue;
				}
				const next: Known = { ...slot.state, learnt: known.learnt };
				// Atomic across instances: the conditional UPDATE matches only the row this slot was computed from.
				const updated = await database(PACING_TABLE)
					.where(unchanged(key, known))
					.update({ request_tat_us: micros(next.requestTat), token_tat_us: micros(next.tokenTat) });
				if (updated === 1) {
					cache.set(key, next);
					return { at: slot.at, taken: true, shared: sharedOf(next) };
				}
				if (conflicts >= MAX_CONFLICTS) throw new Error(`the pacing row of ${key} kept changing under ${MAX_CONFLICTS} reservations`);
				// A random pause, growing with the conflicts, before reading again: two instances that take slots in
				// lockstep would otherwise meet again at once, and the one with the slower round trip could lose every time.
				await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** conflicts)));
				known = await readRow(key);
			}
		},
		async hold(key, until, requestTat) {
			if (!cache.has(key)) await readRow(key);
			// One statement: each column moves forward only (CASE rather than GREATEST, which SQLite lacks).
			const later = (column: string, value: number) => database.raw('CASE WHEN ?? < ? THEN ? ELSE ?? END', [column, value, value, column]);
			await database(PACING_TABLE)
				.where('id', key)
				.update({
					hold_until_us: later('hold_until_us', micros(until)),
					...(requestTat !== undefined ? { request_tat_us: later('request_tat_us', micros(requestTat)) } : {}),
				});
			cache.delete(key);
		},
		async read(key) {
			return sharedOf(await readRow(key));
		},
		async learn(key, expected, next) {
			if (!cache.has(key)) await readRow(key);
			await database(PACING_TABLE)
				.where({ id: key, learnt_since: expected?.since ?? 0 })
				.update({ learnt_requests_per_hour: Math.round(next.rate * 3600), learnt_since: Math.round(next.since), learnt_phase: next.phase });
			return (await readRow(key)).learnt;
		},
	};
}
