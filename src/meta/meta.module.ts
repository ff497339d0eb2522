// What the server says of itself: health, the capability index, the OpenAPI document and its page.
import type { Module } from '../routes.ts'
import { metaRoutes } from './meta.routes.ts'

export const metaModule: Module = { pageRoutes: [metaRoutes] }
