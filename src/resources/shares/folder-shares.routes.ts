import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import {
  Data,
  dateTimeOf,
  ERROR_RESPONSES,
  extensionOperation,
  FolderIdValue,
  IdParam,
  List,
  PageQuery,
} from '../../platform/http/schemas.ts'
import { CreateFolderShareBody, serializeFolderShare } from './folder-shares.schemas.ts'
import { UpdateShareBody } from './shares.schemas.ts'

const READ = requireScopes(['shares:read'])
const WRITE = requireScopes(['shares:write'])
const tags = ['folder-shares']
const FolderShareParams = IdParam('shareId')

export const folderSharesRoutes: Routes = async (app, deps) => {
  for (const routes of [folderShareListRoutes, oneFolderShareRoutes]) await routes(app, deps)
}

/** The account's folder links: the list, a new one. */
async function folderShareListRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { folderShares } = services
  app.get(
    '/folder-shares',
    {
      schema: {
        tags,
        operationId: 'listFolderShares',
        summary: 'List folder links',
        ...extensionOperation(
          'The folder links of the account with their folders, newest first; with `folderId`, the link of that folder (none or one).',
        ),
        security: READ,
        querystring: Type.Object(
          {
            ...PageQuery(25),
            folderId: Type.Optional(FolderIdValue('Only the link of this owned folder.')),
          },
          { additionalProperties: false },
        ),
        response: { 200: List(Type.Ref('FolderShare')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25, folderId } = request.query
      if (folderId !== undefined) {
        const share = await folderShares.byFolder(accountOf(request), folderId)
        return { data: share ? [serializeFolderShare(share, urls)] : [], pagination: { nextCursor: null } }
      }
      const page = await folderShares.list(accountOf(request), { cursor, limit })
      return {
        data: page.items.map((share) => serializeFolderShare(share, urls)),
        pagination: { nextCursor: page.nextCursor },
      }
    },
  )

  app.post(
    '/folder-shares',
    {
      schema: {
        tags,
        operationId: 'createFolderShare',
        summary: 'Create or reactivate a folder link',
        ...extensionOperation(`A folder has at most one link, made, reactivated or returned as \`POST /shares\` does for a file: with
none yet, this creates an active one; a disabled or expired one is reactivated, keeping its public URL and counts, with
the \`expiresAt\` of this body (no expiry when omitted) and the \`password\` and \`maxDownloads\` given (those omitted
stay as they were); an active one is returned unchanged (change it with PATCH). The answer is 201 in all three cases.
A folder that does not exist or belongs to another account is a 404.`),
        security: WRITE,
        body: CreateFolderShareBody,
        response: { 201: Data(Type.Ref('FolderShare')), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { folderId, expiresAt, password, maxDownloads } = request.body
      const share = await folderShares.create(accountOf(request), folderId, {
        expiresAt: dateTimeOf(expiresAt, 'expiresAt'),
        password,
        maxDownloads,
      })
      return reply.status(201).send({ data: serializeFolderShare(share, urls) })
    },
  )
}

/** One folder link: read, its settings changed. */
async function oneFolderShareRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { folderShares } = services
  app.get(
    '/folder-shares/:shareId',
    {
      schema: {
        tags,
        operationId: 'getFolderShare',
        summary: 'Get a folder link',
        ...extensionOperation('The folder link with its folder, its state and counts.'),
        security: READ,
        params: FolderShareParams,
        response: { 200: Data(Type.Ref('FolderShare')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeFolderShare(await folderShares.get(accountOf(request), request.params.shareId), urls),
    }),
  )

  app.patch(
    '/folder-shares/:shareId',
    {
      schema: {
        tags,
        operationId: 'updateFolderShare',
        summary: 'Update a folder link',
        ...extensionOperation(`The same settings, with the same rules, as \`PATCH /shares/{shareId}\`: \`isActive\`, \`expiresAt\`
(in the future; null removes it; enabling a link whose expiry has passed is a 409 unless the body sets a new one),
\`password\` (a new one asks every visitor again; null removes it) and \`maxDownloads\` (null removes the limit).`),
        security: WRITE,
        params: FolderShareParams,
        body: UpdateShareBody,
        response: { 200: Data(Type.Ref('FolderShare')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { isActive, expiresAt, password, maxDownloads } = request.body
      const share = await folderShares.update(accountOf(request), request.params.shareId, {
        isActive,
        expiresAt: dateTimeOf(expiresAt, 'expiresAt'),
        password,
        maxDownloads,
      })
      return { data: serializeFolderShare(share, urls) }
    },
  )
}
