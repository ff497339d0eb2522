import type { Kysely } from 'kysely'

// The client address of an upload prepared on a file request's public page (issue 23), as the rate limits name
// it (`ip:203.0.113.9`, an IPv6 address by its /64): an address may hold only so many uploads prepared and not
// yet sent. Kept while the upload may still take bytes, and set to null when it stops (processing or error), so
// no submitter's address outlives the upload.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('upload_intents').addColumn('client', 'text').execute()
  await db.schema
    .createIndex('upload_intents_client')
    .on('upload_intents')
    .columns(['client', 'expires_at'])
    .where('client', 'is not', null)
    .execute()
}
