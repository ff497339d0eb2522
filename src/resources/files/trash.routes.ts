// The trash's API (trash.service.ts): what was deleted, restored or deleted for good.
import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import { Data, ERROR_RESPONSES, extensionOperation, List, PageQuery } from '../../platform/http/schemas.ts'
import { FileParams, serializeFile, serializeTrashedFile } from './files.schemas.ts'

const READ = requireScopes(['files:read'])
const WRITE = requireScopes(['files:write'])
const tags = ['trash']

const IdOnly = Data(Type.Object({ id: Type.String() }, { additionalProperties: false }))

export const trashRoutes: Routes = async (app, { services, urls }) => {
  const { trash } = services
  app.get(
    '/trash',
    {
      schema: {
        tags,
        operationId: 'listTrash',
        summary: 'List the trash',
        ...extensionOperation(
          'The account’s deleted files that can still be restored, the most recently deleted first: each as it was, with `deletedAt` and `purgeAt` (when it goes for good). Empty when the server keeps no trash (`TRASH_RETENTION_DAYS=0`).',
        ),
        security: READ,
        querystring: Type.Object(PageQuery(25), { additionalProperties: false }),
        response: { 200: List(Type.Ref('TrashedFile')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { cursor, limit = 25 } = request.query
      const page = await trash.list(accountOf(request), { cursor, limit })
      return {
        data: page.items.map((file) => serializeTrashedFile(file, urls)),
        pagination: { nextCursor: page.nextCursor },
      }
    },
  )

  app.post(
    '/trash/:fileId/restore',
    {
      schema: {
        tags,
        operationId: 'restoreFile',
        summary: 'Restore a file from the trash',
        ...extensionOperation(
          'Puts the file back into its folder (into the root when that folder was deleted meanwhile), with its share link as it was: the same public URL, counts and settings. A file the trash does not hold is a 404.',
        ),
        security: WRITE,
        params: FileParams,
        response: { 200: Data(Type.Ref('File')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeFile(await trash.restore(accountOf(request), request.params.fileId), urls),
    }),
  )

  app.delete(
    '/trash/:fileId',
    {
      schema: {
        tags,
        operationId: 'deleteFromTrash',
        summary: 'Delete a file in the trash for good',
        ...extensionOperation(
          'Deletes the file for good, with its share link, bytes and previews; what its link counted stays in the account’s analytics. A file the trash does not hold is a 404.',
        ),
        security: WRITE,
        params: FileParams,
        response: { 200: IdOnly, ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: await trash.deleteForever(accountOf(request), request.params.fileId, request.log),
    }),
  )

  app.delete(
    '/trash',
    {
      schema: {
        tags,
        operationId: 'emptyTrash',
        summary: 'Empty the trash',
        ...extensionOperation(
          'Deletes every file in the account’s trash for good; `deletedCount` says how many.',
        ),
        security: WRITE,
        response: {
          200: Data(
            Type.Object({ deletedCount: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
          ),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => ({
      data: { deletedCount: await trash.empty(accountOf(request), request.log) },
    }),
  )
}
