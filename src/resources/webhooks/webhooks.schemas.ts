import { Type } from 'typebox'
import { DateTime, Nullable, toIso, toIsoOrNull } from '../../platform/http/schemas.ts'
import { ALL_EVENT_TYPES, EVENT_TYPES, EVENTS, PING_EVENT } from './event-types.ts'
import type { Delivery } from './events.repository.ts'
import { MAX_URL_LENGTH } from './webhook-targets.ts'
import type { WebhookEndpoint } from './webhooks.repository.ts'

export const DESCRIPTION_MAX_LENGTH = 500

const EventTypeSchema = Type.Union(
  ALL_EVENT_TYPES.map((type) => Type.Literal(type, { description: EVENT_TYPES[type] })),
  { description: 'An event type.' },
)

const Url = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description:
    'Where deliveries are POSTed: an https:// URL whose host resolves to public addresses (with WEBHOOKS_ALLOW_PRIVATE=true on the server, also http:// to loopback and private addresses).',
})
const Events = Type.Array(EventTypeSchema, {
  minItems: 1,
  maxItems: ALL_EVENT_TYPES.length,
  uniqueItems: true,
  description: 'The event types the endpoint receives.',
})
const Description = Nullable(Type.String({ maxLength: DESCRIPTION_MAX_LENGTH }))

export const CreateWebhookBody = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description) },
  { additionalProperties: false },
)

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Description),
    isActive: Type.Optional(
      Type.Boolean({
        description: 'false stops deliveries; true starts them again and forgets past failures.',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
)

const webhookFields = {
  id: Type.String(),
  url: Type.String({ format: 'uri' }),
  events: Type.Array(EventTypeSchema),
  description: Nullable(Type.String()),
  isActive: Type.Boolean({
    description:
      'Whether events are delivered to it. Coffer sets it to false after three days of failed deliveries.',
  }),
  disabledReason: Nullable(
    Type.String({ description: 'Why Coffer disabled it; null when the owner did, or it is active.' }),
  ),
  failingSince: Nullable(DateTime('Since when every delivery to it has failed; null while it answers.')),
  createdAt: DateTime(),
  updatedAt: DateTime(),
}

export const WebhookSchema = Type.Object(webhookFields, {
  $id: 'Webhook',
  additionalProperties: false,
  description: 'An endpoint that receives events, signed by the Standard Webhooks scheme.',
})

export const WebhookWithSecretSchema = Type.Object(
  {
    ...webhookFields,
    secret: Type.String({
      description:
        'The signing secret (`whsec_` + base64), for a Standard Webhooks library to verify `webhook-signature` with. Shown only in this answer.',
    }),
  },
  { $id: 'WebhookWithSecret', additionalProperties: false },
)

const AttemptSchema = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1 }),
    at: DateTime(),
    status: Nullable(Type.Integer({ description: 'The HTTP status of the answer; null when none came.' })),
    latencyMs: Type.Integer({ minimum: 0 }),
    error: Nullable(
      Type.String({ description: 'Why no answer came (refused, timed out, an address not allowed).' }),
    ),
    response: Nullable(Type.String({ description: 'The start of the answer’s body (at most 1 KiB).' })),
  },
  { additionalProperties: false },
)

export const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    eventId: Type.String({ description: 'The `webhook-id` of every attempt.' }),
    eventType: Type.String(),
    state: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
    attempts: Type.Array(AttemptSchema),
    nextAttemptAt: Nullable(DateTime('When the next attempt is due; null once the delivery has ended.')),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { $id: 'WebhookDelivery', additionalProperties: false },
)

export function serializeWebhook(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events,
    description: endpoint.description,
    isActive: endpoint.isActive,
    disabledReason: endpoint.disabledReason,
    failingSince: toIsoOrNull(endpoint.failingSince),
    createdAt: toIso(endpoint.createdAt),
    updatedAt: toIso(endpoint.updatedAt),
  }
}

export function serializeDelivery(delivery: Delivery) {
  return {
    id: delivery.id,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    state: delivery.state,
    attempts: delivery.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      at: toIso(attempt.at),
      status: attempt.status,
      latencyMs: attempt.latencyMs,
      error: attempt.error,
      response: attempt.response,
    })),
    nextAttemptAt: toIsoOrNull(delivery.nextAttemptAt),
    createdAt: toIso(delivery.createdAt),
    updatedAt: toIso(delivery.updatedAt),
  }
}

const PING_DATA = {
  type: 'object',
  required: ['webhookId', 'message'],
  additionalProperties: false,
  properties: { webhookId: { type: 'string' }, message: { type: 'string' } },
}

/**
 * The OpenAPI document's `webhooks`: per event type, the POST an endpoint receives, its body and the Standard
 * Webhooks headers that sign it.
 */
export function eventWebhooks(): Record<string, object> {
  const signed = (type: string, description: string, data: object) => ({
    post: {
      // file.created → fileCreatedEvent
      operationId: `${type.replace(/\.(\w)/g, (_, letter: string) => letter.toUpperCase())}Event`,
      summary: type,
      // Not a credential of the API's: the signature headers below, by the endpoint's own secret.
      security: [],
      description: `${description} Signed by the Standard Webhooks scheme: verify \`webhook-signature\` with the endpoint's secret before trusting the body. Answer with a 2xx within 10 seconds; anything else is tried again.`,
      tags: ['webhooks'],
      parameters: [
        [
          'webhook-id',
          "The event's id: the same on every attempt and every endpoint, so a receiver can drop repeats.",
        ],
        ['webhook-timestamp', 'When this attempt was signed, in seconds since 1970.'],
        [
          'webhook-signature',
          '`v1,<base64 HMAC-SHA256>`, one per secret that signs (two for 24 hours after a rotation).',
        ],
      ].map(([name, about]) => ({
        name,
        in: 'header',
        required: true,
        description: about,
        schema: { type: 'string' },
      })),
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['type', 'timestamp', 'data'],
              additionalProperties: false,
              properties: {
                type: { const: type },
                timestamp: { type: 'string', format: 'date-time', description: 'When the change committed.' },
                data,
              },
            },
          },
        },
      },
      responses: { '2XX': { description: 'Received.' } },
    },
  })
  return {
    ...Object.fromEntries(
      ALL_EVENT_TYPES.map((type) => [type, signed(type, EVENTS[type].about, EVENTS[type].data)]),
    ),
    [PING_EVENT]: signed(
      PING_EVENT,
      'A test event, sent by `POST /webhooks/{id}/ping` to that endpoint alone.',
      PING_DATA,
    ),
  }
}
