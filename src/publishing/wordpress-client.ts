import type { OutboundClient, OutboundResponse } from './outbound-client.ts';

/*
 * WordPress's REST API (wp/v2) with an Application Password (WordPress 5.6 and later) as Basic auth. The API root
 * is discovered from the site's `Link: <...>; rel="https://api.w.org/"` header, because a site without pretty
 * permalinks serves it at `/?rest_route=/` rather than `/wp-json/`.
 */

export interface WordPressCredentials {
	url: string;
	username: string;
	applicationPassword: string;
}

/** What WordPress said when it refused a call: its HTTP status, its error code and message. */
export class WordPressError extends Error {
	readonly status: number;
	readonly code: string;
	constructor(status: number, code: string, message: string) {
		super(message);
		this.name = 'WordPressError';
		this.status = status;
		this.code = code;
	}
}

interface RemotePost {
	id: number;
	link: string;
	slug: string;
	status: string;
	content: string;
}

export interface PostPayload {
	title: string;
	slug: string;
	content: string;
	excerpt: string;
	status: string;
	/** UTC, for a scheduled (`future`) post. */
	date_gmt?: string;
	categories?: number[];
	meta?: Record<string, string>;
}

/**
 * Post meta fields that take a page's JSON-LD, when a site registers one with show_in_rest (an SEO plugin's, or a
 * site's own); the first exposed is used.
 */
const STRUCTURED_DATA_META = ['_yoast_wpseo_schema', 'rank_math_schema', 'pseo_structured_data'] as const;

/** How a site takes a page's structured data: in the content, in a meta field, or not at all. */
export type StructuredDataRoute = { kind: 'script' } | { kind: 'meta'; key: string } | { kind: 'none' };

/** SEO plugin fields a site exposes over REST (Yoast's or Rank Math's, when registered with show_in_rest). */
const SEO_META = {
	title: ['_yoast_wpseo_title', 'rank_math_title'],
	description: ['_yoast_wpseo_metadesc', 'rank_math_description'],
} as const;

export interface WordPressClient {
	/** Checks the credentials: the user exists and may create posts (and publish them, when `publish` is asked). */
	verify(options: { publish: boolean }): Promise<void>;
	/** The post whose content carries `comment` (found by searching for `marker`), if the site has one. */
	findByMarker(marker: string, comment: string): Promise<RemotePost | null>;
	createPost(payload: PostPayload): Promise<RemotePost>;
	/** Updates a post; null when the site no longer has it. */
	updatePost(id: number, payload: PostPayload): Promise<RemotePost | null>;
	/** Sets a post's status alone (`draft` takes it off the site, keeping it); null when the site no longer has it. */
	setStatus(id: number, status: string): Promise<RemotePost | null>;
	/** The id of the category named `name`, created when missing. */
	categoryId(name: string): Promise<number>;
	/** The `meta` a post carries for its SEO title and description, for the plugins the site exposes. */
	seoMeta(title: string | null, description: string | null): Promise<Record<string, string>>;
	/**
	 * Where a page's JSON-LD goes: a script block in the content when the user may publish raw HTML
	 * (`unfiltered_html`, which WordPress otherwise strips scripts without), else a meta field the site exposes.
	 */
	structuredDataRoute(): Promise<StructuredDataRoute>;
}

export function createWordPressClient(http: OutboundClient, credentials: WordPressCredentials, signal?: AbortSignal): WordPressClient {
	const site = credentials.url.replace(/\/+$/, '');
	const auth = `Basic ${Buffer.from(`${credentials.username}:${credentials.applicationPassword}`).toString('base64')}`;
	let apiRoot: Promise<string> | null = null;
	let exposedMeta: Promise<Set<string>> | null = null;
	let structuredRoute: Promise<StructuredDataRoute> | null = null;
	const categories = new Map<string, Promise<number>>();

	async function discover(): Promise<string> {
		const response = await http.send({ method: 'GET', url: `${site}/` }, signal);
		const link = response.headers.get('link') ?? '';
		const match = /<([^>]+)>\s*;\s*rel="https:\/\/api\.w\.org\/"/.exec(link);
		if (match) return match[1]!;
		if (response.status >= 400 && response.status !== 404) throw new WordPressError(response.status, 'site_unreachable', `the site answered HTTP ${response.status}`);
		return `${site}/?rest_route=/`;
	}

	async function endpoint(path: string, query: Record<string, string> = {}): Promise<string> {
		apiRoot ??= discover().catch((error: unknown) => {
			apiRoot = null;
			throw error;
		});
		const root = await apiRoot;
		const url = new URL(root);
		if (url.searchParams.has('rest_route')) url.searchParams.set('rest_route', `/${path}`);
		else url.pathname = `${url.pathname.replace(/\/+$/, '')}/${path}`;
		for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
		return url.href;
	}

	async function call(method: 'GET' | 'POST' | 'OPTIONS', path: string, body?: unknown, query?: Record<string, string>): Promise<OutboundResponse & { json: unknown }> {
		const response = await http.send(
			{ method, url: await endpoint(path, query), headers: { authorization: auth }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) },
			signal,
		);
		let json: unknown = null;
		try {
			json = response.text === '' ? null : JSON.parse(response.text);
		} catch {
			json = null;
		}
		return { ...response, json };
	}

	function refusal(response: OutboundResponse & { json: unknown }): WordPressError {
		const body = (response.json ?? {}) as { code?: unknown; message?: unknown };
		const code = typeof body.code === 'string' ? body.code : `http_${response.status}`;
		const message = typeof body.message === 'string' ? stripTags(body.message) : `WordPress answered HTTP ${response.status}`;
		return new WordPressError(response.status, code, message);
	}

	const toRemote = (json: unknown): RemotePost => {
		const post = json as { id: number; link: string; slug: string; status: string; content?: { raw?: string; rendered?: string } };
		return { id: Number(post.id), link: String(post.link), slug: String(post.slug), status: String(post.status), content: post.content?.raw ?? post.content?.rendered ?? '' };
	};

	return {
		async verify({ publish }) {
			const response = await call('GET', 'wp/v2/users/me', undefined, { context: 'edit' });
			if (response.status !== 200) throw refusal(response);
			const capabilities = ((response.json as { capabilities?: Record<string, boolean> }).capabilities ?? {}) as Record<string, boolean>;
			if (!capabilities['edit_posts']) throw new WordPressError(403, 'rest_cannot_create', 'this WordPress user may not create posts');
			if (publish && !capabilities['publish_posts']) throw new WordPressError(403, 'rest_cannot_publish', 'this WordPress user may not publish posts');
		},
		async findByMarker(marker, comment) {
			const response = await call('GET', 'wp/v2/posts', undefined, { search: marker, status: 'any', context: 'edit', per_page: '20', orderby: 'id', order: 'asc' });
			if (response.status !== 200) throw refusal(response);
			const found = (Array.isArray(response.json) ? response.json : []).map(toRemote).filter((post) => post.content.includes(comment));
			return found[0] ?? null;
		},
		async createPost(payload) {
			const response = await call('POST', 'wp/v2/posts', payload);
			if (response.status !== 201 && response.status !== 200) throw refusal(response);
			return toRemote(response.json);
		},
		async updatePost(id, payload) {
			const response = await call('POST', `wp/v2/posts/${id}`, payload, { context: 'edit' });
			if (response.status === 404 || response.status === 410) return null;
			if (response.status !== 200) throw refusal(response);
			const post = toRemote(response.json);
			// A post an editor moved to the bin is gone from the site even though WordPress still updates it.
			return post.status === 'trash' ? null : post;
		},
		async setStatus(id, status) {
			const response = await call('POST', `wp/v2/posts/${id}`, { status }, { context: 'edit' });
			if (response.status === 404 || response.status === 410) return null;
			if (response.status !== 200) throw refusal(response);
			const post = toRemote(response.json);
			return post.status === 'trash' ? null : post;
		},
		categoryId(name) {
			const key = name.trim().toLowerCase();
			let id = categories.get(key);
			if (!id) {
				id = findOrCreateCategory(name.trim());
				id.catch(() => categories.delete(key));
				categories.set(key, id);
			}
			return id;
		},
		structuredDataRoute() {
			structuredRoute ??= (async (): Promise<StructuredDataRoute> => {
				const me = await call('GET', 'wp/v2/users/me', undefined, { context: 'edit' });
				if (me.status !== 200) throw refusal(me);
				const capabilities = ((me.json as { capabilities?: Record<string, boolean> }).capabilities ?? {}) as Record<string, boolean>;
				if (capabilities['unfiltered_html']) return { kind: 'script' };
				const exposed = await metaKeys();
				const key = STRUCTURED_DATA_META.find((candidate) => exposed.has(candidate));
				return key ? { kind: 'meta', key } : { kind: 'none' };
			})().catch((error: unknown) => {
				structuredRoute = null;
				throw error;
			});
			return structuredRoute;
		},
		async seoMeta(title, description) {
			const exposed = await metaKeys();
			const meta: Record<string, string> = {};
			for (const key of SEO_META.title) if (exposed.has(key) && title) meta[key] = title;
			for (const key of SEO_META.description) if (exposed.has(key) && description) meta[key] = description;
			return meta;
		},
	};

	function metaKeys(): Promise<Set<string>> {
		exposedMeta ??= call('OPTIONS', 'wp/v2/posts').then((response) => {
			const properties = (response.json as { schema?: { properties?: { meta?: { properties?: Record<string, unknown> } } } } | null)?.schema?.properties?.meta?.properties;
			return new Set(Object.keys(properties ?? {}));
		});
		return exposedMeta;
	}

	async function findOrCreateCategory(name: string): Promise<number> {
		const found = await call('GET', 'wp/v2/categories', undefined, { search: name, per_page: '100', context: 'edit' });
		if (found.status !== 200) throw refusal(found);
		const match = (Array.isArray(found.json) ? found.json : []).find((category: { name?: string }) => decodeEntities(category.name ?? '').toLowerCase() === name.toLowerCase()) as
			| { id: number }
			| undefined;
		if (match) return Number(match.id);
		const created = await call('POST', 'wp/v2/categories', { name });
		if (created.status === 201 || created.status === 200) return Number((created.json as { id: number }).id);
		// Another request created it in between: WordPress names the existing term.
		const existing = (created.json as { code?: string; data?: { term_id?: number } } | null) ?? {};
		if (existing.code === 'term_exists' && existing.data?.term_id) return Number(existing.data.term_id);
		throw refusal(created);
	}
}

function stripTags(text: string): string {
	return decodeEntities(text.replace(/<[^>]*>/g, '')).trim();
}

function decodeEntities(text: string): string {
	return text
		.replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
		.replace(/&quot;/g, '"')
		.replace(/&#039;/g, "'")
		.replace(/&lt;/g, '<')
		.replace(/&gt;/g, '>')
		.replace(/&amp;/g, '&');
}
