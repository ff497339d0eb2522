// What webhooks bring to the application: their API and the owner's webhook pages.
import type { Module } from '../../routes.ts'
import { webhooksRoutes } from './webhooks.routes.ts'
import { DeliverySchema, WebhookSchema, WebhookWithSecretSchema } from './webhooks.schemas.ts'
import { webhooksAppRoutes } from './webhooks-app.routes.ts'

export const webhooksModule: Module = {
  schemas: [WebhookSchema, WebhookWithSecretSchema, DeliverySchema],
  apiRoutes: [webhooksRoutes],
  pageRoutes: [webhooksAppRoutes],
}
