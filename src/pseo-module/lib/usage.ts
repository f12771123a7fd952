/*
 * The provider's usage per website and day, from the items API's aggregate over the jobs (sums of the usage_*
 * columns grouped by website and by the UTC day the job was created), shaped for a chart.
 */

interface UsageDay {
	/** The UTC day, "2026-01-31". */
	day: string;
	prompt: number;
	completion: number;
	requests: number;
}

export interface WebsiteUsage {
	pseoId: number;
	days: UsageDay[];
	/** The largest day's prompt and completion tokens together. */
	peak: number;
}

const pad = (value: unknown) => String(value ?? '').padStart(2, '0');

/** The aggregate's rows grouped per website, each website's days in order, websites by most tokens first. */
export function usageByWebsite(rows: readonly Record<string, unknown>[]): WebsiteUsage[] {
	const sites = new Map<number, UsageDay[]>();
	for (const row of rows) {
		const sum = (row['sum'] ?? {}) as Record<string, number | string | null>;
		const pseoId = Number(row['pseo_id']);
		if (!Number.isFinite(pseoId)) continue;
		const day = `${String(row['date_created_year'] ?? '')}-${pad(row['date_created_month'])}-${pad(row['date_created_day'])}`;
		const entry = { day, prompt: Number(sum['usage_prompt_tokens'] ?? 0), completion: Number(sum['usage_completion_tokens'] ?? 0), requests: Number(sum['usage_requests'] ?? 0) };
		sites.set(pseoId, [...(sites.get(pseoId) ?? []), entry]);
	}
	const total = (site: WebsiteUsage) => site.days.reduce((sum, day) => sum + day.prompt + day.completion, 0);
	return [...sites]
		.map(([pseoId, days]) => {
			const sorted = [...days].sort((a, b) => a.day.localeCompare(b.day));
			return { pseoId, days: sorted, peak: Math.max(0, ...sorted.map((day) => day.prompt + day.completion)) };
		})
		.sort((a, b) => total(b) - total(a) || a.pseoId - b.pseoId);
}
