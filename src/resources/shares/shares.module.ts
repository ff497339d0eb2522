// What share links bring to the application: their API, the public share pages and the owner's link panel.
import type { Module } from '../../routes.ts'
import { folderSharesRoutes } from './folder-shares.routes.ts'
import { FolderShareSchema } from './folder-shares.schemas.ts'
import { sharePagesRoutes } from './share-pages.routes.ts'
import { sharesRoutes } from './shares.routes.ts'
import { ShareSchema, ShareStateSchema, ShareWithFileSchema } from './shares.schemas.ts'
import { sharesAppRoutes } from './shares-app.routes.ts'

export const sharesModule: Module = {
  schemas: [ShareStateSchema, ShareSchema, ShareWithFileSchema, FolderShareSchema],
  apiRoutes: [sharesRoutes, folderSharesRoutes],
  pageRoutes: [sharePagesRoutes, sharesAppRoutes],
}
