import { type Kysely, sql } from 'kysely'
import type { Engine } from '../engine.ts'

// Written with Kysely's dialect-neutral schema builder; only the name search index differs per engine.
export async function up(db: Kysely<unknown>, engine: Engine): Promise<void> {
  await createAccounts(db)
  await createFolders(db)
  await createFiles(db, engine)
  await createShares(db)
  await createRequests(db)
}

/** Accounts and their API keys. */
async function createAccounts(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute()
  await db.schema
    .createIndex('api_keys_account')
    .on('api_keys')
    .columns(['account_id', 'created_at'])
    .execute()
}

/** Flat folders, with the counts of what they hold. */
async function createFolders(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('folders')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_key', 'text', (c) => c.notNull())
    .addColumn('file_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('request_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('folders_account_name_key', ['account_id', 'name_key'])
    .execute()
  await db.schema
    .createIndex('folders_account_order')
    .on('folders')
    .columns(['account_id', 'created_at desc', 'id desc'])
    .execute()
}

/** Files, and the search index of their names (SQLite's FTS5, or PostgreSQL's trigrams). */
async function createFiles(db: Kysely<unknown>, engine: Engine): Promise<void> {
  await db.schema
    .createTable('files')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('folder_id', 'text', (c) => c.references('folders.id').onDelete('set null'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('blob_key', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('files_account_order')
    .on('files')
    .columns(['account_id', 'created_at desc', 'id desc'])
    .execute()
  await db.schema
    .createIndex('files_folder_order')
    .on('files')
    .columns(['folder_id', 'created_at desc', 'id desc'])
    .execute()

  if (engine === 'postgres') {
    // pg_trgm is a trusted extension: a database owner may create it without superuser rights.
    await sql`create extension if not exists pg_trgm`.execute(db)
    await sql`create index files_name_trgm on files using gin (name gin_trgm_ops)`.execute(db)
  } else {
    // An external-content FTS5 table with the trigram tokenizer answers substring searches from an
    // index; triggers keep it in step with `files`.
    await sql`create virtual table files_name_fts using fts5(name, content='files', content_rowid='rowid', tokenize='trigram')`.execute(
      db,
    )
    await sql`create trigger files_name_fts_insert after insert on files begin
      insert into files_name_fts(rowid, name) values (new.rowid, new.name);
    end`.execute(db)
    await sql`create trigger files_name_fts_delete after delete on files begin
      insert into files_name_fts(files_name_fts, rowid, name) values ('delete', old.rowid, old.name);
    end`.execute(db)
    await sql`create trigger files_name_fts_update after update of name on files begin
      insert into files_name_fts(files_name_fts, rowid, name) values ('delete', old.rowid, old.name);
      insert into files_name_fts(rowid, name) values (new.rowid, new.name);
    end`.execute(db)
  }
}

/** Files' share links. */
async function createShares(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('shares')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('file_id', 'text', (c) => c.notNull().unique().references('files.id').onDelete('cascade'))
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('is_active', 'boolean', (c) => c.notNull())
    .addColumn('expires_at', 'bigint')
    .addColumn('view_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('download_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('shares_account_order')
    .on('shares')
    .columns(['account_id', 'created_at desc', 'id desc'])
    .execute()
}

/** File requests and their submissions. */
async function createRequests(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('file_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('folder_id', 'text', (c) => c.references('folders.id').onDelete('set null'))
    .addColumn('public_id', 'text', (c) => c.notNull().unique())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('collect_email', 'boolean', (c) => c.notNull())
    .addColumn('email_required', 'boolean', (c) => c.notNull())
    .addColumn('is_active', 'boolean', (c) => c.notNull())
    .addColumn('submission_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('file_requests_account_order')
    .on('file_requests')
    .columns(['account_id', 'created_at desc', 'id desc'])
    .execute()
  await db.schema
    .createIndex('file_requests_folder_order')
    .on('file_requests')
    .columns(['folder_id', 'created_at desc', 'id desc'])
    .execute()

  await db.schema
    .createTable('submissions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('request_id', 'text', (c) => c.notNull().references('file_requests.id').onDelete('cascade'))
    .addColumn('file_id', 'text', (c) => c.notNull())
    .addColumn('file_name', 'text', (c) => c.notNull())
    .addColumn('file_content_type', 'text', (c) => c.notNull())
    .addColumn('file_size', 'bigint', (c) => c.notNull())
    .addColumn('submitter_name', 'text')
    .addColumn('submitter_email', 'text')
    .addColumn('message', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('submissions_request_order')
    .on('submissions')
    .columns(['request_id', 'created_at desc', 'id desc'])
    .execute()
}
