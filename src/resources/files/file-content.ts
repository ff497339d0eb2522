// A file's bytes as every download serves them (download.ts): what the HTTP side needs of the file, and a way
// to open its blob only once the answer is settled. The API download (FilesService) and the public share
// link (PublicSharesService) both build it here, so a missing blob is treated the same way everywhere.
import type { Readable } from 'node:stream'
import { BlobNotFoundError, type BlobStore, type ByteRange } from '../../platform/blob/blob-store.ts'
import { AppError } from '../../platform/errors.ts'

/** What serving a file's bytes needs to know of it. */
export interface ServedFile {
  id: string
  name: string
  contentType: string
  size: number
  sha256: string | null
  createdAt: number
  blobKey: string
}

/** The bytes of a file, opened only when the caller is about to send them. */
export interface FileContent {
  file: ServedFile
  /** Streams the whole blob or the inclusive byte range; a blob missing from the store is a 404. */
  open(range?: ByteRange): Promise<Readable>
}

/** Where services report faults a client cannot act on (Fastify's request logger fits). */
export interface FaultLog {
  error(details: object, message: string): void
}

/**
 * The content of `file`, read from `blobs`. A row whose blob is missing is a fault of the store: it is
 * logged, and the client is told the contents are not found.
 */
export function fileContent(blobs: BlobStore, file: ServedFile, log: FaultLog): FileContent {
  return {
    file,
    open: async (range) => {
      try {
        return await blobs.get(file.blobKey, range)
      } catch (error) {
        if (!(error instanceof BlobNotFoundError)) throw error
        log.error({ fileId: file.id, blobKey: file.blobKey }, 'the blob of a file is missing from the store')
        throw new AppError('not_found', `The contents of file ${file.id} are not available.`)
      }
    },
  }
}
