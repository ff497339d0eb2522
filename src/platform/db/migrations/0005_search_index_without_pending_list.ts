import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// By default a GIN index defers new entries to a pending list that every search then reads in full, until a
// vacuum or a full list (4 MB) merges it. With steady uploads that list is often hundreds of pages, and the name
// search read them all: 2 to 3 ms a query instead of a few tenths. Files are added far less often than they are
// searched, so each insert now updates the index itself. SQLite's FTS5 index merges its segments on its own.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  if (engine !== 'postgres') return
  await sql`alter index files_name_trgm set (fastupdate = off)`.execute(db)
  await sql`select gin_clean_pending_list('files_name_trgm'::regclass)`.execute(db)
}
