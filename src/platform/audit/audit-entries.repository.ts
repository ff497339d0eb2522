// The audit log's table (migration 0037): written by AuditLog in the transactions of changes, and purged after
// AUDIT_RETENTION_DAYS. Reading it is the audit resource's (resources/audit), which shows it to people.
import type { Kysely } from 'kysely'
import type { Db, Executor } from '../db/database.ts'
import type { AuditEntriesTable, Database } from '../db/schema.ts'

/** Rows deleted per statement by the purge: a long log goes in bites, never holding the writer for long. */
const PURGE_BATCH = 5000

export class AuditEntriesRepository {
  readonly #db: Kysely<Database>

  constructor(db: Db) {
    this.#db = db.kysely
  }

  async insert(trx: Executor, rows: AuditEntriesTable[]): Promise<void> {
    await trx.insertInto('audit_entries').values(rows).execute()
  }

  /** Deletes the entries written before `before`; how many went. */
  async purge(before: number): Promise<number> {
    let deleted = 0
    for (;;) {
      const result = await this.#db
        .deleteFrom('audit_entries')
        .where('id', 'in', (eb) =>
          eb.selectFrom('audit_entries').select('id').where('created_at', '<', before).limit(PURGE_BATCH),
        )
        .executeTakeFirst()
      const count = Number(result.numDeletedRows)
      deleted += count
      if (count < PURGE_BATCH) return deleted
    }
  }
}
