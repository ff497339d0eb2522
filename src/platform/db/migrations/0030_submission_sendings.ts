import type { Kysely } from 'kysely'

// The files a submitter sends at once, through one preparation on a request's public page, are one sending: its
// intents carry the sending's id to their Submissions, so that the owner's page and email show the sending as
// one entry (who, the message once, its files) rather than once per file. Submissions made before have none:
// each is shown on its own, as before.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('upload_intents').addColumn('sending_id', 'text').execute()
  await db.schema.alterTable('submissions').addColumn('sending_id', 'text').execute()
}
