// Reading the audit log (its table and writer are the platform's: platform/audit): newest first, one account's or
// every account's, of a kind or a family of kinds, in a time range, each with its account's email for the admin.
// Every filter is a range of one of the indexes of migration 0037.
import type { Db } from '../../platform/db/database.ts'
import { type Cursor, keysetAfter, type Page, toPage } from '../../platform/db/pagination.ts'
import type { AuditEntriesTable } from '../../platform/db/schema.ts'

/** Which entries to read: one account's or every account's, of a kind or family, in a time range. */
export interface AuditFilter {
  /** Only this account's entries; undefined for every account's (an admin's view). */
  accountId?: string
  /** A kind (`share.created`) or a family of kinds (`share`). */
  kind?: string
  /** From this time on (epoch milliseconds, inclusive). */
  since?: number
  /** Before this time (epoch milliseconds, exclusive). */
  until?: number
}

export type AuditEntryRow = AuditEntriesTable & {
  /** The email of the account the entry belongs to, while it exists. */
  account_email: string | null
}

export class AuditRepository {
  readonly #db: Db

  constructor(db: Db) {
    this.#db = db
  }

  /** A page of entries, newest first. */
  async page(filter: AuditFilter, after: Cursor | undefined, limit: number): Promise<Page<AuditEntryRow>> {
    let query = this.#db.kysely
      .selectFrom('audit_entries')
      .leftJoin('accounts', 'accounts.id', 'audit_entries.account_id')
      .selectAll('audit_entries')
      .select('accounts.email as account_email')
    if (filter.accountId !== undefined) query = query.where('audit_entries.account_id', '=', filter.accountId)
    if (filter.kind !== undefined) {
      // A family is a range of the kind's index: from `share.` up to `share/` ('/' is the character after '.').
      query = filter.kind.includes('.')
        ? query.where('audit_entries.kind', '=', filter.kind)
        : query
            .where('audit_entries.kind', '>=', `${filter.kind}.`)
            .where('audit_entries.kind', '<', `${filter.kind}/`)
    }
    if (filter.since !== undefined) query = query.where('audit_entries.created_at', '>=', filter.since)
    if (filter.until !== undefined) query = query.where('audit_entries.created_at', '<', filter.until)
    const rows = await this.#db.read(keysetAfter(query, 'audit_entries', after, limit + 1).compile())
    return toPage(
      rows.map((row) => ({ ...row, created_at: Number(row.created_at) })),
      limit,
      (row) => row,
    )
  }
}
