// The SQL of backups: the hold that keeps deleted files' blobs while a backup copies them, SQLite's online
// snapshot, and what a restored database must forget.
import { type Kysely, sql } from 'kysely'
import type { Db } from '../../platform/db/database.ts'
import type { Database } from '../../platform/db/schema.ts'

export class BackupsRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  /** Takes or extends the hold `id` until `until` (epoch ms). */
  async hold(id: string, until: number): Promise<void> {
    await this.#db
      .insertInto('backup_holds')
      .values({ id, until })
      .onConflict((oc) => oc.column('id').doUpdateSet({ until }))
      .execute()
  }

  async release(id: string): Promise<void> {
    await this.#db.deleteFrom('backup_holds').where('id', '=', id).execute()
  }

  /** Forgets every hold: a restored database has no backup running. */
  async releaseAll(): Promise<void> {
    await this.#db.deleteFrom('backup_holds').execute()
  }

  /**
   * A consistent copy of the SQLite database in `file`, taken while others read and write it (`VACUUM INTO`
   * reads one snapshot; it does not block the server's writers).
   */
  async snapshotSqlite(file: string): Promise<void> {
    await sql`vacuum into ${file}`.execute(this.#db)
  }

  /** Whether the database holds Coffer's tables: a restore goes only into an empty one. */
  async isEmpty(): Promise<boolean> {
    const tables = await this.#db.introspection.getTables()
    return tables.length === 0
  }
}
