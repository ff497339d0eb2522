import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// The name index's blocks grow from 4,096 files to 65,536 (files/search/name-grams.ts): a search reads a row per block
// for each gram, and at 10,000,000 files the 2,442 blocks of before made the rare queries read 10,000 rows. The
// index now takes a block's files a chunk at a time, extending its rows, so it counts the files it holds
// (`name_indexed`) instead of its blocks. Its rows are numbered by the old blocks: emptied here, and written
// again by the server's job after start (about 30 s a million files); until then searches read the rows of the
// files not yet in it.
// `name_stale` counts, per block, the slots left behind by files deleted, renamed or moved since the block was
// written, for the job to write a block again from its files once they are many.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  await sql`alter table accounts rename column name_blocks to name_indexed`.execute(db)
  await sql`update accounts set name_indexed = 0`.execute(db)
  await sql`delete from name_grams`.execute(db)
  let stale = db.schema
    .createTable('name_stale')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('block', 'integer', (c) => c.notNull())
    .addColumn('slots', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('name_stale_pkey', ['account_id', 'block'])
  if (engine === 'sqlite') stale = stale.modifyEnd(sql`without rowid`)
  await stale.execute()
  await db.schema.createIndex('name_stale_slots').on('name_stale').column('slots').execute()
}
