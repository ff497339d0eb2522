// The SQL of blob_deletions: blobs whose rows are gone, recorded in the transaction that removed the rows.
import type { Kysely } from 'kysely'
import type { Db, Transaction } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'

export class BlobDeletionsRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  /** Records blobs to remove, in the transaction that removes their rows; a blob recorded twice is once. */
  async record(trx: Transaction, keys: string[]): Promise<void> {
    if (keys.length === 0) return
    const now = Date.now()
    await trx
      .insertInto('blob_deletions')
      .values(keys.map((key) => ({ key, recorded_at: now })))
      .onConflict((oc) => oc.column('key').doNothing())
      .execute()
  }

  /** Blobs recorded before `before`, oldest first. */
  async pending(before: number, limit: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('blob_deletions')
      .select('key')
      .where('recorded_at', '<', before)
      .orderBy('recorded_at')
      .limit(limit)
      .execute()
    return rows.map((row) => row.key)
  }

  /** Forgets blobs once they are removed. */
  async forget(keys: string[]): Promise<void> {
    if (keys.length === 0) return
    await this.#db.deleteFrom('blob_deletions').where('key', 'in', keys).execute()
  }

  /** Whether a backup in progress holds back blob removals (storage/backups.ts). */
  async held(now: number): Promise<boolean> {
    const row = await this.#db
      .selectFrom('backup_holds')
      .select('id')
      .where('until', '>', now)
      .executeTakeFirst()
    return row !== undefined
  }
}
