import { type Kysely, sql } from 'kysely'

// Coffer for a team (issue 45): an account is an `admin` or a `member`, and the oldest account, the one the setup
// link made, becomes the admin of an instance that had none. `last_sign_in_at` is what the admin's list of
// accounts shows; `deleting_at` marks an account an admin deleted, whose files go through the trash's purge
// before its row (and, by their foreign keys, everything else of it) goes. An invitation is a single-use link an admin makes: only the hash of its secret is kept, with
// the role it gives, the address it was sent to (if any), who made it, when it ends and when it was used.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table accounts add column role text not null default 'member'`.execute(db)
  await sql`alter table accounts add column last_sign_in_at bigint`.execute(db)
  await sql`alter table accounts add column deleting_at bigint`.execute(db)
  await sql`update accounts set role = 'admin' where id = (select min(id) from accounts)`.execute(db)
  await sql`create index accounts_admins on accounts (role) where role = 'admin'`.execute(db)
  await db.schema
    .createTable('invitations')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('secret_hash', 'text', (column) => column.notNull().unique())
    .addColumn('email', 'text')
    .addColumn('role', 'text', (column) => column.notNull())
    .addColumn('invited_by', 'text', (column) => column.references('accounts.id').onDelete('set null'))
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addColumn('expires_at', 'bigint', (column) => column.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('used_by', 'text')
    .execute()
  await sql`create index invitations_open on invitations (created_at desc, id desc) where used_at is null`.execute(
    db,
  )
}
