import type { Kysely } from 'kysely'

// The audit log (issue 45, 4): who did what to which account, from where, when. Read newest first by one
// account (its owner) or by all (an admin), optionally of one kind or family of kinds, and purged by age: an
// index for each of those orders. No foreign key to accounts: a deleted account's entries stay until their time.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('audit_entries')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('account_id', 'text')
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('actor_type', 'text', (column) => column.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('actor_name', 'text')
    .addColumn('address', 'text')
    .addColumn('subject_id', 'text')
    .addColumn('details', 'text', (column) => column.notNull())
    .execute()
  const indexes: [string, string[]][] = [
    ['audit_entries_account', ['account_id', 'created_at', 'id']],
    ['audit_entries_account_kind', ['account_id', 'kind', 'created_at', 'id']],
    ['audit_entries_time', ['created_at', 'id']],
    ['audit_entries_kind', ['kind', 'created_at', 'id']],
  ]
  for (const [name, columns] of indexes) {
    await db.schema.createIndex(name).on('audit_entries').columns(columns).execute()
  }
}
