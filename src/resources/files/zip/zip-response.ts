// The answer that carries a zip, for the owner's zips (zip.routes.ts) and a folder link's Download all
// (shares/folder-share-pages.routes.ts).
import type { FastifyReply } from 'fastify'
import { contentDisposition, DOWNLOAD_SAFETY_HEADERS } from '../download.ts'
import type { ZipArchive } from './zip.service.ts'

/** Sends the archive: the download's safety headers, its name, and its length when known. */
export function sendZip(reply: FastifyReply, archive: ZipArchive): FastifyReply {
  reply.headers({
    ...DOWNLOAD_SAFETY_HEADERS,
    // Built afresh for each request and possibly gigabytes: nothing to keep.
    'cache-control': 'no-store',
    'content-type': 'application/zip',
    'content-disposition': contentDisposition('attachment', archive.fileName),
  })
  if (archive.length !== undefined) reply.header('content-length', archive.length)
  return reply.send(archive.stream)
}
