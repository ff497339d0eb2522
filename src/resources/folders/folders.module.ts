// What folders bring to the application: their API and their pages in the owner's app.
import type { Module } from '../../routes.ts'
import { foldersRoutes } from './folders.routes.ts'
import { FolderSchema } from './folders.schemas.ts'
import { foldersAppRoutes } from './folders-app.routes.ts'

export const foldersModule: Module = {
  schemas: [FolderSchema],
  apiRoutes: [foldersRoutes],
  pageRoutes: [foldersAppRoutes],
}
