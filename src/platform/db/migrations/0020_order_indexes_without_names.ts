import { type Kysely, sql } from 'kysely'

// The order indexes carried the name (migration 0006) for the name search's walks of them; the search reads the
// name index instead (migration 0019), and nothing else reads a name from them. Without it they are about half
// the size. Rebuilt under their own names, as in 0006 (about a second per million files).
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`drop index files_account_order`.execute(db)
  await sql`drop index files_folder_order`.execute(db)
  await sql`create index files_account_order on files (account_id, created_at desc, id desc)`.execute(db)
  await sql`create index files_folder_order on files (folder_id, account_id, created_at desc, id desc)`.execute(
    db,
  )
}
