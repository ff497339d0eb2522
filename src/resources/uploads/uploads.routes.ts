import { Type } from 'typebox'
import type { Routes } from '../../module.ts'
import { accountOf, requireScopes } from '../../platform/http/auth.ts'
import { Data, ERROR_RESPONSES, IdParam } from '../../platform/http/schemas.ts'
import { API_BASE_PATH, UPLOAD_HANDSHAKE_PATH } from '../../platform/public-urls.ts'
import {
  HandshakeBody,
  PrepareUploadBody,
  serializeGrant,
  UploadGrantSchema,
  UploadStatusSchema,
} from './uploads.schemas.ts'

const WRITE = requireScopes(['files:write'])
const tags = ['files']

const PREPARE_DESCRIPTION = `Prepares one upload per file and returns a grant for each. The bytes do not pass through this API:
for each grant, call \`upload(pathname, body, { access: 'private', contentType, handleUploadUrl, clientPayload:
JSON.stringify(clientPayload), multipart: size > 5 MiB })\` of \`@vercel/blob/client\`, with the environment variable
\`VERCEL_BLOB_API_URL\` set to this server's blob API address (\`blobApiUrl\` in the capability index), then poll
\`statusUrl\` with the same credential until \`status\` is \`complete\` (its \`result.id\` is the new file) or \`error\`.

The grant in \`clientPayload\` authorises that one upload until \`expiresAt\`, like a presigned URL; the API
credential never goes to the blob endpoint. The upload is bound to the declared size (more bytes are refused, fewer
end in \`error\`), to the declared type and to the pathname. A \`size\` above the server maximum is a 400. Files
that would pass the account's storage quota (\`GET /usage\`: its files, the trash included, and the sizes its
uploads under way declared) are a 413 \`quota_exceeded\`, as is a file larger than the account's largest file;
nothing is prepared then. After the
transfer the server checks the size, computes a SHA-256, detects the type from the bytes (a detected type that
contradicts the declared one is stored instead) and renders previews of images. The handshake address
(\`handleUploadUrl\`) is part of the upload protocol, not an operation to call directly.`

export const uploadsRoutes: Routes = async (app, { services }) => {
  const { uploads } = services

  app.post(
    '/files',
    {
      schema: {
        tags,
        operationId: 'prepareUploads',
        summary: 'Prepare uploads',
        description: PREPARE_DESCRIPTION,
        security: WRITE,
        body: PrepareUploadBody,
        response: {
          201: Data(Type.Object({ uploads: Type.Array(UploadGrantSchema) }, { additionalProperties: false })),
          413: Type.Ref('Error', {
            description:
              "`quota_exceeded`: the files would pass the account's storage quota (counting its files, the trash and its uploads under way), or one is larger than the largest file the account may upload (`error.field` names it). The message gives the bytes used and the quota; nothing is prepared.",
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request, reply) => {
      const grants = await uploads.prepare(accountOf(request), request.body)
      return reply.status(201).send({ data: { uploads: grants.map(serializeGrant) } })
    },
  )

  app.get(
    '/files/uploads/:intentId',
    {
      schema: {
        tags,
        operationId: 'getUploadStatus',
        summary: 'Get the status of an upload',
        description:
          'pending (phase uploading, then processing), then complete with the new file ID, or error with a message. ' +
          'An upload whose grant expires before its file is stored ends in error. Only the account that prepared ' +
          'the upload sees it; for any other it is a 404.',
        security: WRITE,
        params: IdParam('intentId'),
        response: { 200: Data(UploadStatusSchema), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({ data: await uploads.status(accountOf(request), request.params.intentId) }),
  )

  // The blob client's handshake: authenticated by the grant inside the event, not by an API credential.
  app.post(
    UPLOAD_HANDSHAKE_PATH.slice(API_BASE_PATH.length),
    { schema: { hide: true, body: HandshakeBody } },
    async (request) => ({
      type: 'blob.generate-client-token',
      clientToken: await uploads.handshake(request.body.payload),
    }),
  )
}
