// The webhook pages of the account settings (views in webhooks-app.views.ts): the endpoints and a form to add
// one (GET|POST /account/webhooks), an endpoint with its recent deliveries (GET /account/webhooks/{id}), and
// what can be done to it: a test event, disabling and enabling, a new secret, deleting after a confirmation,
// sending a delivery again. Session only; every change a POST with its CSRF token; they call WebhooksService
// as the API does, and another account's endpoint is a 404 page.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { formReader } from '../../platform/web/form-reader.ts'
import { acceptForms, refusalOf } from '../../platform/web/forms.ts'
import { type Notices, noticeOf, withNotice } from '../../platform/web/notices.ts'
import { appNav, sessionAccountId } from '../accounts/web-sessions.ts'
import { ALL_EVENT_TYPES } from './event-types.ts'
import { MAX_URL_LENGTH } from './webhook-targets.ts'
import { DESCRIPTION_MAX_LENGTH } from './webhooks.schemas.ts'
import { deleteWebhookPage, WEBHOOK_PATHS, webhookPage, webhooksPage } from './webhooks-app.views.ts'

const readNewEndpoint = formReader(
  Type.Object(
    {
      url: Type.String({
        minLength: 1,
        maxLength: MAX_URL_LENGTH,
        errorMessage: `Give the address of your receiver, at most ${MAX_URL_LENGTH} characters.`,
      }),
      description: Type.Optional(Type.String({ maxLength: DESCRIPTION_MAX_LENGTH })),
      events: Type.Array(Type.Enum(ALL_EVENT_TYPES), {
        minItems: 1,
        maxItems: ALL_EVENT_TYPES.length,
        uniqueItems: true,
        errorMessage: 'Choose at least one event.',
      }),
    },
    { additionalProperties: false },
  ),
)

const NOTICES: Notices = {
  'ping-sent': () => 'Test event sent. It appears below once your receiver answers.',
  enabled: () => 'Endpoint enabled.',
  disabled: () => 'Endpoint disabled: nothing is sent to it until you enable it.',
  retried: () => 'The delivery will be sent again in a moment.',
  deleted: () => 'Endpoint deleted.',
}
const DoneQuery = Type.Object({
  done: Type.Optional(Type.String({ maxLength: 20 })),
})
const EndpointParams = Type.Object({ webhookId: Type.String({ minLength: 1, maxLength: 128 }) })
const DeliveryParams = Type.Object({
  webhookId: Type.String({ minLength: 1, maxLength: 128 }),
  deliveryId: Type.String({ minLength: 1, maxLength: 128 }),
})
/** The deliveries an endpoint's page shows. */
const RECENT = 25

export const webhooksAppRoutes: Routes = async (app, deps) => {
  await acceptForms(app)
  const kit = webhooksAppKit(app, deps)
  for (const routes of [endpointListRoutes, endpointRoutes, endpointDeleteRoutes, deliveryRoutes]) {
    routes(app, kit)
  }
}

/** What every group of the webhook pages' routes shares: the service, the option presets, the pages' parts. */
function webhooksAppKit(app: RouteApp, { services, web, webSessions }: RouteDeps) {
  const { webhooks } = services
  const page = { page: true } as const
  const signedIn = { config: page, preValidation: webSessions.requireSession }
  const posted = { config: page, preValidation: [webSessions.requireSession, app.csrfProtection] }
  const nav = (request: FastifyRequest, reply: FastifyReply) => appNav(request, reply, 'account')

  const list = (accountId: string) => webhooks.list(accountId, { limit: 100 }).then((listed) => listed.items)
  return { webhooks, web, signedIn, posted, nav, list }
}

type Kit = ReturnType<typeof webhooksAppKit>

/** The endpoints, and the form that adds one. */
function endpointListRoutes(app: RouteApp, { webhooks, web, signedIn, posted, nav, list }: Kit): void {
  app.get(
    WEBHOOK_PATHS.list,
    { ...signedIn, schema: { hide: true, querystring: DoneQuery } },
    async (request, reply) =>
      web.send(
        reply,
        200,
        webhooksPage({
          nav: nav(request, reply),
          endpoints: await list(sessionAccountId(request)),
          notice: noticeOf(NOTICES, request.query.done),
        }),
      ),
  )

  app.post(WEBHOOK_PATHS.list, { ...posted, schema: { hide: true } }, async (request, reply) => {
    const accountId = sessionAccountId(request)
    const form = readNewEndpoint(request.body)
    const show = async (status: number, extra: Partial<Parameters<typeof webhooksPage>[0]>) =>
      web.send(
        reply,
        status,
        webhooksPage({ nav: nav(request, reply), endpoints: await list(accountId), ...extra }),
      )
    if (!form.ok) return show(400, { form })
    const { url, description, events } = form.value
    try {
      const { secret, ...endpoint } = await webhooks.create(accountId, {
        url,
        events,
        description: description?.trim() || null,
      })
      // The secret is in this answer only: it must not be kept by a cache or restored by the history.
      return show(201, { created: { endpoint, secret } })
    } catch (error) {
      const { status, errors } = refusalOf(error)
      const values = { url, description: description ?? '', events: events.join(', ') }
      return show(status, { form: { values, errors } })
    }
  })
}

/** An endpoint's page, and the changes that come back to it: a test event, enabling, disabling, a new secret. */
function endpointRoutes(app: RouteApp, { webhooks, web, signedIn, posted, nav }: Kit): void {
  app.get(
    '/account/webhooks/:webhookId',
    { ...signedIn, schema: { hide: true, params: EndpointParams, querystring: DoneQuery } },
    async (request, reply) => {
      const accountId = sessionAccountId(request)
      const { webhookId } = request.params
      const endpoint = await webhooks.get(accountId, webhookId)
      const deliveries = await webhooks.deliveries(accountId, webhookId, { limit: RECENT })
      return web.send(
        reply,
        200,
        webhookPage({
          nav: nav(request, reply),
          endpoint,
          deliveries: deliveries.items,
          notice: noticeOf(NOTICES, request.query.done),
        }),
      )
    },
  )

  /** A change of the endpoint, then back to its page with a notice. */
  const change = (
    path: string,
    notice: string,
    act: (accountId: string, webhookId: string) => Promise<unknown>,
  ) =>
    app.post(path, { ...posted, schema: { hide: true, params: EndpointParams } }, async (request, reply) => {
      const { webhookId } = request.params as { webhookId: string }
      await act(sessionAccountId(request), webhookId)
      return reply.redirect(withNotice(WEBHOOK_PATHS.view(webhookId), notice), 303)
    })
  change('/account/webhooks/:webhookId/ping', 'ping-sent', (accountId, id) => webhooks.ping(accountId, id))
  change('/account/webhooks/:webhookId/enable', 'enabled', (accountId, id) =>
    webhooks.update(accountId, id, { isActive: true }),
  )
  change('/account/webhooks/:webhookId/disable', 'disabled', (accountId, id) =>
    webhooks.update(accountId, id, { isActive: false }),
  )

  app.post(
    '/account/webhooks/:webhookId/rotate',
    { ...posted, schema: { hide: true, params: EndpointParams } },
    async (request, reply) => {
      const accountId = sessionAccountId(request)
      const { webhookId } = request.params
      const { secret, ...endpoint } = await webhooks.rotateSecret(accountId, webhookId)
      const deliveries = await webhooks.deliveries(accountId, webhookId, { limit: RECENT })
      // Shown in this answer only, as a new endpoint's secret is.
      return web.send(
        reply,
        200,
        webhookPage({ nav: nav(request, reply), endpoint, deliveries: deliveries.items, secret }),
      )
    },
  )
}

/** Deleting an endpoint, after a confirmation. */
function endpointDeleteRoutes(app: RouteApp, { webhooks, web, signedIn, posted, nav }: Kit): void {
  app.get(
    '/account/webhooks/:webhookId/delete',
    { ...signedIn, schema: { hide: true, params: EndpointParams } },
    async (request, reply) => {
      const endpoint = await webhooks.get(sessionAccountId(request), request.params.webhookId)
      return web.send(reply, 200, deleteWebhookPage({ nav: nav(request, reply), endpoint }))
    },
  )

  app.post(
    '/account/webhooks/:webhookId/delete',
    { ...posted, schema: { hide: true, params: EndpointParams } },
    async (request, reply) => {
      await webhooks.delete(sessionAccountId(request), request.params.webhookId)
      return reply.redirect(withNotice(WEBHOOK_PATHS.list, 'deleted'), 303)
    },
  )
}

/** A delivery sent again. */
function deliveryRoutes(app: RouteApp, { webhooks, posted }: Kit): void {
  app.post(
    '/account/webhooks/:webhookId/deliveries/:deliveryId/retry',
    { ...posted, schema: { hide: true, params: DeliveryParams } },
    async (request, reply) => {
      const { webhookId, deliveryId } = request.params
      await webhooks.retry(sessionAccountId(request), webhookId, deliveryId)
      return reply.redirect(withNotice(WEBHOOK_PATHS.view(webhookId), 'retried'), 303)
    },
  )
}
