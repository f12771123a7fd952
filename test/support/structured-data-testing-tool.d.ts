/** The part of structured-data-testing-tool (a CommonJS library without its own types) that the tests use. */
declare module 'structured-data-testing-tool' {
	interface StructuredDataTest {
		test: string;
		type?: 'jsonld' | 'microdata' | 'rdfa' | 'metatag' | 'any';
		expect?: unknown;
		description?: string;
		error?: { type: string; message: string; expected?: unknown; found?: unknown } | null;
	}
	interface StructuredDataResult {
		passed: StructuredDataTest[];
		failed: StructuredDataTest[];
		schemas: string[];
		structuredData: { jsonld: Record<string, unknown[]> };
	}
	interface StructuredDataError extends Error {
		type?: string;
		res?: StructuredDataResult;
	}
	const sdtt: {
		structuredDataTest(input: string, options: { schemas?: string[]; tests?: StructuredDataTest[] }): Promise<StructuredDataResult>;
	};
	export default sdtt;
}
