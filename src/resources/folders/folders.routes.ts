import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import { Data, ERROR_RESPONSES, IdParam, List, PageQuery } from '../../platform/http/schemas.ts'
import { FolderBody, serializeFolder } from './folders.schemas.ts'

// Folder operations accept the folders:* scopes of the contract and also the files:* scopes, which the
// contract's prose reference names for them (README, "Authentication and scopes").
const READ = requireScopes(['folders:read'], ['files:read'])
const WRITE = requireScopes(['folders:write'], ['files:write'])
const tags = ['folders']
const FolderParams = IdParam('folderId', 100)

export const foldersRoutes: Routes = async (app, deps) => {
  for (const routes of [folderListRoutes, oneFolderRoutes]) routes(app, deps)
}

/** The account's folders: the list, a new one. */
function folderListRoutes(app: RouteApp, { services }: RouteDeps): void {
  const { folders } = services
  app.get(
    '/folders',
    {
      schema: {
        tags,
        operationId: 'listFolders',
        summary: 'List folders',
        security: READ,
        querystring: Type.Object(PageQuery(25), { additionalProperties: false }),
        response: { 200: List(Type.Ref('Folder')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25 } = request.query
      const page = await folders.list(accountOf(request), { cursor, limit })
      return { data: page.items.map(serializeFolder), pagination: { nextCursor: page.nextCursor } }
    },
  )

  app.post(
    '/folders',
    {
      schema: {
        tags,
        operationId: 'createFolder',
        summary: 'Create a folder',
        security: WRITE,
        body: FolderBody,
        response: { 201: Data(Type.Ref('Folder')), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const folder = await folders.create(accountOf(request), request.body.name)
      return reply.status(201).send({ data: serializeFolder(folder) })
    },
  )
}

/** One folder: read, renamed, deleted. */
function oneFolderRoutes(app: RouteApp, { services }: RouteDeps): void {
  const { folders } = services
  app.get(
    '/folders/:folderId',
    {
      schema: {
        tags,
        operationId: 'getFolder',
        summary: 'Get a folder',
        security: READ,
        params: FolderParams,
        response: { 200: Data(Type.Ref('Folder')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeFolder(await folders.get(accountOf(request), request.params.folderId)),
    }),
  )

  app.patch(
    '/folders/:folderId',
    {
      schema: {
        tags,
        operationId: 'renameFolder',
        summary: 'Rename a folder',
        security: WRITE,
        params: FolderParams,
        body: FolderBody,
        response: { 200: Data(Type.Ref('Folder')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeFolder(
        await folders.rename(accountOf(request), request.params.folderId, request.body.name),
      ),
    }),
  )

  app.delete(
    '/folders/:folderId',
    {
      schema: {
        tags,
        operationId: 'deleteFolder',
        summary: 'Delete a folder',
        description: 'Deletes only the folder: its files and file requests are kept and moved to root.',
        security: WRITE,
        params: FolderParams,
        response: {
          200: Data(
            Type.Object({ id: Type.String(), deleted: Type.Boolean() }, { additionalProperties: false }),
          ),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => ({ data: await folders.delete(accountOf(request), request.params.folderId) }),
  )
}
