import { type Kysely, sql } from 'kysely'

// Webhooks (events/): an account's endpoints, the outbox of events, and a delivery per event and endpoint.
// An event and its deliveries are written in the transaction of the change that causes it, so that none is sent
// for a change that rolled back and none is lost for one that committed. A delivery is leased by the process
// that sends it (`lease_until`), so that processes sharing the work never send one attempt twice.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    // The event types, each between spaces (" file.created share.created "), so that one LIKE matches a type.
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('is_active', 'boolean', (c) => c.notNull())
    // The endpoint's secret is derived from the server's webhook key, the endpoint's id and this generation
    // (webhooks/webhook-secrets.ts): nothing of it is stored. A rotation starts the next generation; the previous
    // one keeps signing until `previous_secret_until`.
    .addColumn('secret_generation', 'integer', (c) => c.notNull())
    .addColumn('previous_secret_until', 'bigint')
    // Since when every delivery to it has failed; null while it answers. Three days of it disable the endpoint.
    .addColumn('failing_since', 'bigint')
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createIndex('webhook_endpoints_account')
    .on('webhook_endpoints')
    .columns(['account_id', 'created_at', 'id'])
    .execute()

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    // The body every endpoint receives, as sent: { type, timestamp, data } in the API's own shapes.
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('events_created').on('events').column('created_at').execute()

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) =>
      c.notNull().references('webhook_endpoints.id').onDelete('cascade'),
    )
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    // pending (an attempt is due at next_attempt_at), succeeded, failed (no attempt left, or the endpoint gone).
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('lease_until', 'bigint')
    // A retry asked for while an attempt was under way: it is made once that attempt ends, whatever its outcome.
    .addColumn('retry_requested', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute()
  // What is due, oldest first: the senders' one query.
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['next_attempt_at', 'id'])
    .where(sql.ref('state'), '=', sql.lit('pending'))
    .execute()
  await db.schema
    .createIndex('webhook_deliveries_endpoint')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'created_at', 'id'])
    .execute()
  await db.schema
    .createIndex('webhook_deliveries_event')
    .on('webhook_deliveries')
    .column('event_id')
    .execute()

  // Every attempt of a delivery, as the endpoint answered it.
  await db.schema
    .createTable('webhook_attempts')
    .addColumn('delivery_id', 'text', (c) =>
      c.notNull().references('webhook_deliveries.id').onDelete('cascade'),
    )
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    // The HTTP status; null when no answer came (refused, timed out, an address not allowed).
    .addColumn('status', 'integer')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    // The start of the answer's body, truncated.
    .addColumn('response', 'text')
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'attempt'])
    .execute()
}
