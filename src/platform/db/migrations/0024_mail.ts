import type { Kysely } from 'kysely'

// Email (mail/): an outbox of messages, written in the transaction of the change that causes each, so that none
// is sent for a change that rolled back and none lost for one that committed; a job sends them (one process at a
// time) and retries the failures. The links of "Forgot your password?": only the hash of each secret is kept.
// And the emails that tell an owner of submissions: a request's switch (`email_owner`, on by default), each
// submission still to tell of (`submission_notices`, written with it), and when the request's owner was last
// told (`noticed_at`), so that one email every five minutes at most gathers what arrived meanwhile.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('text_body', 'text', (c) => c.notNull())
    // 'pending' until sent or given up ('sent', 'failed').
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('mail_outbox_due')
    .on('mail_outbox')
    .columns(['state', 'next_attempt_at'])
    .execute()
  await db.schema.createIndex('mail_outbox_created').on('mail_outbox').column('created_at').execute()

  await db.schema
    .createTable('password_resets')
    .addColumn('secret_hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('password_resets_account').on('password_resets').column('account_id').execute()
  await db.schema.createIndex('password_resets_expires').on('password_resets').column('expires_at').execute()

  await db.schema
    .alterTable('file_requests')
    .addColumn('email_owner', 'boolean', (c) => c.notNull().defaultTo(true))
    .execute()
  await db.schema.alterTable('file_requests').addColumn('noticed_at', 'bigint').execute()
  await db.schema
    .createTable('submission_notices')
    .addColumn('submission_id', 'text', (c) =>
      c.primaryKey().references('submissions.id').onDelete('cascade'),
    )
    .addColumn('request_id', 'text', (c) => c.notNull().references('file_requests.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('submission_notices_request')
    .on('submission_notices')
    .columns(['request_id', 'created_at'])
    .execute()
}
