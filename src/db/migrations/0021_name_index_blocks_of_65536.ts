import { type Kysely, sql } from 'kysely'

// The name index's blocks grow from 4,096 files to 65,536 (files/name-grams.ts): a search reads a row per block
// for each gram, and at 10,000,000 files the 2,442 blocks of before made the rare queries read 10,000 rows. The
// index now takes a block's files a chunk of 4,096 at a time, extending its rows, so it counts the files it
// holds (`name_indexed`) instead of its blocks. Its rows are numbered by the old blocks: emptied here, and
// written again by the server's job after start (about 30 s a million files); until then searches read the
// rows of the files not yet in it.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table accounts rename column name_blocks to name_indexed`.execute(db)
  await sql`update accounts set name_indexed = 0`.execute(db)
  await sql`delete from name_grams`.execute(db)
}
