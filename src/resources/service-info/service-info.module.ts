// What the server says of itself: health, the capability index, the OpenAPI document and its page.
import type { Module } from '../../routes.ts'
import { serviceInfoRoutes } from './service-info.routes.ts'

export const serviceInfoModule: Module = { pageRoutes: [serviceInfoRoutes] }
