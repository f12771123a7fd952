// Single-file components are compiled by the extensions SDK (and by @vitejs/plugin-vue under vitest); to the type
// checker each is a component.
declare module '*.vue' {
	import type { DefineComponent } from 'vue';
	const component: DefineComponent<object, object, unknown>;
	export default component;
}
