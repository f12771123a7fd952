import type { ServiceContext } from '../shared/services.ts';
import { ForbiddenError, NotFoundError } from '../errors/index.ts';
import type { OpenedFile } from './import-source.ts';

/**
 * Opens a file of Directus's file library for a plan import, as a stream. The caller must have uploaded it: the
 * pSEO policy grants no access to the file library (the Core licence cannot narrow it to one's own files), so
 * the extension checks the uploader itself and then reads the file with the assets service's full access, the
 * way it reads any row it has checked.
 */
export function libraryFileOpener(context: ServiceContext): (fileId: string, userId: string) => Promise<OpenedFile> {
	const { database, services } = context;
	return async (fileId, userId) => {
		const row = (await database('directus_files').where('id', fileId).first('id', 'uploaded_by', 'type', 'filename_download')) as
			| { id: string; uploaded_by: string | null; type: string | null; filename_download: string | null }
			| undefined;
		if (!row) throw new NotFoundError({ resource: 'File', id: fileId });
		if (row.uploaded_by !== userId) throw new ForbiddenError({ resource: 'File', id: fileId });
		const schema = await context.getSchema({ database });
		const assets = new services.AssetsService({ knex: database, schema, accountability: null });
		const { stream } = (await assets.getAsset(fileId, undefined)) as { stream: OpenedFile['stream'] };
		return { stream, type: row.type, filename: row.filename_download };
	};
}
