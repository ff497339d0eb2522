// Files: metadata in the database, bytes in the BlobStore under `blobKeyOf(...)`. Every read joins the
// folder and the share in the same query, so a page of files is one round trip.
import type { Kysely, SelectQueryBuilder } from 'kysely'
import type { BlobStore } from '../blob/blob-store.ts'
import { isForeignKeyViolation } from '../db/errors.ts'
import type { Database } from '../db/schema.ts'
import { notFound } from '../errors.ts'
import { adjustFolderCount, assertOwnedFolder, type Folder } from '../folders/folders.service.ts'
import { newId } from '../ids.ts'
import type { ServiceDeps } from '../services.ts'
import { isShareActive } from '../shares/share-state.ts'

export interface FileShareSummary {
  id: string
  publicId: string
  isActive: boolean
  expiresAt: number | null
  viewCount: number
  downloadCount: number
}

export interface StoredFile {
  id: string
  accountId: string
  name: string
  contentType: string
  size: number
  blobKey: string
  sha256: string | null
  createdAt: number
  folderId: string | null
  folder: Folder | null
  share: FileShareSummary | null
}

export interface NewFile {
  accountId: string
  folderId: string | null
  name: string
  contentType: string
  size: number
  blobKey: string
  sha256: string | null
  /** Defaults to a new `fil_` id; uploads choose it up front to name the blob. */
  id?: string
}

export function blobKeyOf(accountId: string, fileId: string): string {
  return `files/${accountId}/${fileId}`
}

/** files ⟕ folders ⟕ shares, with every column a File needs. */
export function selectFiles(db: Kysely<Database>) {
  return db
    .selectFrom('files')
    .leftJoin('folders', 'folders.id', 'files.folder_id')
    .leftJoin('shares', 'shares.file_id', 'files.id')
    .select([
      'files.id',
      'files.account_id',
      'files.name',
      'files.content_type',
      'files.size',
      'files.blob_key',
      'files.sha256',
      'files.created_at',
      'files.folder_id',
      'folders.name as folder_name',
      'folders.created_at as folder_created_at',
      'folders.file_count as folder_file_count',
      'folders.request_count as folder_request_count',
      'shares.id as share_id',
      'shares.public_id as share_public_id',
      'shares.is_active as share_is_active',
      'shares.expires_at as share_expires_at',
      'shares.view_count as share_view_count',
      'shares.download_count as share_download_count',
    ])
}

export type FileRow =
  ReturnType<typeof selectFiles> extends SelectQueryBuilder<Database, never, infer O> ? O : never

export function toStoredFile(row: FileRow, now = Date.now()): StoredFile {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    contentType: row.content_type,
    size: Number(row.size),
    blobKey: row.blob_key,
    sha256: row.sha256,
    createdAt: Number(row.created_at),
    folderId: row.folder_id,
    folder:
      row.folder_id === null || row.folder_name === null
        ? null
        : {
            id: row.folder_id,
            name: row.folder_name,
            createdAt: Number(row.folder_created_at),
            fileCount: Number(row.folder_file_count),
            requestCount: Number(row.folder_request_count),
          },
    share:
      row.share_id === null || row.share_public_id === null
        ? null
        : {
            id: row.share_id,
            publicId: row.share_public_id,
            isActive: isShareActive(Boolean(row.share_is_active), row.share_expires_at, now),
            expiresAt: row.share_expires_at === null ? null : Number(row.share_expires_at),
            viewCount: Number(row.share_view_count),
            downloadCount: Number(row.share_download_count),
          },
  }
}

export class FilesService {
  readonly #db: Kysely<Database>
  readonly #blobs: BlobStore

  constructor(deps: Pick<ServiceDeps, 'db' | 'blobs'>) {
    this.#db = deps.db.kysely
    this.#blobs = deps.blobs
  }

  /**
   * Records a file whose bytes are already stored under `blobKey`. The folder must belong to the account;
   * its file count moves in the same transaction.
   */
  async create(input: NewFile): Promise<StoredFile> {
    const now = Date.now()
    const id = input.id ?? newId('fil', now)
    try {
      await this.#db.transaction().execute(async (trx) => {
        if (input.folderId !== null) await assertOwnedFolder(trx, input.accountId, input.folderId)
        await trx
          .insertInto('files')
          .values({
            id,
            account_id: input.accountId,
            folder_id: input.folderId,
            name: input.name,
            content_type: input.contentType,
            size: input.size,
            blob_key: input.blobKey,
            sha256: input.sha256,
            created_at: now,
            updated_at: now,
          })
          .execute()
        await adjustFolderCount(trx, input.folderId, 'file_count', 1)
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${input.folderId}`)
      throw error
    }
    return this.get(input.accountId, id)
  }

  /** The account's file; another account's file is "not found". */
  async get(accountId: string, fileId: string): Promise<StoredFile> {
    const row = await selectFiles(this.#db)
      .where('files.id', '=', fileId)
      .where('files.account_id', '=', accountId)
      .executeTakeFirst()
    if (!row) throw notFound(`File ${fileId}`)
    return toStoredFile(row)
  }
}
