// What uploads bring to the application: preparing and following uploads (API and the owner's app), and the
// blob endpoint the bytes go to, which speaks the Vercel Blob protocol under a path of its own.
import { BLOB_API_PATH } from '../../platform/public-urls.ts'
import type { Module } from '../../routes.ts'
import { blobEndpointRoutes } from './blob-endpoint/blob-endpoint.routes.ts'
import { uploadsRoutes } from './uploads.routes.ts'
import { uploadsAppRoutes } from './uploads-app.routes.ts'

export const uploadsModule: Module = {
  apiRoutes: [uploadsRoutes],
  pageRoutes: [uploadsAppRoutes],
  mounts: [{ prefix: BLOB_API_PATH, routes: blobEndpointRoutes }],
}
