/*
 * Dates, times and numbers as the app shows them to the user: in the user's language (the app's locale) and the
 * browser's time zone, which is the one the app formats its own dates in. Pure, so that both are given in tests.
 */

export interface Formats {
	/** The exact date and time, e.g. "Jan 31, 2026, 10:30 AM" or "31.01.2026, 10:30". */
	dateTime(value: string | Date): string;
	/** A calendar day as the server counts days (UTC), e.g. "Jan 31, 2026" or "31.01.2026". */
	day(value: string | Date): string;
	/** How long ago (or in how long), e.g. "3 minutes ago" or "vor 3 Minuten". */
	relative(value: string | Date, now?: Date): string;
	/** An integer with the language's grouping, e.g. "12,500" or "12.500". */
	number(value: number): string;
	/** A signed amount, e.g. "+500" or "−20". */
	signed(value: number): string;
	/** A length of time in its largest whole unit, e.g. "3 minutes", "2 hours" or "3 Minuten". */
	duration(ms: number): string;
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
	['year', 365 * 24 * 3600],
	['month', 30 * 24 * 3600],
	['week', 7 * 24 * 3600],
	['day', 24 * 3600],
	['hour', 3600],
	['minute', 60],
	['second', 1],
];

const toDate = (value: string | Date) => (value instanceof Date ? value : new Date(value));

/** Formats for `locale` (a BCP 47 tag such as "en-US" or "de-DE"), in `timeZone` (the browser's when left out). */
export function formatsFor(locale: string, timeZone?: string): Formats {
	const zone = timeZone ? { timeZone } : {};
	const dateTime = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short', ...zone });
	const day = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeZone: 'UTC' });
	const relative = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' });
	const number = new Intl.NumberFormat(locale, { maximumFractionDigits: 0 });
	const signed = new Intl.NumberFormat(locale, { maximumFractionDigits: 0, signDisplay: 'exceptZero' });
	const valid = (date: Date) => !Number.isNaN(date.getTime());
	return {
		dateTime: (value) => (valid(toDate(value)) ? dateTime.format(toDate(value)) : String(value)),
		day: (value) => (valid(toDate(value)) ? day.format(toDate(value)) : String(value)),
		relative: (value, now = new Date()) => {
			const date = toDate(value);
			if (!valid(date)) return String(value);
			const seconds = Math.round((date.getTime() - now.getTime()) / 1000);
			const [unit, size] = UNITS.find(([, length]) => Math.abs(seconds) >= length) ?? ['second', 1];
			return relative.format(Math.round(seconds / size), unit);
		},
		number: (value) => number.format(value),
		signed: (value) => signed.format(value),
		duration: (ms) => {
			const seconds = Math.max(0, Math.round(ms / 1000));
			const [unit, size] = UNITS.find(([, length]) => seconds >= length) ?? ['second', 1];
			return new Intl.NumberFormat(locale, { style: 'unit', unit, unitDisplay: 'long', maximumFractionDigits: 0 }).format(Math.floor(seconds / size));
		},
	};
}

/**
 * The app's locale: the user's language, else the project's default language, else the browser's, as the app
 * itself chooses it. Directus stores languages as "en-US"; a value Intl does not know falls back to "en-US".
 */
export function appLocale(userLanguage: unknown, projectLanguage: unknown, browserLanguage: unknown): string {
	for (const candidate of [userLanguage, projectLanguage, browserLanguage]) {
		if (typeof candidate !== 'string' || candidate === '') continue;
		try {
			return Intl.getCanonicalLocales(candidate)[0]!;
		} catch {
			// Not a language tag: try the next one.
		}
	}
	return 'en-US';
}
