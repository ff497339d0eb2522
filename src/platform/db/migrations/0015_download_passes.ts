import type { Kysely } from 'kysely'

// The bytes each download pass of a limited share link may still fetch (issue 23: a pass was good for any
// number of ranges, so `Range: bytes=0-0`, counted once, then `bytes=1-` again and again gave unlimited copies).
// A pass is issued with the file's size and each range it admits takes its bytes from here, giving back what it
// did not send; at nought, the next range needs a new counted download. Keyed by the SHA-256 of the pass (the
// browser's cookie is the capability); gone with the link, and purged with the other expired records.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('download_passes')
    .addColumn('pass_hash', 'text', (c) => c.primaryKey())
    .addColumn('share_id', 'text', (c) => c.notNull().references('shares.id').onDelete('cascade'))
    .addColumn('bytes_left', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('download_passes_expires_at')
    .on('download_passes')
    .column('expires_at')
    .execute()
  await db.schema.createIndex('download_passes_share_id').on('download_passes').column('share_id').execute()
}
