// Reading the audit log in tests, straight from its table: what each kind's test asserts was recorded.
import assert from 'node:assert/strict'
import type { Db } from '../../src/platform/db/database.ts'
import type { AuditFilter } from '../../src/resources/audit/audit.repository.ts'
import { AuditRepository } from '../../src/resources/audit/audit.repository.ts'

export interface RecordedEntry {
  id: string
  at: number
  accountId: string | null
  kind: string
  actor: { type: string; id: string | null; name: string | null }
  address: string | null
  subjectId: string | null
  details: Record<string, unknown>
}

/** The entries that match `filter`, newest first (at most 1,000). */
export async function auditEntries(db: Db, filter: AuditFilter = {}): Promise<RecordedEntry[]> {
  const page = await new AuditRepository(db).page(filter, undefined, 1000)
  return page.items.map((row) => ({
    id: row.id,
    at: row.created_at,
    accountId: row.account_id,
    kind: row.kind,
    actor: { type: row.actor_type, id: row.actor_id, name: row.actor_name },
    address: row.address,
    subjectId: row.subject_id,
    details: JSON.parse(row.details),
  }))
}

/** The newest entry of `kind` for the account; fails the test when there is none. */
export async function lastEntry(db: Db, accountId: string | undefined, kind: string): Promise<RecordedEntry> {
  const [entry] = await auditEntries(db, { ...(accountId ? { accountId } : {}), kind })
  assert.ok(entry, `an audit entry ${kind}${accountId ? ` for ${accountId}` : ''} was recorded`)
  return entry
}

/** Fails when any of `secrets` appears anywhere in the audit log (every column of every entry). */
export async function assertNoSecretIn(db: Db, secrets: readonly string[]): Promise<void> {
  const rows = await db.kysely.selectFrom('audit_entries').selectAll().execute()
  const text = JSON.stringify(rows)
  for (const secret of secrets) {
    assert.ok(secret.length >= 8, 'a secret worth looking for')
    assert.ok(!text.includes(secret), `no secret in the audit log (found one starting ${secret.slice(0, 4)})`)
  }
}
