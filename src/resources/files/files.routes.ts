import { Type } from 'typebox'
import type { RouteApp, RouteDeps, Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import { Data, ERROR_RESPONSES, extensionOperation, List } from '../../platform/http/schemas.ts'
import { DOWNLOAD_SAFETY_HEADERS, INLINE_SAFE_TYPES, sendFileContent } from './download.ts'
import {
  DeleteFilesBody,
  DownloadQuery,
  FileParams,
  ListFilesQuery,
  serializeFile,
  UpdateFileBody,
} from './files.schemas.ts'

const READ = requireScopes(['files:read'])
const WRITE = requireScopes(['files:write'])
const tags = ['files']

const Binary = (description: string) => ({
  description,
  content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
})

const DOWNLOAD_DESCRIPTION = `Streams the file's bytes. HEAD answers with the same headers and no body.

Response headers:
- \`Content-Type\`: with \`disposition=attachment\` (the default), the type stored with the file; with
  \`inline\`, the stored type only for types safe to render (${[...INLINE_SAFE_TYPES].join(', ')}), otherwise
  \`application/octet-stream\`. A malformed stored type is always sent as \`application/octet-stream\`.
- \`Content-Disposition\`: \`attachment\` or \`inline\`, with \`filename="…"\` (the name in printable ASCII, other
  characters replaced by \`_\`) and \`filename*=UTF-8''…\` (RFC 8187, the exact name).
- \`Content-Length\`, \`Accept-Ranges: bytes\`, \`Last-Modified\` (the upload time: a file's bytes never change)
  and a strong \`ETag\` (the SHA-256 of the bytes when known).
- \`X-Content-Type-Options: nosniff\`, \`Content-Security-Policy: ${DOWNLOAD_SAFETY_HEADERS['content-security-policy']}\`
  and \`Cache-Control: ${DOWNLOAD_SAFETY_HEADERS['cache-control']}\` on every download response.

Conditional and partial requests: \`If-None-Match\` (or, without it, \`If-Modified-Since\`) answers 304 when the
copy is current. A single \`Range: bytes=first-last\`, \`bytes=first-\` or \`bytes=-suffix\` answers 206 with
\`Content-Range\`; several ranges, or a malformed \`Range\`, get the whole file (200). A range starting past the end
is a 416 \`range_not_satisfiable\` with \`Content-Range: bytes */size\`. \`If-Range\` (entity tag or date) must match
exactly for the range to apply, otherwise the whole file is sent. A file whose bytes are missing from storage is
a 404.`

export const filesRoutes: Routes = async (app, deps) => {
  for (const routes of [fileListRoutes, oneFileRoutes, fileContentRoutes]) await routes(app, deps)
}

/** The account's files: the list and search, several deleted at once. */
async function fileListRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { files } = services
  app.get(
    '/files',
    {
      schema: {
        tags,
        operationId: 'listFiles',
        summary: 'List and search files',
        description:
          'The account’s files, newest first (or in the order `sort` asks). `query` matches a substring of the name, ignoring case as ' +
          'Unicode folds it (`É` finds `é`, `STRASSE` finds `Straße`) but not accents (`e` does not find ' +
          '`é`); `query`, `folderId` and pagination combine. A page holds fewer than `limit` files only when ' +
          'it is the last: then `pagination.nextCursor` is null.',
        security: READ,
        querystring: ListFilesQuery,
        response: { 200: List(Type.Ref('File')), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { query, folderId, cursor, sort, limit = 50 } = request.query
      const page = await files.list(accountOf(request), { query, folderId, cursor, order: sort, limit })
      return {
        data: page.items.map((file) => serializeFile(file, urls)),
        pagination: { nextCursor: page.nextCursor },
      }
    },
  )

  app.delete(
    '/files',
    {
      schema: {
        tags,
        operationId: 'deleteFiles',
        summary: 'Delete several files',
        description:
          'Deletes the listed files of the account, as `DELETE /files/{fileId}` does each. Ids that are ' +
          'absent, in the trash already or another account’s are skipped; `deletedIds` lists only the files ' +
          'deleted.',
        security: WRITE,
        body: DeleteFilesBody,
        response: {
          200: Data(Type.Object({ deletedIds: Type.Array(Type.String()) }, { additionalProperties: false })),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => ({
      data: {
        deletedIds: await files.deleteMany(accountOf(request), request.body.fileIds, request.log),
      },
    }),
  )
}

/** One file: read, renamed or moved, deleted. */
async function oneFileRoutes(app: RouteApp, { services, urls }: RouteDeps): Promise<void> {
  const { files } = services
  app.get(
    '/files/:fileId',
    {
      schema: {
        tags,
        operationId: 'getFile',
        summary: 'Get a file',
        description:
          'Each server process keeps the files in use in memory, and learns of every change to them: one ' +
          'made through the same process shows on the next request; with several processes behind a load ' +
          'balancer, one made through another process shows within moments (normally under a millisecond).',
        security: READ,
        params: FileParams,
        response: { 200: Data(Type.Ref('File')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeFile(await files.get(accountOf(request), request.params.fileId), urls),
    }),
  )

  app.patch(
    '/files/:fileId',
    {
      schema: {
        tags,
        operationId: 'updateFile',
        summary: 'Rename or move a file',
        description:
          'Sets `name`, `folderId` or both. `folderId: null` moves the file to root; a folder that is absent ' +
          'or another account’s is a 404. The folders’ file counts change with the move.',
        security: WRITE,
        params: FileParams,
        body: UpdateFileBody,
        response: { 200: Data(Type.Ref('File')), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({
      data: serializeFile(await files.update(accountOf(request), request.params.fileId, request.body), urls),
    }),
  )

  app.delete(
    '/files/:fileId',
    {
      schema: {
        tags,
        operationId: 'deleteFile',
        summary: 'Delete a file',
        description:
          'The file is gone from every endpoint of the API, and its share link’s page answers 404. Coffer keeps ' +
          'it in the account’s trash for `TRASH_RETENTION_DAYS` (30 by default), where `GET /trash` lists it and ' +
          '`POST /trash/{fileId}/restore` brings it back with its link; then it goes for good, with its link, ' +
          'bytes and previews. With `TRASH_RETENTION_DAYS=0` the delete is final at once.',
        security: WRITE,
        params: FileParams,
        response: {
          200: Data(Type.Object({ id: Type.String() }, { additionalProperties: false })),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => ({
      data: await files.delete(accountOf(request), request.params.fileId, request.log),
    }),
  )
}

/** A file's bytes and its preview. */
async function fileContentRoutes(app: RouteApp, { services }: RouteDeps): Promise<void> {
  const { files } = services
  // HEAD comes first, so that Fastify keeps it rather than adding one of its own for the GET, and is shown in
  // the OpenAPI document, where @fastify/swagger gives it the GET's operationId with a `-head` suffix.
  const downloads = [
    ['HEAD', 'Check a download (headers only)'],
    ['GET', 'Download a file'],
  ] as const
  for (const [method, summary] of downloads) {
    app.route({
      method,
      url: '/files/:fileId/download',
      config: { swagger: { exposeHeadRoute: true } },
      schema: {
        tags,
        operationId: 'downloadFile',
        summary,
        description: DOWNLOAD_DESCRIPTION,
        security: READ,
        params: FileParams,
        querystring: DownloadQuery,
        response: {
          200: Binary('The whole file.'),
          206: Binary('The requested byte range, described by `Content-Range`.'),
          304: { type: 'null', description: 'Not modified: the copy named by If-None-Match is current.' },
          416: Type.Ref('Error'),
          ...ERROR_RESPONSES,
        },
      },
      handler: async (request, reply) => {
        const content = await files.content(accountOf(request), request.params.fileId, request.log)
        return sendFileContent(request, reply, content, request.query.disposition ?? 'attachment')
      },
    })
  }

  app.get(
    '/files/:fileId/preview',
    {
      schema: {
        tags,
        operationId: 'getFilePreview',
        summary: "A file's image preview",
        ...extensionOperation(`The WebP preview that processing made of an image file (at most 512 px on its longer
side), served as downloads are (validators, ranges, the same safety headers), inline. A file without a preview, such
as one that is not an image, is a 404; so is a file that does not exist or belongs to another account. The File's
\`previewUrl\` points here.`),
        security: READ,
        params: FileParams,
        response: {
          200: {
            description: 'The preview.',
            content: { 'image/webp': { schema: { type: 'string', format: 'binary' } } },
          },
          206: Binary('The requested byte range, described by `Content-Range`.'),
          304: { type: 'null', description: 'Not modified: the copy named by If-None-Match is current.' },
          416: Type.Ref('Error'),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request, reply) => {
      const content = await files.previewContent(accountOf(request), request.params.fileId, request.log)
      return sendFileContent(request, reply, content, 'inline')
    },
  )
}
