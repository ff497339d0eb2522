// The Vercel-Blob-compatible endpoint, mounted at BLOB_API_PATH (public-urls.ts; what clients set as
// VERCEL_BLOB_API_URL): `PUT /?pathname=` for a single upload and `POST /mpu?pathname=` for the multipart
// actions. Bodies are raw bytes streamed from the socket: no parser or body limit of the API applies here; the
// client token's declared size is the limit. Every failure is `{ error: { code, message } }` (see errors.ts).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { RouteDeps } from '../routes.ts'
import type { BlobRequest, Body, CallbackSender } from './blob-api.service.ts'
import { BlobApiError } from './errors.ts'

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

function lengthOf(request: FastifyRequest): number | undefined {
  // x-content-length is 0 when the client streams a body of unknown length: then only counting tells.
  for (const name of ['content-length', 'x-content-length']) {
    const value = Number(header(request, name))
    if (Number.isSafeInteger(value) && value > 0) return value
  }
  return undefined
}

/** `carriesBlob`: the body is blob bytes (a PUT or a part), whose announced length counts against the limit. */
function blobRequest(request: FastifyRequest, carriesBlob: boolean): BlobRequest {
  const query = new URLSearchParams(request.url.split('?')[1] ?? '')
  return {
    authorization: header(request, 'authorization'),
    pathnames: query.getAll('pathname'),
    access: header(request, 'x-vercel-blob-access'),
    contentType: header(request, 'x-content-type'),
    length: carriesBlob ? lengthOf(request) : undefined,
  }
}

/**
 * The request body as a stream of chunks. Leaving the iteration early (a refusal mid-body) must not destroy
 * the request, or the socket would die before the error response could tell the client why.
 */
const bodyOf = (request: FastifyRequest): Body => request.raw.iterator({ destroyOnReturn: false })

function sendError(request: FastifyRequest, reply: FastifyReply, error: BlobApiError) {
  // A refused body may still be arriving: close the connection after answering rather than read it all.
  if (!request.raw.readableEnded) reply.header('connection', 'close')
  return reply.status(error.status).send({ error: { code: error.code, message: error.message } })
}

export async function blobApiRoutes(app: FastifyInstance, { services }: RouteDeps): Promise<void> {
  const { blobApi } = services

  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) => done(null))

  app.setErrorHandler((error: FastifyError | BlobApiError, request, reply) => {
    if (error instanceof BlobApiError) return sendError(request, reply, error)
    if (request.raw.readableAborted || request.raw.socket?.destroyed) {
      // The client went away mid-transfer; there is nobody to answer.
      return reply.status(400).send({ error: { code: 'bad_request', message: 'The request was aborted.' } })
    }
    request.log.error({ err: error }, 'blob request failed')
    return sendError(
      request,
      reply,
      new BlobApiError('internal_server_error', 'The blob could not be stored because of a server fault.'),
    )
  })
  app.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      new BlobApiError('not_found', `This blob API has no ${request.method} ${request.url.split('?')[0]}.`),
    ),
  )

  // The callback goes to this same application in-process: the API behind it may be unreachable from here at
  // its public address (behind a proxy), and the route verifies the signature exactly as for a network call.
  const deliver: CallbackSender = async (url, body, signature) => {
    const { pathname, search } = new URL(url)
    const response = await app.inject({
      method: 'POST',
      url: `${pathname}${search}`,
      headers: { 'content-type': 'application/json', 'x-vercel-signature': signature },
      payload: body,
    })
    return response.statusCode
  }

  app.put('/', { schema: { hide: true }, config: { rateLimit: false } }, async (request) => {
    const ticket = await blobApi.authorize(blobRequest(request, true))
    return blobApi.put(ticket, bodyOf(request), deliver, lengthOf(request))
  })

  app.post('/mpu', { schema: { hide: true }, config: { rateLimit: false } }, async (request) => {
    const action = header(request, 'x-mpu-action')
    const blob = blobRequest(request, action === 'upload')
    const ticket = await blobApi.authorize(blob)
    const part = {
      uploadId: header(request, 'x-mpu-upload-id'),
      key: header(request, 'x-mpu-key'),
      partNumber: header(request, 'x-mpu-part-number'),
      length: blob.length,
    }
    switch (action) {
      case 'create':
        return blobApi.createMultipart(ticket)
      case 'upload':
        return blobApi.uploadPart(ticket, part, bodyOf(request))
      case 'complete':
        return blobApi.completeMultipart(ticket, part, bodyOf(request), deliver)
      default:
        throw new BlobApiError('bad_request', '"x-mpu-action" must be create, upload or complete.')
    }
  })
}
