// What files bring to the application: their API and the trash's, the owner's files and trash pages, and zips of
// several files.
import type { Module } from '../../routes.ts'
import { filesRoutes } from './files.routes.ts'
import { FileSchema, FileShareSummarySchema, FileSummarySchema, TrashedFileSchema } from './files.schemas.ts'
import { filesAppRoutes } from './files-app.routes.ts'
import { trashRoutes } from './trash.routes.ts'
import { trashAppRoutes } from './trash-app.routes.ts'
import { zipRoutes } from './zip/zip.routes.ts'

export const filesModule: Module = {
  schemas: [FileSummarySchema, FileShareSummarySchema, FileSchema, TrashedFileSchema],
  apiRoutes: [filesRoutes, trashRoutes],
  pageRoutes: [filesAppRoutes, trashAppRoutes, zipRoutes],
}
