// A file request's public API, what its page (`/r/{publicId}`) calls and what any client may call in its
// place: read the request, prepare a submitter's uploads, follow and cancel them. No API credential: the
// request's public id is the capability, and each upload's grant (sent in the body, never in a URL, since
// URLs end up in logs) authorizes its status and its cancelling. A Coffer extension, beyond the contract.
import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { AppError, RetryLater } from '../../platform/errors.ts'
import { clientAddress } from '../../platform/http/client-address.ts'
import { addressBucket, retryAfterSeconds } from '../../platform/http/rate-limit.ts'
import { Data, ERROR_RESPONSES, extensionOperation } from '../../platform/http/schemas.ts'
import { publicRequestApiPath } from '../../platform/public-urls.ts'
import {
  CancelUploadsBody,
  PreparePublicUploadsBody,
  PublicRequestParams,
  PublicUploadGrantSchema,
  PublicUploadStatusSchema,
  serializePublicGrant,
  serializePublicRequest,
  serializePublicStatus,
  UploadStatusQueryBody,
} from './public-requests.schemas.ts'
import {
  CLOSED_MESSAGES,
  MAX_PENDING_PER_CLIENT,
  MAX_UNDER_WAY_PER_REQUEST,
  UNUSED_GRANT_SECONDS,
} from './public-requests.service.ts'

const tags = ['public requests']
const BASE = publicRequestApiPath(':publicId')
const RESPONSES = {
  400: ERROR_RESPONSES[400],
  404: ERROR_RESPONSES[404],
  429: ERROR_RESPONSES[429],
  default: ERROR_RESPONSES.default,
}
const GONE = Type.Ref('Error', {
  description: 'The request no longer accepts files: disabled, past its deadline, or full.',
})

/**
 * Files prepared per client address, counted file by file: a burst of 1,000, then one every 0.6 seconds,
 * across processes.
 */
const PREPARED_FILES = { limit: 1000, windowMs: 10 * 60_000 }

export const publicRequestsRoutes: Routes = async (app, deps) => {
  for (const routes of [publicRequestPageRoutes, publicUploadRoutes]) await routes(app, deps)
}

/** What a request's public page reads of it, and its uploads prepared. */
async function publicRequestPageRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { publicRequests } = services
  const preparedFiles = app.rateLimitStore(PREPARED_FILES)
  app.get(
    BASE,
    {
      schema: {
        tags,
        operationId: 'getPublicRequest',
        summary: 'Read a file request by its public id',
        ...extensionOperation(`What the request's page shows a submitter: its title and description, what it asks
for, and its limits. An unknown id is a 404; a request that no longer accepts files (disabled, past its
deadline, or full: it received \`maxFiles\` files) a 410 that says why and nothing more of it.`),
        security: [],
        params: PublicRequestParams,
        response: { 200: Data(Type.Ref('PublicFileRequest')), 410: GONE, ...RESPONSES },
      },
    },
    async (request) => {
      const found = await publicRequests.open(request.params.publicId)
      if (found.kind === 'unknown') throw new AppError('not_found', 'File request not found.')
      if (found.state !== 'open') throw new AppError('gone', CLOSED_MESSAGES[found.state])
      const { request: fileRequest } = found
      return {
        data: serializePublicRequest(fileRequest, await publicRequests.largestFile(fileRequest), urls),
      }
    },
  )

  app.post(
    `${BASE}/uploads`,
    {
      schema: {
        tags,
        operationId: 'preparePublicUploads',
        summary: "Prepare a submitter's uploads",
        ...extensionOperation(`The submitter's name, email and message, and the files they chose: one upload is
prepared per file, bound to this request and to those fields, exactly as \`POST /files\` prepares them (send each
with \`upload()\` of \`@vercel/blob/client\`). When its bytes are stored and checked, the file is created in the
request's folder (root when it has none), owned by the request's owner, together with one Submission, in one
transaction. Everything is checked before anything is written: the fields (name at most 100 characters, email at
most 254 and valid, message at most 1,000, no control characters; the email required when the request says so,
dropped when it does not collect it), each file against the request's limits (size, types), and the number of
files against what the request still accepts (409). The files count toward the storage quota of the request's
owner: files it has no room for are a 413 \`quota_exceeded\`. \`error.field\` names the field at fault.

Limits (429 with Retry-After): at most ${PREPARED_FILES.limit.toLocaleString('en')} files prepared per
${PREPARED_FILES.windowMs / 60_000} minutes per client address; at most ${MAX_PENDING_PER_CLIENT} uploads
prepared and not yet sent per address, and ${MAX_UNDER_WAY_PER_REQUEST.toLocaleString('en')} under way per
request. A grant whose upload has not started (the \`upload()\` handshake) ${UNUSED_GRANT_SECONDS / 60} minutes after
the preparation expires then, as its \`expiresAt\` says; once started it is valid for the server's whole grant
lifetime from the preparation. Prepare an expired file again when its turn comes.`),
        security: [],
        params: PublicRequestParams,
        body: PreparePublicUploadsBody,
        response: {
          201: Data(
            Type.Object({ uploads: Type.Array(PublicUploadGrantSchema) }, { additionalProperties: false }),
          ),
          409: ERROR_RESPONSES[409],
          410: GONE,
          413: Type.Ref('Error', {
            description:
              '`quota_exceeded`: the request cannot take these files, its owner having no room left for them (the message says so, and nothing of the owner’s account), or one file is larger than it can take (`error.field` names it). Nothing is prepared.',
          }),
          ...RESPONSES,
        },
      },
    },
    async (request, reply) => {
      const client = addressBucket(clientAddress(request))
      const files = request.body.files.length
      const decision = await preparedFiles.hit(`request-files-${client}`, files)
      if (!decision.allowed) {
        const wait = retryAfterSeconds(decision.retryAfterUs)
        throw new RetryLater(
          `Too many files were prepared from this address: at most ${PREPARED_FILES.limit.toLocaleString('en')} per ${PREPARED_FILES.windowMs / 60_000} minutes. Retry in ${wait} seconds.`,
          wait,
        )
      }
      const grants = await publicRequests.prepareUploads(request.params.publicId, request.body, client)
      return reply.status(201).send({ data: { uploads: grants.map(serializePublicGrant) } })
    },
  )
}

/** The uploads of a public page: their status, cancelled. */
async function publicUploadRoutes(app: RouteApp, { services }: RouteDeps): Promise<void> {
  const { publicRequests } = services
  app.post(
    `${BASE}/uploads/status`,
    {
      schema: {
        tags,
        operationId: 'getPublicUploadStatus',
        summary: "The status of a submitter's uploads",
        ...extensionOperation(`Each upload named with the grant of its \`clientPayload\`, in the body so that no
grant is ever part of a URL: pending (uploading, then processing), complete, or error with a message for the
submitter. An unknown upload, a wrong grant or an upload of another request refuses them all (401).`),
        security: [],
        params: PublicRequestParams,
        body: UploadStatusQueryBody,
        response: {
          200: Data(Type.Array(PublicUploadStatusSchema)),
          401: ERROR_RESPONSES[401],
          ...RESPONSES,
        },
      },
    },
    async (request) => {
      const { uploads } = request.body
      const statuses = await publicRequests.uploadStatus(request.params.publicId, uploads)
      return { data: statuses.map((status, i) => serializePublicStatus(uploads[i]?.intentId ?? '', status)) }
    },
  )

  app.post(
    `${BASE}/uploads/cancel`,
    {
      schema: {
        tags,
        operationId: 'cancelPublicUploads',
        summary: "Cancel a submitter's uploads",
        ...extensionOperation(`Ends the uploads named (each with its grant) that have not stored their file yet: what
they had received is removed, and they no longer count against the request's limit on files. An upload whose file
is already stored is left to finish; cancelling twice changes nothing.`),
        security: [],
        params: PublicRequestParams,
        body: CancelUploadsBody,
        response: {
          204: { type: 'null', description: 'Cancelled, or there was nothing left to cancel.' },
          401: ERROR_RESPONSES[401],
          ...RESPONSES,
        },
      },
    },
    async (request, reply) => {
      await publicRequests.cancelUploads(request.params.publicId, request.body.uploads)
      return reply.status(204).send(null)
    },
  )
}
