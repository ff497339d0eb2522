import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// A search walks the account's files (or a folder's) newest first and tests each name (files/search/name-search.ts).
// With the name in the order indexes, that walk reads the index alone instead of looking every row up in the
// table: a walk of 10,000 rows of a million-file account took 15 ms of PostgreSQL and 5 ms of SQLite, and
// takes 6 and 3.3.
//
// The folder index also carries the account, right after the folder: every read of a folder's files names
// both, and with two equalities to match SQLite prefers this index to the account's even without statistics
// (Coffer never runs ANALYZE). With the account after the order columns instead, SQLite listed a folder by
// walking the whole account's files in order: 11 ms a page instead of 0.2.
//
// The indexes are rebuilt under their own names. On PostgreSQL that holds writes to `files` for the build
// (about a second per million files here); migrations run on start, before the server takes requests.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  await sql`drop index files_account_order`.execute(db)
  await sql`drop index files_folder_order`.execute(db)
  if (engine === 'postgres') {
    await sql`create index files_account_order on files (account_id, created_at desc, id desc)
              include (name)`.execute(db)
    await sql`create index files_folder_order on files (folder_id, account_id, created_at desc, id desc)
              include (name)`.execute(db)
  } else {
    // SQLite has no INCLUDE; a trailing key column covers the same, and the columns before it are unique.
    await sql`create index files_account_order on files (account_id, created_at desc, id desc, name)`.execute(
      db,
    )
    await sql`create index files_folder_order on files (folder_id, account_id, created_at desc, id desc, name)`.execute(
      db,
    )
  }
}
