import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// Lists of files by name and by size, either way, in an account or a folder (files/file-order.ts): each walked
// along an index of its key and the id, as the lists by date walk theirs (migrations 0006 and 0020). A name's
// key ignores the case of ASCII letters, the same on both engines: PostgreSQL's lower() under the "C"
// collation folds only ASCII, as SQLite's lower() does.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  const nameKey = engine === 'postgres' ? sql`lower(name collate "C")` : sql`lower(name)`
  await sql`create index files_account_name on files (account_id, ${nameKey}, id)`.execute(db)
  await sql`create index files_folder_name on files (folder_id, account_id, ${nameKey}, id)`.execute(db)
  await sql`create index files_account_size on files (account_id, size, id)`.execute(db)
  await sql`create index files_folder_size on files (folder_id, account_id, size, id)`.execute(db)
}
