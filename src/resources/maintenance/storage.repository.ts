// What the storage reconciler asks the database: which blobs rows own or uploads claim, and the keys of all
// file and preview rows, page by page. Every query is bounded: keys are asked about in batches, rows walked by
// their primary key.
import type { Kysely } from 'kysely'
import { blobKeyOf, previewKeyOf } from '../../platform/blob/blob-keys.ts'
import type { Db } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'

/** Why a blob in the store is not an orphan. */
export type BlobStanding = 'owned' | 'claimed' | 'deleting'

export class StorageRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  /**
   * Of `keys`, those a row owns (a file's or a preview's), those an upload under way claims (a blob being
   * written, or a stored one being processed, with its preview), and those recorded for deletion.
   */
  async standing(keys: string[]): Promise<Map<string, BlobStanding>> {
    const standing = new Map<string, BlobStanding>()
    if (keys.length === 0) return standing
    const db = this.#db
    const [files, previews, staged, deleting, processing] = await Promise.all([
      db.selectFrom('files').select('blob_key as key').where('blob_key', 'in', keys).execute(),
      db.selectFrom('file_previews').select('blob_key as key').where('blob_key', 'in', keys).execute(),
      db.selectFrom('upload_blobs').select('key').where('key', 'in', keys).execute(),
      db.selectFrom('blob_deletions').select('key').where('key', 'in', keys).execute(),
      // A stored upload being processed: its blob and its preview exist before its rows do.
      db
        .selectFrom('upload_intents')
        .select(['account_id', 'file_id'])
        .where('state', '=', 'processing')
        .where(
          'file_id',
          'in',
          keys.map((key) => key.slice(key.lastIndexOf('/') + 1)),
        )
        .execute(),
    ])
    for (const { key } of deleting) standing.set(key, 'deleting')
    for (const { account_id, file_id } of processing) {
      standing.set(blobKeyOf(account_id, String(file_id)), 'claimed')
      standing.set(previewKeyOf(account_id, String(file_id)), 'claimed')
    }
    for (const { key } of staged) standing.set(key, 'claimed')
    for (const { key } of [...files, ...previews]) standing.set(key, 'owned')
    return standing
  }

  /** The blob keys of rows (files and previews), `limit` at a time, after the row `after` (by its id). */
  async rowKeys(
    table: 'files' | 'file_previews',
    after: string,
    limit: number,
  ): Promise<{ id: string; key: string }[]> {
    const id = table === 'files' ? 'id' : 'file_id'
    return this.#db
      .selectFrom(table)
      .select([`${id} as id`, 'blob_key as key'])
      .where(id, '>', after)
      .orderBy(id)
      .limit(limit)
      .execute() as Promise<{ id: string; key: string }[]>
  }
}
