import type { Kysely } from 'kysely'

// Accounts on the web and the OAuth authorization server. Every secret here is stored as its SHA-256 only:
// a session's cookie value, the one-time setup link, and every OAuth artefact whose id is a bearer secret
// (codes, tokens, device and user codes, the authorization server's own session cookie).
export async function up(db: Kysely<unknown>): Promise<void> {
  // An account disabled by an administrator signs in no more, and its credentials stop working.
  await db.schema.alterTable('accounts').addColumn('disabled_at', 'bigint').execute()
  // An API key may expire by itself.
  await db.schema.alterTable('api_keys').addColumn('expires_at', 'bigint').execute()

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    /** The absolute end, whatever the activity. */
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('sessions_account').on('sessions').column('account_id').execute()
  await db.schema.createIndex('sessions_expiry').on('sessions').column('expires_at').execute()

  // The link that creates the first account; at most one is valid at a time.
  await db.schema
    .createTable('setup_links')
    .addColumn('secret_hash', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()

  // oidc-provider's models (Client, Grant, AuthorizationCode, AccessToken, RefreshToken, DeviceCode,
  // Interaction, Session, ...) in one table, as its adapter contract describes them: a JSON payload by model
  // and id, with the lookups the library makes (by grant, by uid, by user code) as indexed columns.
  await db.schema
    .createTable('oauth_records')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('id_hash', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('grant_id', 'text')
    .addColumn('uid_hash', 'text')
    .addColumn('user_code_hash', 'text')
    /** The account a Grant is for, to list an account's connected applications. */
    .addColumn('account_id', 'text')
    .addColumn('expires_at', 'bigint')
    .addColumn('consumed_at', 'bigint')
    /** Grants: when a token of the grant last called the API (to the minute). */
    .addColumn('last_used_at', 'bigint')
    .addPrimaryKeyConstraint('oauth_records_pk', ['model', 'id_hash'])
    .execute()
  await db.schema.createIndex('oauth_records_grant').on('oauth_records').column('grant_id').execute()
  await db.schema
    .createIndex('oauth_records_uid')
    .on('oauth_records')
    .columns(['model', 'uid_hash'])
    .execute()
  await db.schema
    .createIndex('oauth_records_user_code')
    .on('oauth_records')
    .columns(['model', 'user_code_hash'])
    .execute()
  await db.schema.createIndex('oauth_records_expiry').on('oauth_records').column('expires_at').execute()
  await db.schema
    .createIndex('oauth_records_account')
    .on('oauth_records')
    .columns(['account_id', 'model'])
    .execute()
}
