// The tables of files, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).

declare module '../../platform/db/schema.ts' {
  interface Database {
    files: FilesTable
    name_grams: NameGramsTable
    name_stale: NameStaleTable
    file_previews: FilePreviewsTable
    file_digests_pending: FileDigestsPendingTable
  }
}

export interface FilesTable {
  id: string
  account_id: string
  folder_id: string | null
  name: string
  content_type: string
  size: number
  blob_key: string
  sha256: string | null
  /** CRC-32 of the bytes (unsigned), stored by upload processing for zips; null for files made before it. */
  crc32: number | null
  created_at: number
  updated_at: number
  /**
   * The file's number in its account, in the order the account's files were made (migration 0019); set by
   * `FilesRepository.insert`. Null only for a row written another way, until `NameIndex.rebuild`.
   */
  seq: number | null
  /** When the file was deleted into the trash (migration 0032); null for a file in use. */
  trashed_at: number | null
  /** When the trash purge removes it for good; null for a file in use. */
  purge_at: number | null
}

/**
 * The name index (migration 0019, files/search/name-index.repository.ts): per account and block of its files, the slots of the
 * files whose names hold `gram` (or that lie in a folder, for a folder's gram); block -1 holds a gram's count
 * over all blocks, with no slots.
 */
export interface NameGramsTable {
  account_id: string
  gram: string
  block: number
  /** How many slots `slots` holds. */
  files: number
  slots: Uint8Array
}

/**
 * Per account and block of the name index, how many of its slots were left behind by files deleted, renamed
 * or moved since it was written (migration 0021): the job writes a block again once they are many.
 */
export interface NameStaleTable {
  account_id: string
  block: number
  slots: number
}

export interface FilePreviewsTable {
  file_id: string
  blob_key: string
  content_type: string
  width: number
  height: number
  size: number
  created_at: number
}

/** A file whose SHA-256 and CRC-32 are still to be computed (files/file-digests.job.ts). */
export interface FileDigestsPendingTable {
  file_id: string
  recorded_at: number
}
