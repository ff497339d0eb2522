import type { Kysely } from 'kysely'

// Files whose SHA-256 and CRC-32 are still to be computed: those of a multipart upload that S3 joined, whose
// bytes never passed in order through one process (files/file-digests.job.ts). Recorded in the transaction
// that completes the upload, removed with the file; the job computes them by one read of the blob.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('file_digests_pending')
    .addColumn('file_id', 'text', (c) => c.primaryKey().references('files.id').onDelete('cascade'))
    .addColumn('recorded_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('file_digests_pending_recorded')
    .on('file_digests_pending')
    .column('recorded_at')
    .execute()
}
