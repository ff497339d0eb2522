import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// The name index keeps the runs of four characters of each name too, hashed into 1,024 buckets
// (files/search/name-grams.ts): a query's trigrams held apart in a name made candidates that its runs of four rule
// out. The index is emptied and written again by the server's job after start, as after migration 0021 (about
// 30 s a million files); until then searches read the rows of the files not yet in it, and find the same.
export async function up(db: Kysely<unknown>, _engine: Engine): Promise<void> {
  await sql`update accounts set name_indexed = 0`.execute(db)
  await sql`delete from name_grams`.execute(db)
  await sql`delete from name_stale`.execute(db)
}
