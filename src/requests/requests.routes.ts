import { Type } from 'typebox'
import { serializeFolder } from '../folders/folders.routes.ts'
import { accountOf, requireScopes } from '../http/auth.ts'
import type { Routes } from '../http/plugin.ts'
import { Data, ERROR_RESPONSES, IdParam, List, toIso } from '../http/schemas.ts'
import {
  CreateRequestBody,
  EMAIL_RULE,
  ListRequestsQuery,
  SubmissionsQuery,
  UpdateRequestBody,
} from './requests.schemas.ts'
import type { FileRequest, Submission } from './requests.service.ts'

const READ = requireScopes(['requests:read'])
const WRITE = requireScopes(['requests:write'])
const tags = ['requests']
const RequestParams = IdParam('requestId')

const serializeRequest = (r: FileRequest) => ({
  id: r.id,
  title: r.title,
  description: r.description,
  collectEmail: r.collectEmail,
  emailRequired: r.emailRequired,
  isActive: r.isActive,
  createdAt: toIso(r.createdAt),
  publicUrl: r.publicUrl,
  folderId: r.folderId,
  folder: r.folder === null ? null : serializeFolder(r.folder),
})

const serializeRequestWithCount = (r: FileRequest) => ({
  ...serializeRequest(r),
  submissionCount: r.submissionCount,
})

const serializeSubmission = (s: Submission) => ({
  submitterName: s.submitterName,
  submitterEmail: s.submitterEmail,
  message: s.message,
  createdAt: toIso(s.createdAt),
  file: s.file,
})

export const requestsRoutes: Routes = async (app, { services }) => {
  const { requests } = services
  app.get(
    '/requests',
    {
      schema: {
        tags,
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
        data: page.items.map(serializeRequestWithCount),
        pagination: { nextCursor: page.nextCursor },
      }
    },
  )

  app.post(
    '/requests',
    {
      schema: {
        tags,
        summary: 'Create a file request',
        description: `A new request is active; an omitted \`description\` is null. ${EMAIL_RULE}`,
        security: WRITE,
        body: CreateRequestBody,
        response: { 201: Data(Type.Ref('FileRequest')), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const created = await requests.create(accountOf(request), request.body)
      return reply.status(201).send({ data: serializeRequest(created) })
    },
  )

  app.get(
    '/requests/:requestId',
    {
      schema: {
        tags,
        summary: 'Get a file request',
        security: READ,
        params: RequestParams,
        response: { 200: Data(Type.Ref('FileRequestWithCount')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeRequestWithCount(await requests.get(accountOf(request), request.params.requestId)),
    }),
  )

  app.patch(
    '/requests/:requestId',
    {
      schema: {
        tags,
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
      ),
    }),
  )

  app.get(
    '/requests/:requestId/submissions',
    {
      schema: {
        tags,
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
