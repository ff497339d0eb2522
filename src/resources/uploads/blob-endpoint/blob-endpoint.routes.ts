// The Vercel-Blob-compatible endpoint, mounted at BLOB_API_PATH (public-urls.ts; what clients set as
// VERCEL_BLOB_API_URL): `PUT /?pathname=` for a single upload and `POST /mpu?pathname=` for the multipart
// actions. Bodies are raw bytes streamed from the socket: no parser or body limit of the API applies here; the
// client token's declared size is the limit. Every failure is `{ error: { code, message } }` (see errors.ts).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { RouteDeps } from '../../../module.ts'
import { OUTAGE_RETRY_AFTER_SECONDS } from '../../../platform/http/errors.ts'
import { unavailableDependency } from '../../../platform/unavailable-dependencies.ts'
import type { BlobRequest } from './blob-endpoint.service.ts'
import { BlobApiError } from './errors.ts'
import { bodyOf, drainRefusedBody } from './request-bodies.ts'

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

/**
 * `carriesBlob`: the body is blob bytes (a PUT or a part), whose announced length counts against the limit. The
 * query names the blob (`pathname`) and nothing else: a parameter this endpoint does not know is refused rather
 * than ignored, so that what a client meant by it (`addRandomSuffix`, `allowOverwrite` of other blob APIs) is
 * never silently not done.
 */
function blobRequest(request: FastifyRequest, carriesBlob: boolean): BlobRequest {
  const query = new URLSearchParams(request.url.split('?')[1] ?? '')
  const unknown = [...query.keys()].find((name) => name !== 'pathname')
  if (unknown !== undefined) {
    throw new BlobApiError(
      'bad_request',
      `The query parameter "${unknown.slice(0, 100)}" is not one this endpoint takes: give "pathname" alone.`,
    )
  }
  return {
    authorization: header(request, 'authorization'),
    pathnames: query.getAll('pathname'),
    access: header(request, 'x-vercel-blob-access'),
    contentType: header(request, 'x-content-type'),
    length: carriesBlob ? lengthOf(request) : undefined,
  }
}

async function sendError(request: FastifyRequest, reply: FastifyReply, error: BlobApiError) {
  // A body too large to read to its end still arriving: close the connection after answering.
  if (!(await drainRefusedBody(request.raw))) reply.header('connection', 'close')
  return reply.status(error.status).send({ error: { code: error.code, message: error.message } })
}

export async function blobEndpointRoutes(app: FastifyInstance, { services }: RouteDeps): Promise<void> {
  const { blobEndpoint } = services

  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) => done(null))

  app.setErrorHandler(async (error: FastifyError | BlobApiError, request, reply) => {
    if (error instanceof BlobApiError) return sendError(request, reply, error)
    if (request.raw.readableAborted || request.raw.socket?.destroyed) {
      // The client went away mid-transfer; there is nobody to answer.
      return reply.status(400).send({ error: { code: 'bad_request', message: 'The request was aborted.' } })
    }
    const down = unavailableDependency(error)
    if (down) {
      request.log.warn({ error: error.message }, `blob request refused: ${down} is unavailable`)
      reply.header('retry-after', OUTAGE_RETRY_AFTER_SECONDS)
      return sendError(
        request,
        reply,
        new BlobApiError('service_unavailable', `The blob could not be stored now: ${down} is unavailable.`),
      )
    }
    request.log.error({ err: error }, 'blob request failed')
    return sendError(
      request,
      reply,
      new BlobApiError('internal_server_error', 'The blob could not be stored because of a server fault.'),
    )
  })
  app.setNotFoundHandler(async (request, reply) =>
    sendError(
      request,
      reply,
      new BlobApiError('not_found', `This blob API has no ${request.method} ${request.url.split('?')[0]}.`),
    ),
  )

  app.put('/', { schema: { hide: true }, config: { rateLimit: false } }, async (request) => {
    const ticket = await blobEndpoint.authorize(blobRequest(request, true))
    return blobEndpoint.put(ticket, bodyOf(request.raw), lengthOf(request))
  })

  app.post('/mpu', { schema: { hide: true }, config: { rateLimit: false } }, async (request) => {
    const action = header(request, 'x-mpu-action')
    const blob = blobRequest(request, action === 'upload')
    const ticket = await blobEndpoint.authorize(
      blob,
      action === 'complete' ? header(request, 'x-mpu-upload-id') : undefined,
    )
    const part = {
      uploadId: header(request, 'x-mpu-upload-id'),
      key: header(request, 'x-mpu-key'),
      partNumber: header(request, 'x-mpu-part-number'),
      length: blob.length,
    }
    switch (action) {
      case 'create':
        return blobEndpoint.createMultipart(ticket)
      case 'upload':
        return blobEndpoint.uploadPart(ticket, part, bodyOf(request.raw))
      case 'complete':
        return blobEndpoint.completeMultipart(ticket, part, bodyOf(request.raw))
      default:
        throw new BlobApiError('bad_request', '"x-mpu-action" must be create, upload or complete.')
    }
  })
}
