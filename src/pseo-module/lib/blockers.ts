import type { Formats } from './formats.ts';
import type { AiRun } from './providers.ts';

/*
 * Why an action cannot succeed, known before the click, in a sentence that says what to do instead. Each is what
 * the server would refuse; what only the server can know (a job started meanwhile elsewhere) still comes as a
 * message after the click.
 */

/** A daily cap and what is left of it today (UTC). */
export interface CapToday {
	limit: number;
	left: number;
}

/** What the module knows of a website before a job is started on it; null where it could not be read. */
export interface StartFacts {
	/** Pages asked for. */
	pages: number;
	cost: number;
	balance: number | null;
	/** The website's job still pending or running. */
	activeJobId: number | null;
	/** Plan pages without a post yet, and whether the website has plan pages at all. */
	openRoutes: { open: number; total: number } | null;
	userCap: CapToday | null;
	websiteCap: CapToday | null;
	/** The provider and model the job would run with (lib/providers.ts). */
	ai: AiRun | null;
}

/**
 * Why the website's provider and model cannot run a job or a plan: a provider without a key fails every page
 * (refunded), and a model Settings → AI does not allow is refused before the charge.
 */
export function aiBlocker(ai: AiRun | null): string | null {
	if (!ai) return null;
	if (!ai.configured) {
		return ai.defaultProvider
			? `No AI provider is configured (the default is ${ai.name}): choose a configured one in the AI tab, or ask an admin to add a key in Settings → AI.`
			: `${ai.name} is not configured: choose another provider in the AI tab, or ask an admin to add its key in Settings → AI.`;
	}
	if (ai.allowed && !ai.allowed.includes(ai.model)) return `${ai.name} does not allow the model ${ai.model} here: choose one of ${ai.allowed.join(', ')} in the AI tab.`;
	return null;
}

/** Why starting a job of `facts.pages` pages cannot succeed, or null when nothing known stops it. */
export function startBlocker(facts: StartFacts, formats: Pick<Formats, 'number'>): string | null {
	const n = formats.number;
	if (facts.pages < 1) return 'Choose at least one page.';
	const ai = aiBlocker(facts.ai);
	if (ai) return ai;
	if (facts.activeJobId !== null) return `Job ${facts.activeJobId} is still running on this website: wait for it to end, or cancel it in the Jobs tab.`;
	if (facts.openRoutes && facts.openRoutes.total === 0) return 'This website has no plan yet: generate or import one in the Plan tab.';
	if (facts.openRoutes && facts.openRoutes.open < facts.pages) {
		return facts.openRoutes.open === 0
			? 'Every page of the plan has a post: add pages to the plan in the Plan tab.'
			: `The plan has ${n(facts.openRoutes.open)} pages without a post: choose ${n(facts.openRoutes.open)} or fewer, or add pages in the Plan tab.`;
	}
	return spendBlocker('Start', facts, n);
}

/** Why a charge of `cost` cannot pass: a short balance, or a daily cap of the user or the website reached. */
export function spendBlocker(action: string, facts: Pick<StartFacts, 'cost' | 'balance' | 'userCap' | 'websiteCap'>, n: Formats['number']): string | null {
	if (facts.balance !== null && facts.cost > facts.balance) {
		return `${action} needs ${n(facts.cost - facts.balance)} more tokens: ask an admin to add tokens to your balance${action === 'Start' ? ', or choose fewer pages' : ''}.`;
	}
	if (facts.userCap && facts.cost > facts.userCap.left) {
		return `Your daily limit of ${n(facts.userCap.limit)} tokens leaves ${n(facts.userCap.left)} for today: ${action === 'Start' ? 'choose fewer pages, or ' : ''}try again after midnight UTC.`;
	}
	if (facts.websiteCap && facts.cost > facts.websiteCap.left) {
		return `This website's daily limit of ${n(facts.websiteCap.limit)} tokens leaves ${n(facts.websiteCap.left)} for today: ${action === 'Start' ? 'choose fewer pages, or ' : ''}try again after midnight UTC.`;
	}
	return null;
}
