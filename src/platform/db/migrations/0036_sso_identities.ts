import type { Kysely } from 'kysely'

// Single sign-on (issue 45, 3): the provider's identity (its issuer and the subject it names the person by) an
// account signed in with, so that a later sign-in of the same person finds the same account even after their
// email changed at the provider, and an address given to someone else there does not open the first one's
// account. One identity per account and provider; it goes with its account.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sso_identities')
    .addColumn('issuer', 'text', (column) => column.notNull())
    .addColumn('subject', 'text', (column) => column.notNull())
    .addColumn('account_id', 'text', (column) =>
      column.notNull().references('accounts.id').onDelete('cascade'),
    )
    .addColumn('created_at', 'bigint', (column) => column.notNull())
    .addPrimaryKeyConstraint('sso_identities_pk', ['issuer', 'subject'])
    .execute()
  await db.schema
    .createIndex('sso_identities_account')
    .on('sso_identities')
    .columns(['account_id', 'issuer'])
    .unique()
    .execute()
}
