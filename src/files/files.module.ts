// What files bring to the application: their API, the owner's files pages, and zips of several files.
import type { Module } from '../routes.ts'
import { filesRoutes } from './files.routes.ts'
import { FileSchema, FileShareSummarySchema, FileSummarySchema } from './files.schemas.ts'
import { filesAppRoutes } from './files-app.routes.ts'
import { zipRoutes } from './zip/zip.routes.ts'

export const filesModule: Module = {
  schemas: [FileSummarySchema, FileShareSummarySchema, FileSchema],
  apiRoutes: [filesRoutes],
  pageRoutes: [filesAppRoutes, zipRoutes],
}
