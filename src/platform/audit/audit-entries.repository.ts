// The audit log's table (migration 0037): written by AuditLog in the transactions of changes, read newest first
// by an account's owner or by an admin, and purged after AUDIT_RETENTION_DAYS.
import type { Kysely } from 'kysely'
import type { Db, Executor } from '../db/database.ts'
import { type Cursor, keysetAfter, type Page, toPage } from '../db/pagination.ts'
import type { AuditEntriesTable, Database } from '../db/schema.ts'
import type { AuditKind } from './audit-kinds.ts'

/** Which entries to read: one account's or every account's, of a kind or family, in a time range. */
export interface AuditFilter {
  /** Only this account's entries; undefined for every account's (an admin's view). */
  accountId?: string
  /** A kind (`share.created`) or a family of kinds (`share`). */
  kind?: AuditKind | string
  /** From this time on (epoch milliseconds, inclusive). */
  since?: number
  /** Before this time (epoch milliseconds, exclusive). */
  until?: number
}

export type AuditEntryRow = AuditEntriesTable

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

  /** A page of entries, newest first (by the account's index, or by time for every account's). */
  async page(filter: AuditFilter, after: Cursor | undefined, limit: number): Promise<Page<AuditEntryRow>> {
    let query = this.#db.selectFrom('audit_entries').selectAll()
    if (filter.accountId !== undefined) query = query.where('account_id', '=', filter.accountId)
    if (filter.kind !== undefined) {
      // A family is a range of the kind's index: `share.` up to, not including, `share/` ('/' follows '.').
      query = filter.kind.includes('.')
        ? query.where('kind', '=', filter.kind)
        : query.where('kind', '>=', `${filter.kind}.`).where('kind', '<', `${filter.kind}/`)
    }
    if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since)
    if (filter.until !== undefined) query = query.where('created_at', '<', filter.until)
    const rows = await keysetAfter(query, 'audit_entries', after, limit + 1).execute()
    return toPage(rows, limit, (row) => ({ ...row, created_at: Number(row.created_at) }))
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
