import type { Kysely } from 'kysely'

// The CRC-32 of an upload's bytes, computed in the pass that stores them with the SHA-256 (blob/content-digest.ts)
// instead of by processing reading the whole blob once more. Staged blobs and intents carry it to the file as
// they carry the SHA-256; an intent adopted before this migration has none, and its file's digests are computed
// afterwards, like those of a blob S3 joined (files/file-digests.job.ts).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('upload_blobs').addColumn('crc32', 'bigint').execute()
  await db.schema.alterTable('upload_intents').addColumn('crc32', 'bigint').execute()
}
