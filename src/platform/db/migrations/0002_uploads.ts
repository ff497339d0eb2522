import type { Kysely } from 'kysely'

// Upload intents, the blobs staged while they receive bytes, image previews, and server-generated secrets.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('upload_intents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    // A folder deleted while its upload runs sends the file to root, as deleting a folder does for files.
    .addColumn('folder_id', 'text', (c) => c.references('folders.id').onDelete('set null'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('pathname', 'text', (c) => c.notNull().unique())
    .addColumn('grant_hash', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('file_id', 'text')
    .addColumn('stored_size', 'bigint')
    .addColumn('sha256', 'text')
    .addColumn('stored_at', 'bigint')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  // The sweeper's two scans: grants that ran out while uploading, and processing nobody holds a lease on.
  await db.schema
    .createIndex('upload_intents_state_expiry')
    .on('upload_intents')
    .columns(['state', 'expires_at'])
    .execute()
  await db.schema
    .createIndex('upload_intents_state_lease')
    .on('upload_intents')
    .columns(['state', 'lease_until'])
    .execute()

  // Every blob the blob endpoint writes for an intent (multipart parts, and each attempt at the final blob) is
  // recorded here before its first byte is written, so none is forgotten if a transfer or the process dies.
  await db.schema
    .createTable('upload_blobs')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('intent_id', 'text', (c) => c.notNull())
    .addColumn('upload_id', 'text')
    .addColumn('part_number', 'integer')
    .addColumn('etag', 'text')
    .addColumn('size', 'bigint')
    .addColumn('sha256', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('upload_blobs_intent_part')
    .on('upload_blobs')
    .columns(['intent_id', 'upload_id', 'part_number'])
    .execute()

  await db.schema
    .createTable('file_previews')
    .addColumn('file_id', 'text', (c) => c.primaryKey().references('files.id').onDelete('cascade'))
    .addColumn('blob_key', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('width', 'integer', (c) => c.notNull())
    .addColumn('height', 'integer', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()

  // Secrets the server makes for itself (the key that signs upload tokens); every process of a deployment
  // reads the same row.
  await db.schema
    .createTable('server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
}
