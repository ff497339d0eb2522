// Several of the owner's files, or a whole folder, as one zip, streamed as it is built (zip-stream.ts).
//
// - A selection: at most MAX_ZIP_SELECTION ids. Ids that are not the account's (absent, deleted meanwhile, or
//   another account's) are skipped, as bulk delete and move skip them, so a selection made on a page that has
//   since changed still gives the rest; a selection of which none is the account's is "not found".
// - A folder: every file in it, newest first as its list shows them, read in keyset pages of 1,000 rows
//   while the archive is sent, so a folder of 100,000 files starts at once and never has all its rows in
//   memory. Another account's folder is "not found".
// When every entry is known before the first byte (a selection, or a folder that fits in one page), the
// archive's exact length is known too, for Content-Length (a browser then shows progress). A blob missing
// from the store is logged; before the first byte that is a "not found" answer, after it the response is cut.
import type { Readable } from 'node:stream'
import { BlobNotFoundError, type BlobStore } from '../../../platform/blob/blob-store.ts'
import { AppError, invalid, notFound } from '../../../platform/errors.ts'
import type { FoldersRepository } from '../../folders/folders.repository.ts'
import type { FaultLog } from '../file-content.ts'
import type { FilesRepository, ZipFileRow } from '../files.repository.ts'
import { EntryNames } from './zip-names.ts'
import { type ZipEntry, ZipStream, zipLength } from './zip-stream.ts'

/** Files one selection may name: a page of the list holds 50; a selection grown by "More" stays within this. */
export const MAX_ZIP_SELECTION = 1000
/** Rows of a folder read at a time, by default. */
const FOLDER_PAGE = 1000

export interface ZipArchive {
  /** What the download is called: "<folder name>.zip", or "Coffer files (N).zip" for a selection. */
  fileName: string
  /** Entries in it, when known before sending. */
  entries: number | undefined
  /** The archive's length in bytes, when known before sending. */
  length: number | undefined
  /** The bytes, its first entry already opened; pipe it into the response, or destroy it. */
  stream: ZipStream
}

export class FilesZipService {
  readonly #files: FilesRepository
  readonly #folders: FoldersRepository
  readonly #blobs: BlobStore
  readonly #folderPage: number

  /** `folderPage`: the rows of a folder read at a time (tests make it small). */
  constructor(deps: {
    files: FilesRepository
    folders: FoldersRepository
    blobs: BlobStore
    folderPage?: number
  }) {
    this.#files = deps.files
    this.#folders = deps.folders
    this.#blobs = deps.blobs
    this.#folderPage = deps.folderPage ?? FOLDER_PAGE
  }

  /** The account's files among `fileIds`, in the order given (repeats once); see the top of this file. */
  async ofFiles(accountId: string, fileIds: string[], log: FaultLog): Promise<ZipArchive> {
    const ids = [...new Set(fileIds)]
    if (ids.length === 0) {
      throw invalid('Select at least one file to download as a zip.', undefined, 'fileIds')
    }
    if (ids.length > MAX_ZIP_SELECTION) {
      throw invalid(
        `A zip holds at most ${MAX_ZIP_SELECTION} selected files; ${ids.length} were selected.`,
        'Select fewer files, or put them in a folder and download the folder.',
        'fileIds',
      )
    }
    const rows = await this.#files.zipRows(accountId, ids)
    if (rows.length === 0) throw notFound('Files')
    return this.#start(`Coffer files (${rows.length}).zip`, this.#known(rows, log), log)
  }

  /** Every file of the account's folder; see the top of this file. */
  async ofFolder(accountId: string, folderId: string, log: FaultLog): Promise<ZipArchive> {
    const folder = await this.#folders.get(accountId, folderId)
    if (!folder) throw notFound(`Folder ${folderId}`)
    const pageSize = this.#folderPage
    const first = await this.#files.zipRowsInFolder(accountId, folderId, undefined, pageSize)
    const fileName = `${folder.name}.zip`
    if (first.nextCursor === null) return this.#start(fileName, this.#known(first.items, log), log)
    const names = new EntryNames()
    const files = this.#files
    const toEntry = (row: ZipFileRow) => this.#entry(row, names, log)
    async function* pages(): AsyncGenerator<ZipEntry> {
      let page = first
      for (;;) {
        for (const row of page.items) yield toEntry(row)
        if (page.nextCursor === null) return
        page = await files.zipRowsInFolder(accountId, folderId, page.nextCursor, pageSize)
      }
    }
    return this.#start(fileName, { entries: pages(), count: undefined, length: undefined }, log)
  }

  /** Entries known before sending: named now, so that the length counts the names they will have. */
  #known(rows: ZipFileRow[], log: FaultLog) {
    const names = new EntryNames()
    const entries = rows.map((row) => this.#entry(row, names, log))
    return { entries: toAsync(entries), count: entries.length, length: zipLength(entries) }
  }

  #entry(row: ZipFileRow, names: EntryNames, log: FaultLog): ZipEntry {
    return {
      name: names.name(row.name),
      size: row.size,
      crc32: row.crc32,
      modifiedAt: row.createdAt,
      open: () => this.#open(row, log),
    }
  }

  /** Exactly the file's bytes: a range of its size, so a blob longer than its row never adds bytes. */
  async #open(row: ZipFileRow, log: FaultLog): Promise<Readable> {
    try {
      if (row.size > 0) return await this.#blobs.get(row.blobKey, { start: 0, end: row.size - 1 })
      // An empty file has no range to ask for; it is read whole, and must be empty.
      const stat = await this.#blobs.stat(row.blobKey)
      if (!stat) throw new BlobNotFoundError(row.blobKey)
      if (stat.size !== 0) throw new Error(`the blob of empty file ${row.id} holds ${stat.size} bytes`)
      return await this.#blobs.get(row.blobKey)
    } catch (error) {
      if (!(error instanceof BlobNotFoundError)) throw error
      log.error(
        { fileId: row.id, blobKey: row.blobKey },
        'the blob of a file is missing from the store (zip)',
      )
      throw new AppError('not_found', `The contents of file ${row.id} are not available.`)
    }
  }

  async #start(
    fileName: string,
    {
      entries,
      count,
      length,
    }: { entries: AsyncIterable<ZipEntry>; count: number | undefined; length: number | undefined },
    log: FaultLog,
  ): Promise<ZipArchive> {
    const stream = new ZipStream(entries)
    try {
      await stream.ready()
    } catch (error) {
      stream.destroy()
      throw error
    }
    // A failure after the first byte cuts the response (Fastify destroys it); this says which archive it was.
    stream.once('error', (error) => log.error({ err: error, zip: fileName }, 'a zip download was cut short'))
    return { fileName, entries: count, length, stream }
  }
}

async function* toAsync<T>(items: T[]): AsyncGenerator<T> {
  yield* items
}
