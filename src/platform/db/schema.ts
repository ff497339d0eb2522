// Row types of the tables, as Kysely sees them. Timestamps are epoch milliseconds on both engines, so
// ordering, keyset cursors and comparisons are plain integer arithmetic everywhere. `Database` holds the
// platform's own tables here; each resource adds its own beside its repositories (`<resource>.tables.ts`,
// declaration merging), so that a new resource's tables live in its folder.

export interface ServerSecretsTable {
  name: string
  value: string
  created_at: number
}

/** An email to send, written in the transaction of the change that caused it (migration 0024). */
export interface MailOutboxTable {
  id: string
  to_address: string
  subject: string
  text_body: string
  state: 'pending' | 'sent' | 'failed'
  attempts: number
  next_attempt_at: number
  last_error: string | null
  created_at: number
  updated_at: number
}

/**
 * One entry of the audit log (migration 0037): who did what to which account, from where, and when. Not tied to
 * the account by a foreign key: an account's deletion is itself recorded, and its entries are kept as long as
 * every other's (AUDIT_RETENTION_DAYS).
 */
export interface AuditEntriesTable {
  id: string
  created_at: number
  /** The account whose activity it is; null for a sign-in tried with an address no account has, an invitation. */
  account_id: string | null
  kind: string
  actor_type: string
  actor_id: string | null
  actor_name: string | null
  address: string | null
  subject_id: string | null
  /** JSON: an object of short values (AuditDetails). */
  details: string
}

/** Every table, by name: the platform's here, the resources' from their `<resource>.tables.ts`. */
export interface Database {
  server_secrets: ServerSecretsTable
  mail_outbox: MailOutboxTable
  audit_entries: AuditEntriesTable
}
