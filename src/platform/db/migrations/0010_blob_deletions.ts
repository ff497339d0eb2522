import type { Kysely } from 'kysely'

// Blobs whose rows are gone and whose bytes are still to be removed. A file's deletion records its blobs here
// in the transaction that deletes its row; they are removed after the commit, and a crash in between leaves
// them here for the next sweep, at start or periodically (storage/blob-deletions.job.ts). No blob is
// forgotten on disk, and no row ever points to a removed blob.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('blob_deletions')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('recorded_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('blob_deletions_recorded').on('blob_deletions').column('recorded_at').execute()
}
