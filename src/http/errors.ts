// One place that turns every failure into the spec's envelope. Client errors say what to fix; faults are
// logged with their cause and answered with a generic 500 that reveals nothing.
import type { FastifyError, FastifyInstance } from 'fastify'
import { AppError, ERROR_CODES, type ErrorCode } from '../errors.ts'
import { describeValidationError } from './validation.ts'

export function errorBody(code: ErrorCode, message: string, hint?: string) {
  return { error: { code, message, hint: hint ?? ERROR_CODES[code].hint } }
}

// Fastify's own client errors, by their code, mapped onto the catalogue.
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (error instanceof AppError) {
      return reply.status(error.status).send(errorBody(error.code, error.message, error.hint))
    }
    if (error.validation) {
      const first = error.validation[0]
      const message = first
        ? describeValidationError(first as never, error.validationContext)
        : 'The request is invalid.'
      return reply.status(400).send(errorBody('invalid_request', message))
    }
    const mapped = error.code ? FASTIFY_CODES[error.code] : undefined
    if (mapped) {
      const message =
        mapped === 'invalid_request' && error.code?.includes('JSON')
          ? 'The request body is not valid JSON.'
          : error.message
      return reply.status(ERROR_CODES[mapped].status).send(errorBody(mapped, message))
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.status(error.statusCode).send(errorBody('invalid_request', error.message))
    }
    request.log.error({ err: error }, 'request failed')
    return reply.status(500).send(errorBody('internal_error', 'An unexpected error occurred.'))
  })

  app.setNotFoundHandler((request, reply) => {
    reply
      .status(404)
      .send(
        errorBody(
          'not_found',
          `No route matches ${request.method} ${request.url.split('?')[0]}.`,
          'See the API reference at /docs for the available operations.',
        ),
      )
  })
}
