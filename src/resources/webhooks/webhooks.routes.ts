import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import {
  Data,
  ERROR_RESPONSES,
  extensionOperation,
  IdParam,
  List,
  PageQuery,
} from '../../platform/http/schemas.ts'
import {
  CreateWebhookBody,
  serializeDelivery,
  serializeWebhook,
  UpdateWebhookBody,
} from './webhooks.schemas.ts'

const READ = requireScopes(['webhooks:read'])
const WRITE = requireScopes(['webhooks:write'])
const tags = ['webhooks']
const WebhookParams = IdParam('webhookId')
const DeliveryParams = Type.Object(
  { ...IdParam('webhookId').properties, ...IdParam('deliveryId').properties },
  { additionalProperties: false },
)
const Deleted = Data(Type.Object({ id: Type.String() }, { additionalProperties: false }))

export const webhooksRoutes: Routes = async (app, deps) => {
  for (const routes of [webhookListRoutes, oneWebhookRoutes, webhookSecretRoutes, webhookDeliveryRoutes])
    await routes(app, deps)
}

/** Webhook endpoints: the list, a new one. */
async function webhookListRoutes(app: RouteApp, { services }: RouteDeps): Promise<void> {
  const { webhooks } = services
  app.get(
    '/webhooks',
    {
      schema: {
        tags,
        operationId: 'listWebhooks',
        summary: 'List webhook endpoints',
        ...extensionOperation('The account’s webhook endpoints, newest first.'),
        security: READ,
        querystring: Type.Object(PageQuery(25), { additionalProperties: false }),
        response: { 200: List(Type.Ref('Webhook')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25 } = request.query
      const page = await webhooks.list(accountOf(request), { cursor, limit })
      return { data: page.items.map(serializeWebhook), pagination: { nextCursor: page.nextCursor } }
    },
  )

  app.post(
    '/webhooks',
    {
      schema: {
        tags,
        operationId: 'createWebhook',
        summary: 'Create a webhook endpoint',
        ...extensionOperation(`Events of the types listed are POSTed to \`url\` as \`{ type, timestamp, data }\`, \`data\` in
the API's own shapes, with the Standard Webhooks headers \`webhook-id\` (the event's id, the same on every retry),
\`webhook-timestamp\` and \`webhook-signature\`. Verify them with a Standard Webhooks library and the \`secret\` of this
answer, the only time it is shown. A 2xx answer within 10 s is success; redirects are not followed. A failure is tried
again after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then daily for up to 3 days; an endpoint whose deliveries have all
failed for 3 days is disabled. The URL must be https:// and resolve to public addresses (400 otherwise). An account has
at most 20 endpoints, each with a URL of its own (409 otherwise).`),
        security: WRITE,
        body: CreateWebhookBody,
        response: { 201: Data(Type.Ref('WebhookWithSecret')), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const created = await webhooks.create(accountOf(request), request.body)
      return reply.status(201).send({ data: { ...serializeWebhook(created), secret: created.secret } })
    },
  )
}

/** One endpoint: read, changed, deleted. */
async function oneWebhookRoutes(app: RouteApp, { services }: RouteDeps): Promise<void> {
  const { webhooks } = services
  app.get(
    '/webhooks/:webhookId',
    {
      schema: {
        tags,
        operationId: 'getWebhook',
        summary: 'Get a webhook endpoint',
        ...extensionOperation('The endpoint, without its secret.'),
        security: READ,
        params: WebhookParams,
        response: { 200: Data(Type.Ref('Webhook')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeWebhook(await webhooks.get(accountOf(request), request.params.webhookId)),
    }),
  )

  app.patch(
    '/webhooks/:webhookId',
    {
      schema: {
        tags,
        operationId: 'updateWebhook',
        summary: 'Update a webhook endpoint',
        ...extensionOperation(
          'Changes its URL (checked as on creation), events, description, or whether it is active; at least one.',
        ),
        security: WRITE,
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: { 200: Data(Type.Ref('Webhook')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeWebhook(
        await webhooks.update(accountOf(request), request.params.webhookId, request.body),
      ),
    }),
  )

  app.delete(
    '/webhooks/:webhookId',
    {
      schema: {
        tags,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook endpoint',
        ...extensionOperation('Deletes the endpoint with its deliveries; nothing more is sent to it.'),
        security: WRITE,
        params: WebhookParams,
        response: { 200: Deleted, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      await webhooks.delete(accountOf(request), request.params.webhookId)
      return { data: { id: request.params.webhookId } }
    },
  )
}

/** An endpoint's secret rotated, and a ping. */
async function webhookSecretRoutes(app: RouteApp, { services }: RouteDeps): Promise<void> {
  const { webhooks } = services
  app.post(
    '/webhooks/:webhookId/rotate-secret',
    {
      schema: {
        tags,
        operationId: 'rotateWebhookSecret',
        summary: 'Rotate a webhook endpoint’s secret',
        ...extensionOperation(`A new secret, shown only in this answer. For 24 hours deliveries carry two signatures in
\`webhook-signature\`, by the new secret and the old, so a receiver can change its secret meanwhile.`),
        security: WRITE,
        params: WebhookParams,
        response: { 200: Data(Type.Ref('WebhookWithSecret')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const rotated = await webhooks.rotateSecret(accountOf(request), request.params.webhookId)
      return { data: { ...serializeWebhook(rotated), secret: rotated.secret } }
    },
  )

  app.post(
    '/webhooks/:webhookId/ping',
    {
      schema: {
        tags,
        operationId: 'pingWebhook',
        summary: 'Send a test event',
        ...extensionOperation(`Sends a \`webhook.ping\` event to this endpoint alone, whatever it subscribes to, as any
event is sent (signed, retried). A disabled endpoint is a 409.`),
        security: WRITE,
        params: WebhookParams,
        response: {
          202: Data(Type.Object({ eventId: Type.String() }, { additionalProperties: false })),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request, reply) =>
      reply.status(202).send({ data: await webhooks.ping(accountOf(request), request.params.webhookId) }),
  )
}

/** An endpoint's deliveries, and one sent again. */
async function webhookDeliveryRoutes(app: RouteApp, { services }: RouteDeps): Promise<void> {
  const { webhooks } = services
  app.get(
    '/webhooks/:webhookId/deliveries',
    {
      schema: {
        tags,
        operationId: 'listWebhookDeliveries',
        summary: 'List a webhook endpoint’s deliveries',
        ...extensionOperation('Its deliveries, newest first, each with its attempts and the next one due.'),
        security: READ,
        params: WebhookParams,
        querystring: Type.Object(PageQuery(25), { additionalProperties: false }),
        response: { 200: List(Type.Ref('WebhookDelivery')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25 } = request.query
      const page = await webhooks.deliveries(accountOf(request), request.params.webhookId, { cursor, limit })
      return { data: page.items.map(serializeDelivery), pagination: { nextCursor: page.nextCursor } }
    },
  )

  app.post(
    '/webhooks/:webhookId/deliveries/:deliveryId/retry',
    {
      schema: {
        tags,
        operationId: 'retryWebhookDelivery',
        summary: 'Send a delivery again',
        ...extensionOperation(
          'Makes the delivery due now, whatever came of it; the attempt keeps its `webhook-id`.',
        ),
        security: WRITE,
        params: DeliveryParams,
        response: {
          202: Data(Type.Object({ id: Type.String() }, { additionalProperties: false })),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request, reply) => {
      const { webhookId, deliveryId } = request.params
      await webhooks.retry(accountOf(request), webhookId, deliveryId)
      return reply.status(202).send({ data: { id: deliveryId } })
    },
  )
}
