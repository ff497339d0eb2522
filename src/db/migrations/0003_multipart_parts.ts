import type { Kysely } from 'kysely'

// Multipart uploads go through the BlobStore's multipart API instead of staging each part as a blob of its own.
// The row of a multipart upload's blob keeps the store's id for the upload; its parts, which are no longer
// blobs, get a table of their own, recorded once durable and removed with that row.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('upload_blobs_intent_part').execute()
  // Rows of parts staged the old way become plain staged blobs, which the sweep deletes with their intent.
  await db.schema.alterTable('upload_blobs').dropColumn('part_number').execute()
  await db.schema.alterTable('upload_blobs').dropColumn('etag').execute()
  await db.schema.alterTable('upload_blobs').addColumn('store_upload_id', 'text').execute()
  await db.schema
    .createIndex('upload_blobs_intent_upload')
    .on('upload_blobs')
    .columns(['intent_id', 'upload_id'])
    .execute()

  await db.schema
    .createTable('upload_parts')
    .addColumn('blob_key', 'text', (c) => c.notNull().references('upload_blobs.key').onDelete('cascade'))
    .addColumn('part_number', 'integer', (c) => c.notNull())
    // Ours, given to the client; the store's own name for the write is store_etag.
    .addColumn('etag', 'text', (c) => c.notNull())
    .addColumn('store_etag', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('upload_parts_pk', ['blob_key', 'part_number', 'etag'])
    .execute()
}
