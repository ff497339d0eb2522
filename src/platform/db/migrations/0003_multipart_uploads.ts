import type { Kysely } from 'kysely'

// Multipart uploads go through the BlobStore's own multipart API instead of staging each part as a blob: the
// row of a multipart upload's blob keeps the store's id for the upload, and the store alone keeps its parts.
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
}
