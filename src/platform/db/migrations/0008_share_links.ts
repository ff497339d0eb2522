import type { Kysely } from 'kysely'

// Share links protected by a password (a scrypt hash, never the password) or limited to a number of
// downloads, and their views and downloads counted per UTC day as well as in total. A day is a whole number
// of days since 1970-01-01, the same on both engines; its rows go with their share.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('shares').addColumn('password_hash', 'text').execute()
  await db.schema.alterTable('shares').addColumn('max_downloads', 'bigint').execute()
  await db.schema
    .createTable('share_daily_counts')
    .addColumn('share_id', 'text', (c) => c.notNull().references('shares.id').onDelete('cascade'))
    .addColumn('day', 'integer', (c) => c.notNull())
    .addColumn('views', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('downloads', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('share_daily_counts_pk', ['share_id', 'day'])
    .execute()
}
