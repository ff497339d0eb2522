import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// The name index of files/search/name-index.repository.ts, which replaces the engines' trigram indexes (pg_trgm's GIN index,
// SQLite's FTS5 table and its triggers): those find the names holding a substring in all accounts at once,
// in no useful order, so a search could not tell which were an account's newest without reading them all.
// - Each account numbers its files in the order they were made (`files.seq`, from 0; the account's
//   `file_seq` is the next number), and makes them at increasing times (`last_file_at`), so that number
//   order and the lists' order (created_at, id) are one.
// - `name_grams` holds, per account and block of BLOCK_SIZE numbers, the slots of the files whose names hold
//   each gram (and of each folder's files); block -1 holds each gram's count of files over all blocks.
//   `name_blocks` is how many of the account's blocks are in it; the files after them are read one by one.
// Existing files are numbered here, in (created_at, id) order; their blocks are filled by the server's job
// (name-index.repository.ts) after start, and searches read the rows of the files not yet in blocks until then.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('file_seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema
    .alterTable('accounts')
    .addColumn('last_file_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema
    .alterTable('accounts')
    .addColumn('name_blocks', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('files').addColumn('seq', 'bigint').execute()

  await sql`update files set seq = numbered.n
    from (select id, row_number() over (partition by account_id order by created_at, id) - 1 as n from files) as numbered
    where files.id = numbered.id`.execute(db)
  await sql`update accounts set
    file_seq = (select count(*) from files where files.account_id = accounts.id),
    last_file_at = coalesce((select max(created_at) from files where files.account_id = accounts.id), 0)`.execute(
    db,
  )
  await db.schema.createIndex('files_account_seq').on('files').columns(['account_id', 'seq']).execute()

  const blob = engine === 'postgres' ? 'bytea' : 'blob'
  let grams = db.schema
    .createTable('name_grams')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('gram', 'text', (c) => c.notNull())
    .addColumn('block', 'integer', (c) => c.notNull())
    .addColumn('files', 'integer', (c) => c.notNull())
    .addColumn('slots', sql.raw(blob), (c) => c.notNull())
    .addPrimaryKeyConstraint('name_grams_pkey', ['account_id', 'gram', 'block'])
  if (engine === 'sqlite') grams = grams.modifyEnd(sql`without rowid`)
  await grams.execute()

  if (engine === 'postgres') {
    await sql`drop index files_name_trgm`.execute(db)
  } else {
    for (const trigger of ['insert', 'delete', 'update']) {
      await sql`drop trigger ${sql.raw(`files_name_fts_${trigger}`)}`.execute(db)
    }
    await sql`drop table files_name_fts`.execute(db)
  }
}
