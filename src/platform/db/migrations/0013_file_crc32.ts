import type { Kysely } from 'kysely'

// The CRC-32 of each file's bytes, computed once when the upload is processed (uploads/processing.job.ts), so that a
// zip of the owner's files (files/zip/zip-stream.ts) can state it in each entry's header and pipe the bytes straight
// from the blob store. A bigint: the value is unsigned 32-bit, beyond PostgreSQL's integer. Null for files made
// before this column, whose zip entries compute it as their bytes pass.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('files').addColumn('crc32', 'bigint').execute()
}
