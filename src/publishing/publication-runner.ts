import type { Knex } from 'knex';
import type { PseoConfig } from '../config/config.ts';
import { clustersOf, hubSets } from '../plan/plan-page-store.ts';
import { markPublished, markTakenDown, publishedUrls, readPostForPublishing, routesOfPostIds, takedownOf, type PostForPublishing } from '../posts/post-publishing.ts';
import { faultPoint } from '../shared/fault-injection.ts';
import type { Logger } from '../shared/logger.ts';
import { transact } from '../shared/transaction.ts';
import { readWebsite } from '../websites/website-store.ts';
import { OutboundError, type OutboundClient } from './outbound-client.ts';
import { addNotice, enterLinksPhase, finishPublication, publicationProgressed, recordPostStep, type PostOutcome, type PublicationRecord } from './publication-store.ts';
import { markerComment, publishedHash, renderPost, slugOf, type FactsDisplay, type RenderedPost } from './render-post.ts';
import { createSecretBox } from './secret-box.ts';
import { readTarget, type TargetRow } from './target-store.ts';
import { deliverWebhook, WebhookRefusedError } from './webhook-delivery.ts';
import { createWordPressClient, WordPressError, type PostPayload, type StructuredDataRoute, type WordPressClient } from './wordpress-client.ts';

/*
 * Runs one publication from where it stopped. Phase `publish` sends each post in order: a post the site already
 * has in this version is skipped; a post with a remote id is updated; any other is first looked for on the site by
 * its marker (a create whose answer was lost to a crash left it there) and adopted, and only then created. The
 * post's remote state and the publication's count move together in one transaction, so a crash anywhere repeats
 * at most the remote call, never a count or a post. Phase `links` (WordPress) renders each published post again
 * now that every page of the publication has its URL, and updates those whose links changed.
 */

export interface PublicationDeps {
	database: Knex;
	logger: Logger;
	config: PseoConfig;
	http: OutboundClient;
	worker: string;
	signal: AbortSignal;
	/** Directus's SECRET, from which the secrets' key is derived. */
	instanceSecret: string | undefined;
}

interface Site {
	target: TargetRow;
	secret: string;
	websiteUrl: string;
	factsDisplay: FactsDisplay;
	wordpress: WordPressClient | null;
	/** WordPress: where a page's JSON-LD goes (a webhook gets it in the payload). */
	structuredData: StructuredDataRoute | null;
	urls: Map<string, string>;
	inPublication: Set<string>;
	clusters: Map<string, string>;
	/** The pages of each hub of the publication that have a post, for the hub's link list. */
	hubSets: Map<string, { route: string; title: string }[]>;
}

/**
 * The target could not take a step now (no answer, a 5xx or a 429 after the client's own retries): the step fails,
 * and the publication is resumed at the same post after a back-off (publication-runtime.ts), since a takedown left
 * undone would leave a retired page on the site.
 */
export class TargetUnavailableError extends Error {
	constructor(message: string) {
		super(message);
		this.name = 'TargetUnavailableError';
	}
}

export async function runPublication(publication: PublicationRecord, deps: PublicationDeps): Promise<void> {
	const { database, worker } = deps;
	const site = await openSite(publication, deps);
	if (typeof site === 'string') {
		await finishPublication(database, publication.id, worker, 'failed', site);
		return;
	}
	if (publication.phase === 'takedown') {
		while (publication.cursor < publication.postIds.length) {
			deps.signal.throwIfAborted();
			await takedownStep(publication, site, deps);
		}
		await finishPublication(database, publication.id, worker, 'completed', null);
		deps.logger.info({ publicationId: publication.id, pseoId: publication.pseoId }, 'pseo takedown completed');
		return;
	}
	if (publication.phase === 'publish') {
		while (publication.cursor < publication.postIds.length) {
			deps.signal.throwIfAborted();
			await publishStep(publication, site, deps);
		}
		if (site.target.target === 'wordpress') await enterLinksPhase(database, publication, worker);
	}
	if (publication.phase === 'links') {
		while (publication.cursor < publication.postIds.length) {
			deps.signal.throwIfAborted();
			await relinkStep(publication, site, deps);
		}
	}
	await finishPublication(database, publication.id, worker, 'completed', null);
	deps.logger.info({ publicationId: publication.id, pseoId: publication.pseoId }, 'pseo publication completed');
}

async function openSite(publication: PublicationRecord, deps: PublicationDeps): Promise<Site | string> {
	const target = await readTarget(deps.database, publication.pseoId);
	if (!target) return 'The website has no publishing target any more.';
	if (target.target !== publication.target) return `The website's publishing target changed from ${publication.target} to ${target.target}; publish again.`;
	const instanceSecret = deps.instanceSecret;
	let secret: string;
	try {
		if (!instanceSecret) throw new Error('no SECRET');
		secret = createSecretBox(instanceSecret).open(target.sealedSecret);
	} catch {
		return 'The stored secret cannot be read with this instance\'s SECRET; save the publishing target again.';
	}
	const website = await readWebsite(deps.database, publication.pseoId);
	const wordpress =
		target.target === 'wordpress' ? createWordPressClient(deps.http, { url: target.url, username: target.username ?? '', applicationPassword: secret }, deps.signal) : null;
	const inPublication = await routesOfPostIds(deps.database, publication.pseoId, publication.postIds);
	let structuredData: StructuredDataRoute | null = null;
	if (wordpress && publication.phase !== 'takedown') {
		try {
			structuredData = await wordpress.structuredDataRoute();
		} catch (error) {
			const reason = describe(error);
			if (reason === null) throw error;
			return reason;
		}
	}
	return {
		target,
		secret,
		websiteUrl: website?.website_url ?? target.url,
		factsDisplay: website?.facts_display ?? 'table',
		wordpress,
		structuredData,
		urls: wordpress ? await publishedUrls(deps.database, publication.pseoId) : new Map(),
		inPublication,
		clusters: await clustersOf(deps.database, publication.pseoId, [...inPublication]),
		hubSets: await hubSets(deps.database, publication.pseoId, [...inPublication]),
	};
}

/**
 * Where a link to `route` points. WordPress: the URL WordPress gave the page; a page of this publication not
 * published yet links to its route on the website until the links phase; any other page is left as text, so no
 * published page links to a page the site does not have. Webhook: the route on the website, which the receiver
 * serves.
 */
function resolverOf(site: Site) {
	const onWebsite = (route: string) => new URL(route, site.websiteUrl.endsWith('/') ? site.websiteUrl : `${site.websiteUrl}/`).href;
	if (!site.wordpress) return onWebsite;
	return (route: string) => site.urls.get(route) ?? (site.inPublication.has(route) ? onWebsite(route) : null);
}

/** Status and date of the post at `index`: a schedule spreads posts as future posts, `per_day` a day. */
function placementOf(publication: PublicationRecord, site: Site, index: number): { status: string; date: string | null } {
	if (publication.schedule) {
		const start = Date.parse(publication.schedule.start);
		const day = Math.floor(index / publication.schedule.per_day);
		return { status: 'future', date: new Date(start + day * 86_400_000).toISOString().slice(0, 19) };
	}
	return { status: publication.publishStatus ?? site.target.defaultStatus ?? 'draft', date: null };
}

function render(post: PostForPublishing, site: Site): RenderedPost {
	return renderPost({ ...post, cluster: site.clusters.get(post.route) ?? null }, resolverOf(site), {
		factsDisplay: site.factsDisplay,
		structuredData: site.structuredData?.kind === 'script' ? 'script' : 'none',
		hubSet: site.hubSets.get(post.route),
	});
}

async function publishStep(publication: PublicationRecord, site: Site, deps: PublicationDeps): Promise<void> {
	const cursor = publication.cursor;
	const postId = publication.postIds[cursor]!;
	const post = await readPostForPublishing(deps.database, postId);
	if (!post || post.pseoId !== publication.pseoId) {
		await step(deps, publication, { cursor, outcome: 'failed', failed: { post_id: postId, route: post?.route ?? '', error: 'The post no longer exists.' } });
		return;
	}
	if (post.retired) {
		// Its row left its data: a takedown of its own removes it from the site; it is published again once the row is back.
		await step(deps, publication, { cursor, outcome: 'failed', failed: { post_id: postId, route: post.route, error: RETIRED_POST } });
		return;
	}
	const placement = placementOf(publication, site, cursor);
	const rendered = render(post, site);
	const hash = publishedHash(rendered, placement, structuredMeta(site, post));
	if (site.structuredData?.kind === 'none' && post.structuredData) {
		// Never dropped silently: the owner learns it once per publication.
		await addNotice(deps.database, publication, deps.worker, STRUCTURED_DATA_LEFT_OUT);
	}
	if (post.publishedHash === hash && (post.remoteId !== null || !site.wordpress)) {
		await step(deps, publication, { cursor, outcome: 'unchanged' });
		return;
	}
	let result: { outcome: PostOutcome; remoteId: string | null; remoteUrl: string | null };
	try {
		result = site.wordpress
			? await sendToWordPress(site.wordpress, post, rendered, placement, structuredMeta(site, post))
			: await sendToWebhook(site, post, rendered, placement, hash, deps);
	} catch (error) {
		if (deps.signal.aborted) throw error;
		const reason = describe(error);
		if (reason === null) throw error;
		deps.logger.warn({ publicationId: publication.id, postId, route: post.route, reason }, 'pseo publication: a post could not be published');
		await step(deps, publication, { cursor, outcome: 'failed', failed: { post_id: postId, route: post.route, error: reason } });
		return;
	}
	if (result.outcome === 'created' && site.wordpress) faultPoint('after-remote-create');
	await transact(
		deps.database,
		async (trx) => {
			await markPublished(trx, post.id, { remoteId: result.remoteId, remoteUrl: result.remoteUrl, hash });
			await recordPostStep(trx, publication, deps.worker, { cursor, outcome: result.outcome });
		},
		{ logger: deps.logger, what: 'publication progress', context: { publicationId: publication.id, postId } },
	);
	publicationProgressed(publication.id);
	if (result.remoteUrl) site.urls.set(post.route, result.remoteUrl);
}

async function relinkStep(publication: PublicationRecord, site: Site, deps: PublicationDeps): Promise<void> {
	const cursor = publication.cursor;
	const post = await readPostForPublishing(deps.database, publication.postIds[cursor]!);
	const wordpress = site.wordpress!;
	if (post?.remoteId && post.pseoId === publication.pseoId && !post.retired && takedownOf(post.publishedHash) === null) {
		const placement = placementOf(publication, site, cursor);
		const rendered = render(post, site);
		const meta = structuredMeta(site, post);
		const hash = publishedHash(rendered, placement, meta);
		if (hash !== post.publishedHash) {
			try {
				const updated = await wordpress.updatePost(Number(post.remoteId), await payloadOf(wordpress, rendered, placement, meta));
				if (updated) {
					await transact(
						deps.database,
						async (trx) => {
							await markPublished(trx, post.id, { remoteId: String(updated.id), remoteUrl: updated.link, hash });
							await recordPostStep(trx, publication, deps.worker, { cursor, outcome: null });
						},
						{ logger: deps.logger, what: 'publication links', context: { publicationId: publication.id, postId: post.id } },
					);
					publicationProgressed(publication.id);
					return;
				}
			} catch (error) {
				const reason = describe(error);
				if (deps.signal.aborted || reason === null) throw error;
				// The post itself is on the site; only its links wait for the next publication.
				deps.logger.warn({ publicationId: publication.id, postId: post.id, reason }, 'pseo publication: links of a post could not be updated');
			}
		}
	}
	await step(deps, publication, { cursor, outcome: null });
}

async function step(deps: PublicationDeps, publication: PublicationRecord, change: Parameters<typeof recordPostStep>[3]): Promise<void> {
	await transact(deps.database, (trx) => recordPostStep(trx, publication, deps.worker, change), {
		logger: deps.logger,
		what: 'publication progress',
		context: { publicationId: publication.id },
	});
	publicationProgressed(publication.id);
}

/** Why a publication left a retired post out. */
const RETIRED_POST = 'The post is retired: no row of its data produces its page any more, so it is not published.';

/**
 * Takes one retired post down: WordPress keeps it as a draft (never deleted, so it comes back in place, under the
 * same id, when its row does); a webhook receives a signed `post.unpublished` event. A post whose row came back
 * before the step ran is left as it is. The site's answer and the cursor move together, as a publication's do.
 */
async function takedownStep(publication: PublicationRecord, site: Site, deps: PublicationDeps): Promise<void> {
	const cursor = publication.cursor;
	const postId = publication.postIds[cursor]!;
	const post = await readPostForPublishing(deps.database, postId);
	if (!post || post.pseoId !== publication.pseoId || !post.retired) {
		await step(deps, publication, { cursor, outcome: 'unchanged' });
		return;
	}
	try {
		if (site.wordpress) {
			// A post the site no longer has (deleted, binned) is down already.
			if (post.remoteId) await site.wordpress.setStatus(Number(post.remoteId), 'draft');
		} else {
			await deliverWebhook(
				deps.http,
				{
					url: site.target.url,
					secret: site.secret,
					idempotencyKey: `pseo-${post.pseoId}-${post.id}-unpublished-${publication.id}`,
					payload: {
						event: 'post.unpublished',
						website: { id: post.pseoId, url: site.websiteUrl },
						post: { id: post.id, route: post.route, slug: slugOf(post.route), url: resolverOf(site)(post.route) },
					},
				},
				{ maxAttempts: deps.config.publishing.maxAttempts, backoffBaseMs: deps.config.publishing.backoffMs, signal: deps.signal },
			);
		}
	} catch (error) {
		if (deps.signal.aborted) throw error;
		const reason = describe(error);
		if (reason === null) throw error;
		if (!(error instanceof WordPressError) || error.status === 429 || error.status >= 500) throw new TargetUnavailableError(reason);
		// WordPress refused for good (this user may not edit the post any more): listed, as a publication's failures are.
		deps.logger.warn({ publicationId: publication.id, postId, route: post.route, reason }, 'pseo takedown: a post could not be taken down');
		await step(deps, publication, { cursor, outcome: 'failed', failed: { post_id: postId, route: post.route, error: reason } });
		return;
	}
	await transact(
		deps.database,
		async (trx) => {
			await markTakenDown(trx, post.id, publication.id);
			await recordPostStep(trx, publication, deps.worker, { cursor, outcome: 'updated' });
		},
		{ logger: deps.logger, what: 'takedown progress', context: { publicationId: publication.id, postId } },
	);
	publicationProgressed(publication.id);
}

/** The notice of a WordPress publication whose user may not publish raw HTML, on a site without a field for JSON-LD. */
const STRUCTURED_DATA_LEFT_OUT =
	'The structured data (JSON-LD) was left out: this WordPress user may not publish raw HTML (unfiltered_html), and the site exposes no SEO plugin field for it over REST.';

/** WordPress: the meta field a post's JSON-LD goes in, when that is the site's way. */
function structuredMeta(site: Site, post: PostForPublishing): Record<string, string> {
	return site.structuredData?.kind === 'meta' && post.structuredData ? { [site.structuredData.key]: JSON.stringify(post.structuredData) } : {};
}

async function payloadOf(
	wordpress: WordPressClient,
	rendered: RenderedPost,
	placement: { status: string; date: string | null },
	structured: Record<string, string> = {},
): Promise<PostPayload> {
	const categories = await Promise.all(rendered.categories.map((name) => wordpress.categoryId(name)));
	const meta = { ...(await wordpress.seoMeta(rendered.metaTitle, rendered.metaDescription)), ...structured };
	return {
		title: rendered.title,
		slug: rendered.slug,
		content: rendered.content,
		excerpt: rendered.excerpt,
		status: placement.status,
		...(placement.date ? { date_gmt: placement.date } : {}),
		...(categories.length > 0 ? { categories } : {}),
		...(Object.keys(meta).length > 0 ? { meta } : {}),
	};
}

async function sendToWordPress(
	wordpress: WordPressClient,
	post: PostForPublishing,
	rendered: RenderedPost,
	placement: { status: string; date: string | null },
	structured: Record<string, string>,
): Promise<{ outcome: PostOutcome; remoteId: string; remoteUrl: string }> {
	const payload = await payloadOf(wordpress, rendered, placement, structured);
	if (post.remoteId) {
		const updated = await wordpress.updatePost(Number(post.remoteId), payload);
		if (updated) return { outcome: 'updated', remoteId: String(updated.id), remoteUrl: updated.link };
	}
	// No remote post on record, or it is gone: a create lost to a crash may have left one carrying the marker.
	const adopted = await wordpress.findByMarker(rendered.marker, markerComment(rendered.marker));
	if (adopted) {
		const updated = await wordpress.updatePost(adopted.id, payload);
		if (updated) return { outcome: 'created', remoteId: String(updated.id), remoteUrl: updated.link };
	}
	const created = await wordpress.createPost(payload);
	return { outcome: 'created', remoteId: String(created.id), remoteUrl: created.link };
}

async function sendToWebhook(
	site: Site,
	post: PostForPublishing,
	rendered: RenderedPost,
	placement: { status: string; date: string | null },
	hash: string,
	deps: PublicationDeps,
): Promise<{ outcome: PostOutcome; remoteId: null; remoteUrl: null }> {
	const takenDown = takedownOf(post.publishedHash);
	// A post taken down (its row had left its data) is created again at the receiver, as it was the first time.
	const created = post.publishedHash === null || takenDown !== null;
	await deliverWebhook(
		deps.http,
		{
			url: site.target.url,
			secret: site.secret,
			// After a takedown, the same version is a new delivery: the receiver did the first one, then the unpublishing.
			idempotencyKey: `pseo-${post.pseoId}-${post.id}-${hash.slice(0, 32)}${takenDown === null ? '' : `-after-${takenDown}`}`,
			payload: {
				event: created ? 'post.created' : 'post.updated',
				website: { id: post.pseoId, url: site.websiteUrl },
				post: {
					id: post.id,
					route: post.route,
					slug: slugOf(post.route),
					url: resolverOf(site)(post.route),
					title: rendered.title,
					h1: post.h1,
					meta_title: rendered.metaTitle,
					meta_description: rendered.metaDescription,
					excerpt: rendered.excerpt,
					html: rendered.content,
					markdown: post.body,
					faq: post.faq,
					facts: post.facts,
					structured_data: post.structuredData,
					categories: rendered.categories,
					status: placement.status,
					date: placement.date ? `${placement.date}Z` : null,
					version: hash,
				},
			},
		},
		{ maxAttempts: deps.config.publishing.maxAttempts, backoffBaseMs: deps.config.publishing.backoffMs, signal: deps.signal },
	);
	return { outcome: created ? 'created' : 'updated', remoteId: null, remoteUrl: null };
}

/** Why a post failed, for failed_posts; null for a fault that is not the post's (the database, a lost lease). */
function describe(error: unknown): string | null {
	if (error instanceof WordPressError) return `WordPress: ${error.message} (${error.code}, HTTP ${error.status})`;
	if (error instanceof WebhookRefusedError) return `Webhook: ${error.message}`;
	if (error instanceof OutboundError) return `The site could not be reached: ${error.message}`;
	return null;
}
