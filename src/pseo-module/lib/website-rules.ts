import { isProviderKind } from '../../shared/provider-kinds.ts';
import type { AiChoice } from './providers.ts';

/*
 * The rules of the website form, the same as POST /pseo's (its contract, src/contracts/websites.ts), so an editor sees a
 * problem before sending and the server never has to refuse a form the app let through.
 */

export interface WebsiteDraft extends AiChoice {
	website_url: string;
	master_prompt: string;
	website_software: string;
}

export type WebsiteProblems = Partial<Record<keyof WebsiteDraft, string>>;

/** The longest model name POST /pseo takes. */
const MODEL_MAX = 200;

/**
 * The provider and model of a website: blank, or a provider of the list and a model of at most 200 characters, one
 * of `allowed` when the provider lists its models (the server refuses any other when a job starts).
 */
export function aiProblems(choice: AiChoice, allowed: string[] | null = null): Pick<WebsiteProblems, 'provider' | 'model'> {
	const problems: Pick<WebsiteProblems, 'provider' | 'model'> = {};
	if (choice.provider !== '' && !isProviderKind(choice.provider)) problems.provider = 'Choose a provider from the list.';
	const model = choice.model.trim();
	if (model.length > MODEL_MAX) problems.model = `At most ${MODEL_MAX} characters.`;
	else if (model && allowed && !allowed.includes(model)) problems.model = `Not allowed for this provider: choose one of ${allowed.join(', ')}.`;
	return problems;
}

export function websiteProblems(draft: WebsiteDraft, allowed: string[] | null = null): WebsiteProblems {
	const problems: WebsiteProblems = aiProblems(draft, allowed);
	const url = draft.website_url.trim();
	if (url === '') problems.website_url = 'Enter the website\'s address.';
	else if (url.length > 2048) problems.website_url = 'At most 2,048 characters.';
	else {
		let parsed: URL | null = null;
		try {
			parsed = new URL(url);
		} catch {
			problems.website_url = 'An absolute address, such as https://example.com.';
		}
		if (parsed && parsed.protocol !== 'http:' && parsed.protocol !== 'https:') problems.website_url = 'The address must start with http:// or https://.';
		else if (parsed && (parsed.username || parsed.password)) problems.website_url = 'The address must not contain a user name or password.';
	}
	if (draft.master_prompt.trim() === '') problems.master_prompt = 'Describe how pages of this website are written.';
	const software = draft.website_software.trim();
	if (software === '') problems.website_software = 'Name the website\'s software, such as wordpress.';
	else if (software.length > 100) problems.website_software = 'At most 100 characters.';
	return problems;
}

/** The description of a content plan: 150 to 1,000 characters (code points), counted as the server counts them. */
export function descriptionLength(text: string): number {
	return [...text.trim().normalize('NFC')].length;
}

export const DESCRIPTION_MIN = 150;
export const DESCRIPTION_MAX = 1000;
