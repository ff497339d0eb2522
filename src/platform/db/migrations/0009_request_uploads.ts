import type { Kysely } from 'kysely'

// Files sent through a file request's public page. The owner may limit what a request accepts (a deadline,
// files in all, the size of each, the types allowed: an extension of the contract, kept beside the request);
// an upload prepared on the page carries its request and what the submitter typed, so that processing records
// the Submission in the transaction that creates the File. An intent's request is not a foreign key: an
// upload whose request was deleted meanwhile must still be found, and refused, by processing.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('file_requests').addColumn('deadline_at', 'bigint').execute()
  await db.schema.alterTable('file_requests').addColumn('max_files', 'bigint').execute()
  await db.schema.alterTable('file_requests').addColumn('max_file_size', 'bigint').execute()
  // A JSON array of extensions (".pdf") and types ("application/pdf", "image/*"); null for any file.
  await db.schema.alterTable('file_requests').addColumn('allowed_types', 'text').execute()

  await db.schema.alterTable('upload_intents').addColumn('request_id', 'text').execute()
  await db.schema.alterTable('upload_intents').addColumn('submitter_name', 'text').execute()
  await db.schema.alterTable('upload_intents').addColumn('submitter_email', 'text').execute()
  await db.schema.alterTable('upload_intents').addColumn('submitter_message', 'text').execute()
  // The uploads of a request still under way, counted against its maximum number of files.
  await db.schema
    .createIndex('upload_intents_request')
    .on('upload_intents')
    .columns(['request_id', 'state'])
    .where('request_id', 'is not', null)
    .execute()
}
