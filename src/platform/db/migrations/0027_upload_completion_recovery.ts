import type { Kysely } from 'kysely'

// A multipart upload's completion made idempotent across a failure between the store's join and the database
// (issue 40): the store forgets an upload's parts as it joins them, so a completion whose database write then
// failed could neither be retried nor finished, though the store held every byte.
// - `upload_blobs.completing_at`: when a completion began asking the store to join the parts. A row that has it
//   and is still staged long after is one whose completion failed half-way: the upload sweep looks at the store,
//   and adopts the joined blob if it is there (uploads/processing.job.ts).
// - `upload_intents.adopted_upload_id`: the client's id of the multipart upload whose blob the intent adopted, so
//   that a completion sent again after it succeeded (its answer lost) answers the same success.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('upload_blobs').addColumn('completing_at', 'bigint').execute()
  await db.schema
    .createIndex('upload_blobs_completing')
    .on('upload_blobs')
    .column('completing_at')
    .where('completing_at', 'is not', null)
    .execute()
  await db.schema.alterTable('upload_intents').addColumn('adopted_upload_id', 'text').execute()
}
