import type { Directive } from 'vue';

/**
 * `v-described-by="id"` on an action: sets `aria-describedby` on the action's real `<button>`, or removes it when the
 * id is empty. The app's `v-button` renders its button inside a wrapper and leaves the attributes it is given on the
 * wrapper, where a screen reader never looks, so a plain `:aria-describedby` binding would describe nothing.
 */
export const vDescribedBy: Directive<Described, string | null | undefined> = {
	mounted: describe,
	updated: describe,
};

/** What the directive needs of an element (the module is type-checked without the DOM's types). */
interface Described {
	matches(selector: string): boolean;
	querySelector(selector: string): Described | null;
	setAttribute(name: string, value: string): void;
	removeAttribute(name: string): void;
}

function describe(element: Described, binding: { value: string | null | undefined }): void {
	const button = element.matches('button') ? element : (element.querySelector('button') ?? element);
	if (binding.value) button.setAttribute('aria-describedby', binding.value);
	else button.removeAttribute('aria-describedby');
}
