/** The subset of Directus's pino logger the modules use; tests pass a silent or recording one. */
export interface Logger {
	debug(obj: object, msg?: string): void;
	info(obj: object, msg?: string): void;
	warn(obj: object, msg?: string): void;
	error(obj: object, msg?: string): void;
}
