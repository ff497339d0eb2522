import { type Kysely, sql } from 'kysely'

// A file request's deadline passing is an event (request.closed, reason `deadline`), recorded by a job
// (requests/request-deadlines.job.ts): `deadline_handled` says the job has seen it pass, so that it records the
// event once; changing the deadline sets it false again. The index holds only the deadlines not yet handled, so the
// job's look for those that passed reads only them. Deadlines already passed are handled: they closed before
// there were events.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('file_requests')
    .addColumn('deadline_handled', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute()
  await sql`update file_requests set deadline_handled = ${sql.lit(true)} where deadline_at <= ${Date.now()}`.execute(
    db,
  )
  await db.schema
    .createIndex('file_requests_deadline_due')
    .on('file_requests')
    .column('deadline_at')
    .where(sql.ref('deadline_handled'), '=', sql.lit(false))
    .execute()
}
