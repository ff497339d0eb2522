// What file requests bring to the application: the owner's API and pages, and the public API and page that
// submitters use.
import type { Module } from '../../routes.ts'
import { publicRequestsRoutes } from './public-requests.routes.ts'
import { PublicFileRequestSchema } from './public-requests.schemas.ts'
import { requestPagesRoutes } from './request-pages.routes.ts'
import { requestsRoutes } from './requests.routes.ts'
import {
  FileRequestSchema,
  FileRequestWithCountSchema,
  RequestLimitsSchema,
  RequestStateSchema,
  SubmissionSchema,
} from './requests.schemas.ts'
import { requestsAppRoutes } from './requests-app.routes.ts'

export const requestsModule: Module = {
  schemas: [
    RequestStateSchema,
    FileRequestSchema,
    FileRequestWithCountSchema,
    RequestLimitsSchema,
    PublicFileRequestSchema,
    SubmissionSchema,
  ],
  apiRoutes: [requestsRoutes, publicRequestsRoutes],
  pageRoutes: [requestPagesRoutes, requestsAppRoutes],
}
