import { z } from 'zod';
import type { PlanRequest } from '../plan/create-plan.ts';
import type { ImportRequest } from '../plan/import-plan.ts';
import { MAX_IMPORT_ROWS } from '../plan/import-source.ts';
import { placeholdersOf, type ImportTemplate } from '../plan/import-template.ts';
import { PAGE_TYPES, SEARCH_INTENTS } from '../plan/plan-schema.ts';
import { doc, named } from './contract-registry.ts';
import { message, success } from './envelope.ts';
import { codePointLength, count, Identifier, objectError, requiredOr, rule, typeName } from './field-rules.ts';
import { defineRoute } from './route-contract.ts';

const DESCRIPTION_MIN_LENGTH = 150;
const DESCRIPTION_MAX_LENGTH = 1000;
const MAX_LANGUAGE_CODE_LENGTH = 35;
const MAX_TEMPLATE_TEXT = 500;
// language (2-3 letters), optional script (4 letters), optional region (2 letters or 3 digits). Variants and
// extensions are valid BCP 47 but say nothing a content plan needs, so they are refused as not a plain locale.
const LOCALE_SHAPE = /^[a-z]{2,3}(?:-[A-Z][a-z]{3})?(?:-(?:[A-Z]{2}|\d{3}))?$/;
const LANGUAGE_NAMES = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
const REGION_NAMES = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_SOURCE_LENGTH = 100;
const DEFAULT_SOURCE = 'import';

/**
 * The canonical form of a plain locale (`en`, `en-US`, `tr-TR`, `zh-Hant-TW`, `es-419`), or null. Case and `_` are
 * forgiven (`en_us` gives `en-US`); free text such as `english` is not, nor is an unknown language or region.
 */
function canonicalLocale(value: string): string | null {
	const input = value.trim().replaceAll('_', '-');
	if (input === '' || input.length > MAX_LANGUAGE_CODE_LENGTH) return null;
	try {
		const [canonical = ''] = Intl.getCanonicalLocales(input);
		if (!LOCALE_SHAPE.test(canonical)) return null;
		// getCanonicalLocales accepts any well-formed tag (`xx-XX`, `und`); a plan needs a language people write.
		const locale = new Intl.Locale(canonical);
		if (locale.language === 'und' || LANGUAGE_NAMES.of(locale.language) === undefined) return null;
		if (locale.region !== undefined && (locale.region === 'ZZ' || REGION_NAMES.of(locale.region) === undefined)) return null;
		return canonical;
	} catch {
		// A malformed tag, or a well-formed but special code DisplayNames throws on.
		return null;
	}
}

const languageCode = (description: string) =>
	doc(
		z
			.string({ error: requiredOr((input) => `must be a string, received ${typeName(input)}.`) })
			.refine((value) => canonicalLocale(value) !== null, {
				error: rule((input) => `must be a locale such as en-US, tr-TR or de-DE, received ${JSON.stringify(String(input).slice(0, 50))}.`),
			})
			.transform((value) => canonicalLocale(value)!),
		{ maxLength: MAX_LANGUAGE_CODE_LENGTH, description, examples: ['en-US'] },
	);

/** Trimmed and NFC-normalised, counted in Unicode code points: padding with spaces does not reach the minimum. */
const businessDescription = doc(
	z
		.string({ error: requiredOr((input) => `must be a string, received ${typeName(input)}.`) })
		// PostgreSQL text columns cannot hold NUL, and no business description needs one.
		.refine((value) => !value.includes('\u0000'), { error: rule('must not contain NUL characters.'), abort: true })
		.refine(
			(value) => {
				const length = codePointLength(value.trim().normalize('NFC'));
				return length >= DESCRIPTION_MIN_LENGTH && length <= DESCRIPTION_MAX_LENGTH;
			},
			{
				error: rule(
					(input) =>
						`must be ${DESCRIPTION_MIN_LENGTH} to ${DESCRIPTION_MAX_LENGTH} characters long (after trimming), received ${codePointLength(String(input).trim().normalize('NFC'))}.`,
				),
			},
		)
		.transform((value) => value.trim().normalize('NFC')),
	{
		minLength: DESCRIPTION_MIN_LENGTH,
		maxLength: DESCRIPTION_MAX_LENGTH,
		description: 'The business: sector, services, audience and goals. 150 to 1000 characters (Unicode code points) after trimming.',
	},
);

/** The body of POST /generate/main-json (interface 4.8). */
const PlanRequestBody = named(
	'PlanRequest',
	z
		.strictObject(
			{
				pseo_id: Identifier,
				language_code: languageCode(
					'A plain locale: language, optional script, optional region (`en`, `en-US`, `tr-TR`, `zh-Hant-TW`, `es-419`). Case and `_` are forgiven.',
				),
				description: businessDescription,
			},
			{ error: objectError('The request body must be a JSON object with "pseo_id", "language_code" and "description".') },
		)
		.transform((body): PlanRequest => ({ pseoId: body.pseo_id, languageCode: body.language_code, description: body.description })),
	{ description: 'Interface 4.8. Unknown fields are refused with 400.' },
);

/** A text of the import template: not blank, at most 500 characters, no empty placeholder; trimmed. */
const templateText = () =>
	doc(
		z
			.string({ error: requiredOr((input) => `must be a non-empty string, received ${typeName(input)}.`) })
			.refine((value) => value.trim() !== '', { error: rule('must be a non-empty string, received a string.'), abort: true })
			.refine((value) => value.length <= MAX_TEMPLATE_TEXT, { error: rule(`must be at most ${MAX_TEMPLATE_TEXT} characters.`), abort: true })
			.refine((value) => !/\{\s*\}/.test(value), { error: rule('has an empty placeholder "{}".') })
			.transform((value) => value.trim()),
		{ maxLength: MAX_TEMPLATE_TEXT },
	);
const optionalTemplateText = () =>
	templateText()
		.nullish()
		.transform((value) => value ?? undefined);

const templateRoute = doc(
	templateText()
		.refine((route) => route.startsWith('/') && !route.startsWith('//'), {
			error: rule('must start with a single "/", such as "/{service}/{city}".'),
			abort: true,
		})
		.refine((route) => placeholdersOf(route).length > 0, {
			error: rule('must have at least one placeholder such as "{city}": every row needs its own route.'),
			abort: true,
		})
		.refine(
			(route) => {
				const literal = route.replace(/\{[^{}]*\}/g, 'x');
				return /^\/[\p{Ll}\p{Lo}\p{N}x/-]*$/u.test(literal) && !/\/\/|\/$/.test(literal.length > 1 ? literal : '');
			},
			{ error: rule('may hold only lower-case letters, digits, hyphens, slashes and placeholders, with no empty segment or trailing slash.') },
		),
	{
		description: 'Starts with `/`; each `{column}` becomes a URL slug of that column\'s value (accents folded, letters of every script kept).',
		examples: ['/{service}/{city}'],
	},
);

const priorityError = rule((input) => `must be a number or a "{column}", received ${JSON.stringify(input)}.`);

const MAX_COLUMN_NAME = 200;
const MAX_TEMPLATE_COLUMNS = 100;

/** A list of column names of the data: each a non-empty string, trimmed; repeats dropped. */
const columnList = (description: string, examples: string[]) =>
	doc(
		z
			.array(
				z
					.string({ error: rule((input) => `must hold column names, received ${typeName(input)}.`) })
					.refine((name) => name.trim() !== '' && name.trim().length <= MAX_COLUMN_NAME, {
						error: rule(`must hold column names of 1 to ${MAX_COLUMN_NAME} characters.`),
					})
					.transform((name) => name.trim()),
				{ error: rule((input) => `must be an array of column names, received ${typeName(input)}.`) },
			)
			.max(MAX_TEMPLATE_COLUMNS, { error: rule(`may name at most ${MAX_TEMPLATE_COLUMNS} columns.`) })
			.nullish()
			.transform((names) => (names ? [...new Set(names)] : undefined)),
		{ description, examples: [examples] },
	);

const ImportTemplateSchema = z
	.strictObject(
		{
			route: templateRoute,
			title: doc(templateText(), { examples: ['{service} in {city}'] }),
			primary_keyword: doc(optionalTemplateText(), { examples: ['{service} {city}'] }),
			priority: doc(
				z
					.union([z.number(), z.string().regex(/^\s*\{[^{}]+\}\s*$/, { error: priorityError })], { error: priorityError })
					.nullish()
					.transform((value) => value ?? undefined),
				{ description: 'A number, or `{column}`.' },
			),
			cluster: doc(optionalTemplateText(), { examples: ['{service}'] }),
			facts: columnList(
				'The columns each page\'s `facts` are taken from (its own data, which the page is written from and checked against); every column of the row when absent, none when empty. Values keep their type: CSV values are strings.',
				['city', 'population', 'average_price_eur'],
			),
			required: columnList('Columns that must hold a value: a row without one is skipped and counted under `skipped.missing_data`.', ['average_price_eur']),
			hub: doc(
				z
					.strictObject(
						{ route: templateRoute, title: doc(templateText(), { examples: ['{service} services'] }) },
						{ error: objectError('"template.hub" must be an object with "route" and "title".', (keys) => `Unknown template.hub field(s): ${keys}.`) },
					)
					.nullish()
					.transform((value) => value ?? undefined),
				{
					description:
						'A hub page per distinct value of its placeholders (`page_type: "hub"`), the `parent_route` of the pages of its set, generated before or with them; its published page ends with links to every page of its set on the website.',
					examples: [{ route: '/{service}', title: '{service} services' }],
				},
			),
		},
		{ error: objectError('"template" must be an object with "route" and "title".', (keys) => `Unknown template field(s): ${keys}.`) },
	)
	.transform((template): ImportTemplate => template);

const rows = doc(
	z
		.array(z.unknown(), { error: rule((input) => `must be an array of objects, received ${typeName(input)}.`) })
		.min(1, { error: rule('is empty.') })
		.max(MAX_IMPORT_ROWS, { error: (issue) => `"rows" has ${(issue.input as unknown[]).length} rows; at most ${MAX_IMPORT_ROWS} are allowed in one import.` })
		.nullish(),
	{
		description: 'Flat objects of column values (each is checked as it is read). Bounded by Directus\'s MAX_PAYLOAD_SIZE; use `file_id` for big imports.',
	},
);

const fileId = doc(
	doc(
		z
		.string({ error: rule((input) => `must be the id of a file, received ${JSON.stringify(input)}.`) })
		.regex(UUID, { error: rule((input) => `must be the id of a file, received ${JSON.stringify(input)}.`) }),
		{ format: 'uuid' },
	).nullish(),
	{ description: 'A file the caller uploaded: CSV with a header row, a JSON array of objects, or JSON Lines; at most 100,000 rows.' },
);

const MAX_COLLECTION_NAME = 64;

const collection = doc(
	doc(
		z
			.string({ error: rule((input) => `must be the name of a collection, received ${typeName(input)}.`) })
			.refine((name) => /^[A-Za-z0-9_-]+$/.test(name) && name.length <= MAX_COLLECTION_NAME, {
				error: rule((input) => `must be the name of a collection (letters, digits, "_" and "-", at most ${MAX_COLLECTION_NAME}), received ${JSON.stringify(input)}.`),
			}),
		{ maxLength: MAX_COLLECTION_NAME, examples: ['cities'] },
	).nullish(),
	{
		description:
			"A Directus collection to read the rows from, as the caller: one item a row, its fields (and those of many-to-one related items, by their path such as `country.name`) as the row's columns. A collection the caller cannot read is a 403. At most 100,000 items.",
	},
);

const filter = doc(
	z
		.record(z.string(), z.unknown(), { error: rule((input) => `must be a Directus filter object, received ${typeName(input)}.`) })
		.nullish(),
	{
		description: 'With `collection`: a filter object as the items API takes it (`{"country": {"code": {"_eq": "ES"}}}`); only the items it matches are read.',
		examples: [{ status: { _eq: 'published' } }],
	},
);

/** The import's `source`: a name of 1 to 100 characters (Unicode code points) after trimming. */
const importSource = doc(
	doc(
		z
			.string({ error: rule((input) => `must be a name of 1 to ${MAX_SOURCE_LENGTH} characters, received ${typeName(input)}.`) })
			.refine((value) => !value.includes('\u0000'), { error: rule('must not contain NUL characters.'), abort: true })
			.refine(
				(value) => {
					const length = codePointLength(value.trim());
					return length >= 1 && length <= MAX_SOURCE_LENGTH;
				},
				{ error: rule((input) => `must be a name of 1 to ${MAX_SOURCE_LENGTH} characters (after trimming), received ${codePointLength(String(input).trim())}.`) },
			)
			.transform((value) => value.trim()),
		{ minLength: 1, maxLength: MAX_SOURCE_LENGTH, examples: ['price-list'] },
	).nullish(),
	{
		default: DEFAULT_SOURCE,
		description:
			'The data\'s name, recorded on the pages it adds. A `sync` touches only the pages of its own source: those an earlier import of the same `source` added.',
	},
);

/** The body of POST /plan/import: a template crossed with `rows`, a file of the library or a collection, exactly one of the three. */
const PlanImportRequest = named(
	'PlanImportRequest',
	z
		.strictObject(
			{
				pseo_id: Identifier,
				language_code: languageCode('The plan\'s locale, as for 4.8.'),
				template: ImportTemplateSchema,
				rows,
				file_id: fileId,
				collection,
				filter,
				mode: doc(
					z.enum(['append', 'replace', 'sync'], { error: rule((input) => `must be "append", "replace" or "sync", received ${JSON.stringify(input)}.`) }).nullish(),
					{
						default: 'append',
						description:
							'`append` adds the routes the plan lacks; `replace` empties the plan first; `sync` treats the data as the whole truth of its `source`: new routes are added, pages of that source whose data changed are updated (their posts marked stale), and those no row produces any more are retired.',
					},
				),
				source: importSource,
				follow: doc(z.boolean({ error: rule((input) => `must be true or false, received ${typeName(input)}.`) }).nullish(), {
					description:
						'`true` (with `collection` and `mode: "sync"`): the website follows the collection from now on. An item created, changed or deleted (through the app, the items API, GraphQL or a Flow that emits events) syncs its page within `PSEO_SOURCE_SYNC_DELAY_MS`, read with the website owner\'s permissions; the state is on the website\'s `data_source_state`. `false`: the website stops following. Absent: the following stays as it is.',
				}),
			},
			{ error: objectError('The request body must be a JSON object with "pseo_id", "language_code", "template" and "rows", "file_id" or "collection".') },
		)
		.refine((body) => [body.rows, body.file_id, body.collection].filter((given) => given !== undefined && given !== null).length === 1, {
			error: 'Give exactly one of "rows" (an array of objects), "file_id" (a CSV, JSON or JSON Lines file) and "collection" (a Directus collection).',
		})
		.refine((body) => body.filter === undefined || body.filter === null || (body.collection !== undefined && body.collection !== null), {
			error: '"filter" applies to a "collection" only.',
		})
		.refine((body) => body.follow !== true || (typeof body.collection === 'string' && body.mode === 'sync'), {
			error: '"follow": true needs a "collection" and "mode": "sync" (a followed collection is the whole truth of its source).',
		})
		.transform(
			(body): ImportRequest => ({
				pseoId: body.pseo_id,
				languageCode: body.language_code,
				template: body.template,
				data: body.file_id ? { fileId: body.file_id.toLowerCase() } : body.collection ? { collection: body.collection, filter: body.filter ?? null } : { rows: body.rows! },
				mode: body.mode ?? 'append',
				source: body.source ?? DEFAULT_SOURCE,
				follow: body.follow ?? null,
			}),
		),
	{
		description:
			'A plan from data: a template crossed with `rows`, with a file of the Directus file library (`file_id`), or with the items of a Directus collection (`collection`, read with the caller\'s permissions), exactly one of the three. Unknown fields are refused with 400.',
	},
);

const PlanPage = named(
	'PlanPage',
	z.strictObject({
		route: doc(z.string().regex(/^\//), { description: 'Lower-case slug path, unique in the plan.', examples: ['/sourdough-bread'] }),
		title: z.string(),
		priority: doc(z.number().min(0).max(100), { description: 'Business value; pages are listed highest first.' }),
		primary_keyword: z.string(),
		search_intent: z.enum(SEARCH_INTENTS),
		page_type: z.enum(PAGE_TYPES),
		parent_route: doc(z.string().regex(/^\//).nullable(), { description: 'The hub page above this one, or null.' }),
		cluster: doc(z.string(), { description: 'Slug of the topical cluster.' }),
	}),
	{ description: 'One page of a content plan (interface 2.3), with its SEO metadata.' },
);

const ContentPlan = named('ContentPlan', z.strictObject({ pages: z.array(PlanPage) }), { description: 'The `main_json` of a website (interface 2.3).' });

const DESCRIPTION_EXAMPLE =
	'An artisan bakery in Leeds baking sourdough, rye and celebration cakes to order. We sell in our shop and deliver to cafes. We want more local customers to find our breads, order cakes online and book our baking classes.';

/** 4.8 POST /generate/main-json. */
export const generateContentPlanRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/generate/main-json',
	operationId: 'generateContentPlan',
	tag: 'Content plans',
	summary: 'Generate a website\'s content plan (4.8)',
	description:
		'Charges `token_per_main_json`, asks the AI for a plan that avoids the routes the website already has, and stores it as the website\'s current plan. Synchronous: it can take a minute.',
	body: PlanRequestBody,
	examples: { bakery: { summary: 'The plan of website 1, in British English', body: { pseo_id: 1, language_code: 'en-GB', description: DESCRIPTION_EXAMPLE } } },
	responses: {
		200: {
			description: 'The plan.',
			schema: success(
				'PlanResponse',
				{ message: message(), data: z.strictObject({ main_json: ContentPlan, total_pages: z.int().min(1) }) },
				'Interface 4.8: the plan is generated and stored as the website\'s current plan.',
			),
		},
	},
	errors: [400, 401, 402, 403, [404, 'The website does not exist.'], [409, 'A content plan of this user is already being generated.'], 502],
});

/** The import's examples: a price list, first imported, then synced. */
const PRICE_LIST = {
	pseo_id: 1,
	language_code: 'en-GB',
	source: 'price-list',
	template: {
		route: '/{service}/{city}',
		title: '{service} in {city}',
		primary_keyword: '{service} {city}',
		priority: 60,
		cluster: '{service}',
		facts: ['city', 'price_from_gbp', 'delivery_days'],
		required: ['price_from_gbp'],
	},
	rows: [
		{ service: 'Wedding cakes', city: 'Leeds', price_from_gbp: 240, delivery_days: 2 },
		{ service: 'Wedding cakes', city: 'York', price_from_gbp: 260, delivery_days: 3 },
		{ service: 'Sourdough classes', city: 'Leeds', price_from_gbp: 45, delivery_days: null },
	],
};

/** POST /plan/import. */
export const importContentPlanRoute = defineRoute({
	method: 'post',
	idempotent: true,
	path: '/plan/import',
	operationId: 'importContentPlan',
	tag: 'Content plans',
	summary: 'Add or sync plan pages from data (rows or a CSV, JSON or JSON Lines file)',
	description:
		'Each row gives one plan page through the template, with the row\'s columns as the page\'s `facts` (or those `template.facts` lists). Rows without a value for a `template.required` column, or for a placeholder, or with an invalid route, are skipped and counted; so are routes repeated in the data, already in the plan (in `sync`: from another source, an AI plan or an editor) or, for a route the plan lacks, on the website\'s sitemap. A template that names a column the data does not have at all (in a placeholder, `facts` or `required`) is a 400 naming it and listing the data\'s columns. `mode: "sync"` matches the rows to the pages of its `source` by route: it adds the routes the plan lacks, updates the pages whose data changed (marking their posts stale), and retires the pages no row produces any more (never generated again; their posts marked `retired`); a retired page whose row comes back is revived. Charges `PSEO_TOKEN_PER_IMPORTED_PAGE` per added page (default 0); updates are free. Takes part in the per-user plan lock.',
	body: PlanImportRequest,
	examples: {
		rows: { summary: 'Services crossed with cities, given inline', body: PRICE_LIST },
		sync: {
			summary: 'The same price list again, as the whole truth of its source: a changed price updates its page, a missing row retires its page',
			body: { ...PRICE_LIST, mode: 'sync', rows: [{ ...PRICE_LIST.rows[0]!, price_from_gbp: 250 }, PRICE_LIST.rows[1]!] },
		},
	},
	responses: {
		200: {
			description: 'What was added, updated, left unchanged, retired and skipped.',
			schema: success(
				'PlanImportResponse',
				{
					message: message(),
					data: z.strictObject({
						total_pages: doc(count(), { description: 'Pages in the website\'s plan after the import.' }),
						added: doc(count(), { description: 'Pages of routes the plan lacked; each is charged.' }),
						updated: doc(count(), { description: '`sync`: pages of the source whose data changed (their posts marked stale when the change reaches the text), or whose row came back after they were retired. Free. 0 in the other modes.' }),
						unchanged: doc(count(), { description: '`sync`: pages of the source whose row says nothing new. 0 in the other modes.' }),
						retired: doc(count(), { description: '`sync`: pages of the source that no row produces any more: never generated again, their posts marked `retired`. 0 in the other modes.' }),
						skipped: z.strictObject({
							duplicate: doc(count(), { description: 'Repeated in the data, or already in the plan (in `sync`: from another source, an AI plan or an editor).' }),
							on_site: doc(count(), { description: 'Already on the website\'s sitemap (in `sync`: only routes the plan lacks are checked).' }),
							invalid: doc(count(), { description: 'A placeholder without a value, or an invalid route or priority.' }),
							missing_data: doc(count(), { description: 'A column of `template.required` without a value.' }),
						}),
					}),
				},
				'The import is stored whole: the pages, the posts it marks stale or retired, the charge and the plan record in one transaction.',
			),
		},
	},
	errors: [
		[400, 'A bad body (such as a `mode` other than `append`, `replace` or `sync`, or a `source` that is not a name of 1 to 100 characters), a row that is not a flat object (the message names the row), or a template naming a column the data does not have (the message names it and lists the data\'s columns).'],
		401,
		402,
		[403, 'The website or the file belongs to another user.'],
		[404, 'The website or the file does not exist.'],
		[409, 'A content plan of this user is already being generated or imported.'],
	],
});
