import type { Kysely } from 'kysely'

// Failed sign-ins of existing accounts, shown to the owner on the password page (issue 23): when and from which
// address, so that an owner sees someone trying. Kept 30 days (the expired-records job); gone with the account.
// `client` is the address as the rate limits name it (`ip:203.0.113.9`, an IPv6 address by its /64).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sign_in_failures')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('client', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('sign_in_failures_account_at')
    .on('sign_in_failures')
    .columns(['account_id', 'at'])
    .execute()
  await db.schema.createIndex('sign_in_failures_at').on('sign_in_failures').column('at').execute()
}
