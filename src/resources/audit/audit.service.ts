// The audit log as its readers see it: an owner their account's entries (GET /api/v1/audit, /account/activity),
// an admin everyone's (/admin/audit, and its JSON Lines export). Entries are written by the platform's AuditLog
// in the transactions of the changes they record.
import type { Actor } from '../../platform/audit/audit-log.ts'
import { decodeCursor, type Page } from '../../platform/db/pagination.ts'
import type { AuditEntryRow, AuditFilter, AuditRepository } from './audit.repository.ts'

export type { AuditFilter } from './audit.repository.ts'

export interface AuditEntry {
  id: string
  /** When it happened, in epoch milliseconds. */
  at: number
  /** The account it belongs to; null for a sign-in with an unknown address, an invitation. */
  accountId: string | null
  /** That account's email, while the account exists. */
  accountEmail: string | null
  kind: string
  actor: Actor
  /** The client's address, as TRUST_PROXY makes it out; null outside a request (a job, the admin command). */
  address: string | null
  subjectId: string | null
  details: Record<string, unknown>
}

/** Entries read per query by the export. */
const EXPORT_BATCH = 500

export class AuditService {
  readonly #entries: AuditRepository
  /** How many days an entry is kept (AUDIT_RETENTION_DAYS): the pages say so. */
  readonly retentionDays: number

  constructor(deps: { entries: AuditRepository; retentionDays: number }) {
    this.#entries = deps.entries
    this.retentionDays = deps.retentionDays
  }

  /** A page of the entries `filter` selects, newest first, after `cursor` (from the previous page). */
  async page(filter: AuditFilter, cursor: string | undefined, limit: number): Promise<Page<AuditEntry>> {
    const page = await this.#entries.page(
      filter,
      cursor === undefined ? undefined : decodeCursor(cursor),
      limit,
    )
    return { items: page.items.map(entryOf), nextCursor: page.nextCursor }
  }

  /** Every entry `filter` selects, newest first, read a batch at a time (the admin's export streams it). */
  async *all(filter: AuditFilter): AsyncGenerator<AuditEntry> {
    let cursor: string | undefined
    do {
      const page = await this.page(filter, cursor, EXPORT_BATCH)
      yield* page.items
      cursor = page.nextCursor ?? undefined
    } while (cursor !== undefined)
  }
}

function entryOf(row: AuditEntryRow): AuditEntry {
  return {
    id: row.id,
    at: row.created_at,
    accountId: row.account_id,
    accountEmail: row.account_email,
    kind: row.kind,
    actor: { type: row.actor_type as Actor['type'], id: row.actor_id, name: row.actor_name },
    address: row.address,
    subjectId: row.subject_id,
    details: JSON.parse(row.details) as Record<string, unknown>,
  }
}
