// The tables of webhooks, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).
import type { Generated } from 'kysely'

declare module '../../platform/db/schema.ts' {
  interface Database {
    webhook_endpoints: WebhookEndpointsTable
    events: EventsTable
    webhook_deliveries: WebhookDeliveriesTable
    webhook_attempts: WebhookAttemptsTable
  }
}

/** An account's webhook endpoint (migration 0022, webhooks/webhooks.repository.ts). */
export interface WebhookEndpointsTable {
  id: string
  account_id: string
  url: string
  /** The event types it receives, each between spaces: " file.created share.created ". */
  event_types: string
  description: string | null
  is_active: boolean
  /** Which of the endpoint's secrets signs now (webhooks/webhook-secrets.ts); none is stored. */
  secret_generation: number
  /** Until when the secret of the previous generation signs too, after a rotation. */
  previous_secret_until: number | null
  /** Since when every delivery to it has failed; null while it answers. */
  failing_since: number | null
  /** Why Coffer disabled it (three days of failures); null when the owner did, or it is active. */
  disabled_reason: string | null
  created_at: number
  updated_at: number
}

/** The outbox: an event, written in the transaction of the change that caused it (migration 0022). */
export interface EventsTable {
  id: string
  account_id: string
  type: string
  /** The JSON body every endpoint receives. */
  payload: string
  created_at: number
}

/** An event to send to an endpoint, until it succeeds or runs out of attempts (migration 0022). */
export interface WebhookDeliveriesTable {
  id: string
  endpoint_id: string
  event_id: string
  state: 'pending' | 'succeeded' | 'failed'
  attempts: number
  /** When the next attempt is due; null once the delivery has ended. */
  next_attempt_at: number | null
  /** Until when the process sending it holds it. */
  lease_until: number | null
  /** A retry asked for while an attempt was under way, made once it ends. */
  retry_requested: Generated<boolean>
  created_at: number
  updated_at: number
}

/** One attempt of a delivery, as the endpoint answered it (migration 0022). */
export interface WebhookAttemptsTable {
  delivery_id: string
  attempt: number
  at: number
  status: number | null
  latency_ms: number
  error: string | null
  response: string | null
}
