// One place that turns every failure into the error envelope `{ error: { code, message, hint } }`. Client
// errors say what to fix; faults are logged with their cause and answered with a generic 500 that reveals
// nothing.
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, ERROR_CODES, type ErrorCode, RetryLater } from '../errors.ts'
import { unavailableDependency } from '../unavailable-dependencies.ts'
import { bodyFieldOf, describeValidationError } from './validation.ts'

export function errorBody(code: ErrorCode, message: string, hint?: string, field?: string) {
  const error = { code, message, hint: hint ?? ERROR_CODES[code].hint }
  return { error: field === undefined ? error : { ...error, field } }
}

/** A byte count as its largest whole binary unit: 1048576 → "1 MiB". */
function sizeOf(bytes: number): string {
  if (bytes % 1_048_576 === 0) return `${bytes / 1_048_576} MiB`
  return bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`
}

/** Fastify's own client errors, by their code, as the catalogue's code and a message that says what to fix. */
function fastifyClientError(error: FastifyError, request: FastifyRequest): [ErrorCode, string] | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return ['invalid_request', 'The request body is empty; send a JSON object.']
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return ['invalid_request', 'The request body is not valid JSON.']
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ['invalid_request', 'The request body does not have the length its Content-Length header gives.']
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return [
        'payload_too_large',
        `The request body is larger than ${sizeOf(request.routeOptions.bodyLimit)}.`,
      ]
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return ['unsupported_media_type', 'The request body must be application/json.']
    // A page's form (or the app's script) sent no CSRF token, or one of another session, or an older one.
    case 'FST_CSRF_MISSING_SECRET':
    case 'FST_CSRF_INVALID_TOKEN':
      return ['form_expired', 'The form’s security token is missing or out of date.']
    default:
      return undefined
  }
}

/** The longest path parameter the router passes on; anything near it is refused by the routes' bounds. */
export const MAX_PARAM_LENGTH = 1000

/**
 * Fastify's `frameworkErrors`: a URL the router refuses before any route or hook runs, answered in the
 * envelope like every other failure. The path is not echoed: it may be long, and it is the client's own.
 */
export function frameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `A path parameter is longer than ${MAX_PARAM_LENGTH} characters.`
      : error.code === 'FST_ERR_BAD_URL'
        ? 'The URL path has a percent-encoded sequence that is not UTF-8 text.'
        : 'The URL could not be routed.'
  void reply.status(400).send(errorBody('invalid_request', message))
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser could not read (bad framing, a control
 * character in a header, headers over 16 KiB) or did not receive in time. There is no request to reply to,
 * so the envelope is written to the socket, which is then closed.
 */
export function clientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const [code, message]: [ErrorCode, string] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['headers_too_large', 'The request headers are larger than 16 KiB.']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request_timeout', 'The request was not received in full in time.']
        : ['invalid_request', 'The request is not valid HTTP/1.1.']
  const { status } = ERROR_CODES[code]
  const body = JSON.stringify(errorBody(code, message))
  if (socket.writable) {
    // An answer to HEAD has the headers of the answer to GET and never a body, which a client would read as
    // the start of its next response.
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n` +
        (isHead(error as { rawPacket?: unknown }, socket) ? '' : body),
    )
  }
  socket.destroy()
}

/**
 * Whether the request Node could not read was a HEAD: its first bytes say so when the parser kept them, and the
 * request the parser had begun does when its headers were read (a timeout of its body).
 */
function isHead(error: { rawPacket?: unknown }, socket: Duplex): boolean {
  const { rawPacket } = error
  if (Buffer.isBuffer(rawPacket) && rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ') return true
  const parser = (socket as Duplex & { parser?: { incoming?: { method?: string } } }).parser
  return parser?.incoming?.method === 'HEAD'
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A page for people: its failures are answered as HTML error pages, not in the JSON envelope. */
    page?: true
  }
}

/** How failures of pages are answered; the web foundation provides it (web/web.ts). */
export interface ErrorPages {
  /**
   * The error page of `status`; `code`, of the catalogue, where a page says more than its status does, and the
   * failure's own `message` where it says what was wrong with the request (a 400).
   */
  sendError(reply: FastifyReply, status: number, code?: ErrorCode, message?: string): FastifyReply
  /** Whether an unknown path is one a person would have opened: it then gets a 404 page. */
  isPagePath(path: string): boolean
}

/** How long a client is asked to wait before retrying a request refused because a dependency is down. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5

/** Whether the client asked for HTML: a browser navigating, not an API client. */
function acceptsHtml(request: FastifyRequest): boolean {
  return /\btext\/html\b/.test(request.headers.accept ?? '')
}

export function registerErrorHandling(app: FastifyInstance, pages?: ErrorPages): void {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    const [status, body, retryAfter] = errorResponse(error, request)
    if (retryAfter !== undefined) reply.header('retry-after', retryAfter)
    if (pages && request.routeOptions.config?.page) {
      // A 400 of a page is about what was sent (a form's bytes, a parameter), which its message names.
      return pages.sendError(reply, status, body.error.code, status === 400 ? body.error.message : undefined)
    }
    return reply.status(status).send(body)
  })

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    if (pages?.isPagePath(path) && acceptsHtml(request)) return pages.sendError(reply, 404)
    return reply
      .status(404)
      .send(
        errorBody(
          'not_found',
          `No route matches ${request.method} ${path}.`,
          'See the API reference at /docs for the available operations.',
        ),
      )
  })
}

/**
 * The status and envelope of a failure, and the seconds of its Retry-After when the client should come back;
 * a fault is logged here, with its cause.
 */
function errorResponse(
  error: FastifyError | AppError,
  request: FastifyRequest,
): [number, ReturnType<typeof errorBody>, number?] {
  if (error instanceof AppError) {
    const body = errorBody(error.code, error.message, error.hint, error.field)
    return [error.status, body, error instanceof RetryLater ? error.retryAfterSeconds : undefined]
  }
  if (error.validation) {
    const first = error.validation[0]
    if (!first) return [400, errorBody('invalid_request', 'The request is invalid.')]
    const message = describeValidationError(first as never, error.validationContext)
    const field = error.validationContext === 'body' ? bodyFieldOf(first as never) : undefined
    return [400, errorBody('invalid_request', message, undefined, field)]
  }
  const refusal = fastifyClientError(error, request)
  if (refusal) {
    const [code, message] = refusal
    return [ERROR_CODES[code].status, errorBody(code, message)]
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return [error.statusCode, errorBody('invalid_request', error.message)]
  }
  const down = unavailableDependency(error)
  if (down) {
    // Expected while a dependency is down, and said once per request: no stack, which says nothing new.
    request.log.warn({ error: (error as Error).message }, `request refused: ${down} is unavailable`)
    const message = `The request could not be served: ${down} is unavailable right now.`
    return [503, errorBody('unavailable', message), OUTAGE_RETRY_AFTER_SECONDS]
  }
  request.log.error({ err: error }, 'request failed')
  return [500, errorBody('internal_error', 'An unexpected error occurred.')]
}
