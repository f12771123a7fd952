/** The rates GET /balance gives. */
export interface Rates {
	token_per_page: number;
	token_per_batch_page: number;
	token_per_main_json: number;
	token_per_imported_page?: number;
}

export type GenerationMode = 'on_demand' | 'bulk';

/** What a generation of `pages` pages costs, and whether `balance` covers it. */
export function generationCost(mode: GenerationMode, pages: number, rates: Rates, balance: number): { cost: number; affordable: boolean; shortBy: number } {
	const rate = mode === 'bulk' ? rates.token_per_batch_page : rates.token_per_page;
	const cost = Math.max(0, Math.floor(pages)) * rate;
	return { cost, affordable: cost <= balance, shortBy: Math.max(0, cost - balance) };
}
