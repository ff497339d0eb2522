import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// The daily counts of shares carry their account, so that the account's views and downloads per day, and its
// most viewed shares of a period, are read from an index of the days' rows, (account_id, day), instead of one
// lookup per share the account has. The account is the share's, copied once when the day's row is made
// (SharesRepository.countVisits); the rows go with their share as before, and so with the account. No foreign
// key of its own: the share's already ties the row to the account, and a second check would cost every new
// day's row.
//
// SQLite cannot add a NOT NULL column without a default to a table, so there the table is made again, its rows
// copied with their share's account; PostgreSQL adds the column, fills it, then requires it.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  if (engine === 'postgres') {
    await db.schema.alterTable('share_daily_counts').addColumn('account_id', 'text').execute()
    await sql`update share_daily_counts set account_id = shares.account_id
      from shares where shares.id = share_daily_counts.share_id`.execute(db)
    await db.schema
      .alterTable('share_daily_counts')
      .alterColumn('account_id', (c) => c.setNotNull())
      .execute()
    await createIndex(db)
    return
  }
  // In the migrator's transaction, as every migration is (db/sqlite.ts): a crash leaves the old table whole.
  {
    const trx = db
    await trx.schema
      .createTable('share_daily_counts_new')
      .addColumn('share_id', 'text', (c) => c.notNull().references('shares.id').onDelete('cascade'))
      .addColumn('day', 'integer', (c) => c.notNull())
      .addColumn('views', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('downloads', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('share_daily_counts_pk', ['share_id', 'day'])
      .execute()
    await sql`insert into share_daily_counts_new (share_id, day, views, downloads, account_id)
      select share_daily_counts.share_id, share_daily_counts.day, share_daily_counts.views,
        share_daily_counts.downloads, shares.account_id
      from share_daily_counts join shares on shares.id = share_daily_counts.share_id`.execute(trx)
    await trx.schema.dropTable('share_daily_counts').execute()
    await trx.schema.alterTable('share_daily_counts_new').renameTo('share_daily_counts').execute()
    await createIndex(trx)
  }
}

function createIndex(db: Kysely<unknown>) {
  return db.schema
    .createIndex('share_daily_counts_account_day')
    .on('share_daily_counts')
    .columns(['account_id', 'day'])
    .execute()
}
