import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import {
  Data,
  dateTimeOf,
  ERROR_RESPONSES,
  extensionOperation,
  IdParam,
  List,
} from '../../platform/http/schemas.ts'
import {
  CreateRequestBody,
  EMAIL_RULE,
  ListRequestsQuery,
  PutRequestLimitsBody,
  SubmissionsQuery,
  serializeLimits,
  serializeRequest,
  serializeRequestWithCount,
  serializeSubmission,
  UpdateRequestBody,
} from './requests.schemas.ts'

const READ = requireScopes(['requests:read'])
const WRITE = requireScopes(['requests:write'])
const tags = ['requests']
const RequestParams = IdParam('requestId')

export const requestsRoutes: Routes = async (app, deps) => {
  for (const routes of [requestListRoutes, oneRequestRoutes, requestLimitRoutes]) await routes(app, deps)
}

/** The account's file requests: the list, a new one. */
async function requestListRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { requests } = services
  app.get(
    '/requests',
    {
      schema: {
        tags,
        operationId: 'listRequests',
        summary: 'List file requests',
        description:
          'Newest first. `folderId` narrows the list to one owned folder (another account’s folder is a 404).',
        security: READ,
        querystring: ListRequestsQuery,
        response: { 200: List(Type.Ref('FileRequestWithCount')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25, folderId } = request.query
      const page = await requests.list(accountOf(request), { cursor, limit, folderId })
      return {
        data: page.items.map((r) => serializeRequestWithCount(r, urls)),
        pagination: { nextCursor: page.nextCursor },
      }
    },
  )

  app.post(
    '/requests',
    {
      schema: {
        tags,
        operationId: 'createRequest',
        summary: 'Create a file request',
        description: `A new request is active; an omitted \`description\` is null. ${EMAIL_RULE}`,
        security: WRITE,
        body: CreateRequestBody,
        response: { 201: Data(Type.Ref('FileRequest')), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const created = await requests.create(accountOf(request), request.body)
      return reply.status(201).send({ data: serializeRequest(created, urls) })
    },
  )
}

/** One file request: read, changed, and what was sent to it. */
async function oneRequestRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { requests } = services
  app.get(
    '/requests/:requestId',
    {
      schema: {
        tags,
        operationId: 'getRequest',
        summary: 'Get a file request',
        security: READ,
        params: RequestParams,
        response: { 200: Data(Type.Ref('FileRequestWithCount')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeRequestWithCount(await requests.get(accountOf(request), request.params.requestId), urls),
    }),
  )

  app.patch(
    '/requests/:requestId',
    {
      schema: {
        tags,
        operationId: 'updateRequest',
        summary: 'Update, move or disable a file request',
        description:
          'Set at least one property. `isActive: false` disables the request, `description: null` clears it, ' +
          `\`folderId\` moves it into an owned folder (null: to root). ${EMAIL_RULE}`,
        security: WRITE,
        params: RequestParams,
        body: UpdateRequestBody,
        response: { 200: Data(Type.Ref('FileRequest')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeRequest(
        await requests.update(accountOf(request), request.params.requestId, request.body),
        urls,
      ),
    }),
  )

  app.get(
    '/requests/:requestId/submissions',
    {
      schema: {
        tags,
        operationId: 'listSubmissions',
        summary: 'List the submissions of a file request',
        description:
          'Newest first. Each submission keeps the summary of its file as submitted, also after the file is deleted.',
        security: READ,
        params: RequestParams,
        querystring: SubmissionsQuery,
        response: { 200: List(Type.Ref('Submission')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25 } = request.query
      const page = await requests.listSubmissions(accountOf(request), request.params.requestId, {
        cursor,
        limit,
      })
      return { data: page.items.map(serializeSubmission), pagination: { nextCursor: page.nextCursor } }
    },
  )
}

/** A request's limits. */
async function requestLimitRoutes(app: RouteApp, { services }: RouteDeps): Promise<void> {
  const { requests } = services
  app.get(
    '/requests/:requestId/limits',
    {
      schema: {
        tags,
        operationId: 'getRequestLimits',
        summary: "A file request's limits",
        ...extensionOperation(`What the request's public page accepts: a deadline, files in all, the largest file and
the types accepted. A new request has none.`),
        security: READ,
        params: RequestParams,
        response: { 200: Data(Type.Ref('RequestLimits')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeLimits((await requests.get(accountOf(request), request.params.requestId)).limits),
    }),
  )

  app.put(
    '/requests/:requestId/limits',
    {
      schema: {
        tags,
        operationId: 'setRequestLimits',
        summary: "Set a file request's limits",
        ...extensionOperation(`Replaces every limit; a field left out is no limit of that kind. The limits apply to
preparations from then on: uploads already prepared may finish. \`deadline\` must be in the future, \`maxFileSize\`
at most the server maximum, and each entry of \`allowedTypes\` an extension (\`.pdf\`) or a MIME type
(\`application/pdf\`, \`image/*\`).`),
        security: WRITE,
        params: RequestParams,
        body: PutRequestLimitsBody,
        response: { 200: Data(Type.Ref('RequestLimits')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { deadline, ...rest } = request.body
      const limits = await requests.setLimits(accountOf(request), request.params.requestId, {
        ...rest,
        deadlineAt: dateTimeOf(deadline, 'deadline'),
      })
      return { data: serializeLimits(limits) }
    },
  )
}
