// What webhooks bring to the application: their API and the owner's webhook pages, the outbox every module
// records its events in (events.repository.ts; wiring.ts makes the recorder of it), and the sender of its
// deliveries, which emails an owner whose endpoint it disables.
import type { Module } from '../../module.ts'
import { EVENT_RETENTION_MS, EventsRepository } from './events.repository.ts'
import { endpointDisabledMessage } from './webhook-mail.ts'
import { WebhookSecrets } from './webhook-secrets.ts'
import { WebhookSender } from './webhook-sender.job.ts'
import { WebhooksRepository } from './webhooks.repository.ts'
import { webhooksRoutes } from './webhooks.routes.ts'
import { DeliverySchema, WebhookSchema, WebhookWithSecretSchema } from './webhooks.schemas.ts'
import { WebhooksService } from './webhooks.service.ts'
import { webhooksAppRoutes } from './webhooks-app.routes.ts'

declare module '../../module.ts' {
  interface Repositories {
    events: EventsRepository
    webhooks: WebhooksRepository
  }
  interface Services {
    /** Webhook endpoints, their deliveries and test events. */
    webhooks: WebhooksService
  }
  interface Jobs {
    /** Sends the webhook deliveries the outbox holds, in every process (webhook-sender.job.ts). */
    webhookSender: WebhookSender
  }
}

export const webhooksModule: Module = {
  schemas: [WebhookSchema, WebhookWithSecretSchema, DeliverySchema],
  apiRoutes: [webhooksRoutes],
  pageRoutes: [webhooksAppRoutes],
  repositories: (db) => ({ events: new EventsRepository(db), webhooks: new WebhooksRepository(db) }),
  wire: ({ config, db, urls, serverSecrets, mail, audit }, { repositories: r }) => {
    const secrets = new WebhookSecrets(serverSecrets)
    const webhookSender = new WebhookSender({
      soleSender: db.engine === 'sqlite',
      events: r.events,
      webhooks: r.webhooks,
      secrets,
      allowPrivate: config.webhooksAllowPrivate,
      transaction: db.transaction,
      audit,
      onDisabled: config.mail
        ? async (endpoint, reason) => {
            const owner = await r.accounts.byId(endpoint.accountId)
            if (!owner) return undefined
            const page = `${urls.origin}/account/webhooks/${endpoint.id}`
            const message = endpointDisabledMessage(owner.email, endpoint, reason, page)
            return (trx) => mail.enqueue(trx, message).then(() => {})
          }
        : undefined,
    })
    const webhooks = new WebhooksService({
      webhooks: r.webhooks,
      events: r.events,
      secrets,
      allowPrivate: config.webhooksAllowPrivate,
      audit,
    })
    return { services: { webhooks }, jobs: { webhookSender } }
  },
  purges: (_platform, { repositories }) => ({
    'webhook events': () => repositories.events.purge(Date.now() - EVENT_RETENTION_MS),
  }),
}
