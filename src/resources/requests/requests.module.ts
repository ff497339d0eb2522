// What file requests bring to the application: the owner's API and pages, the public API and page that
// submitters use, the submissions that uploads to a request become, and the jobs that close requests at their
// deadline and tell owners of what they received.
import type { Module } from '../../module.ts'
import { publicRequestsRoutes } from './public-requests.routes.ts'
import { PublicFileRequestSchema } from './public-requests.schemas.ts'
import { PublicRequestsService } from './public-requests.service.ts'
import { RequestDeadlinesJob } from './request-deadlines.job.ts'
import { requestPagesRoutes } from './request-pages.routes.ts'
import { type FileRequest, RequestsRepository } from './requests.repository.ts'
import { requestsRoutes } from './requests.routes.ts'
import {
  FileRequestSchema,
  FileRequestWithCountSchema,
  RequestLimitsSchema,
  RequestStateSchema,
  SubmissionSchema,
  serializeRequestWithCount,
  serializeSubmission,
} from './requests.schemas.ts'
import { type RequestEvents, RequestsService } from './requests.service.ts'
import { requestsAppRoutes } from './requests-app.routes.ts'
import { SubmissionNoticesJob } from './submission-notices.job.ts'
import { SubmissionsService } from './submissions.service.ts'

declare module '../../module.ts' {
  interface Repositories {
    requests: RequestsRepository
  }
  interface Services {
    requests: RequestsService
    publicRequests: PublicRequestsService
    /** Files that requests receive, as their submissions (handed to uploads' processing). */
    submissions: SubmissionsService
  }
  interface Jobs {
    /** Records request.closed for the file requests whose deadline passed while they were open. */
    requestDeadlines: RequestDeadlinesJob
    /** Tells owners of their requests' submissions by email; undefined without SMTP_URL. */
    submissionNotices: SubmissionNoticesJob | undefined
  }
  interface EventPayloads extends RequestEvents {}
}

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
  repositories: (db) => ({ requests: new RequestsRepository(db) }),
  wire: ({ config, db, urls, events, audit, exclusively, mail }, { repositories: r, services }) => {
    const { transaction } = db
    const submissionNotices =
      config.mail &&
      new SubmissionNoticesJob({
        transaction,
        requests: r.requests,
        exclusively,
        ownerEmail: async (accountId) => (await r.accounts.byId(accountId))?.email,
        queueMail: (trx, message) => mail.enqueue(trx, message),
        requestPage: (requestId) => `${urls.origin}/requests/${requestId}`,
      })
    return {
      services: {
        requests: new RequestsService({
          transaction,
          requests: r.requests,
          folders: r.folders,
          maxFileSize: config.maxFileSize,
          events,
          audit,
        }),
        publicRequests: new PublicRequestsService({
          requests: r.requests,
          uploadsRepository: r.uploads,
          uploads: services.uploads,
          maxFileSize: config.maxFileSize,
          owners: services.quotas,
        }),
        submissions: new SubmissionsService({
          requests: r.requests,
          files: services.files,
          events,
          audit,
          tellOwners: config.mail !== undefined,
        }),
      },
      jobs: {
        requestDeadlines: new RequestDeadlinesJob({
          transaction,
          requests: r.requests,
          events,
          audit,
          exclusively,
        }),
        submissionNotices,
      },
    }
  },
  eventShapes: (urls) => {
    const request = (fileRequest: FileRequest) => serializeRequestWithCount(fileRequest, urls)
    return {
      'submission.received': (received) => ({
        request: request(received.request),
        submission: serializeSubmission(received.submission),
      }),
      'request.closed': (closed) => ({ request: request(closed.request), reason: closed.reason }),
    }
  },
}
