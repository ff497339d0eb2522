// What the server says of itself: health, the capability index, the OpenAPI document and its page.
import type { Module } from '../../module.ts'
import { HealthService } from './health.service.ts'
import { serviceInfoRoutes } from './service-info.routes.ts'

declare module '../../module.ts' {
  interface Services {
    health: HealthService
  }
}

export const serviceInfoModule: Module = {
  pageRoutes: [serviceInfoRoutes],
  wire: ({ db, blobs }) => ({ services: { health: new HealthService({ pingDatabase: db.ping, blobs }) } }),
}
