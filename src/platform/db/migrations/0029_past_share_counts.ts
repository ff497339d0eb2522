import type { Kysely } from 'kysely'

// What the links of deleted files counted, per account and UTC day: a file's link and its days' rows go with the
// file, but the views and downloads happened, and the account's totals and daily chart keep them
// (SharesRepository.keepCountsOfFiles folds the link's days in here, in the transaction that deletes the file).
// The rows go with their account.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('past_share_counts')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('day', 'integer', (c) => c.notNull())
    .addColumn('views', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('downloads', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('past_share_counts_pk', ['account_id', 'day'])
    .execute()
}
