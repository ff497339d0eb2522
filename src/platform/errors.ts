// The error catalogue. Services throw these; the HTTP layer (http/errors.ts) turns them into the envelope
// `{ error: { code, message, hint } }` with the matching status. Keep the catalogue in step with the
// README and the OpenAPI descriptions.

export const ERROR_CODES = {
  invalid_request: { status: 400, hint: 'Fix the request as the message says and send it again.' },
  unauthorized: {
    status: 401,
    hint: 'Send a valid API key or OAuth access token as "Authorization: Bearer <credential>".',
  },
  insufficient_scope: { status: 403, hint: 'Use a credential that carries the scope named in the message.' },
  form_expired: {
    status: 403,
    hint: 'Reload the page, which gives the form a new token, then send it again.',
  },
  cross_site_request: {
    status: 403,
    hint: 'Send it from a page of this server, not from a page of another site.',
  },
  not_found: { status: 404, hint: 'Check the ID or path; resources of other accounts are never visible.' },
  conflict: { status: 409, hint: 'Reload the resource and retry with a change that fits its current state.' },
  request_timeout: { status: 408, hint: 'Send the whole request promptly, then retry.' },
  gone: {
    status: 410,
    hint: 'The link no longer accepts this; ask the person who sent it for a new one.',
  },
  payload_too_large: { status: 413, hint: 'Send a smaller request body.' },
  quota_exceeded: {
    status: 413,
    hint: 'Delete files and empty the trash, or ask an admin for a larger quota.',
  },
  range_not_satisfiable: {
    status: 416,
    hint: 'Ask for a range that starts inside the file; Content-Range gives its size as "bytes */<size>".',
  },
  unsupported_media_type: { status: 415, hint: 'Send the body as application/json, uncompressed.' },
  headers_too_large: { status: 431, hint: 'Send fewer or shorter headers.' },
  rate_limited: {
    status: 429,
    hint: 'Wait for the number of seconds in the Retry-After header, then retry.',
  },
  internal_error: {
    status: 500,
    hint: 'Retry later; if it persists, report it with the time of the request.',
  },
  unavailable: { status: 503, hint: 'The service is starting or a dependency is down; retry shortly.' },
} as const

export type ErrorCode = keyof typeof ERROR_CODES

export class AppError extends Error {
  readonly code: ErrorCode
  readonly hint: string
  /** The request field the error is about (`submitterEmail`, `files[2].size`), where there is one. */
  readonly field: string | undefined

  constructor(code: ErrorCode, message: string, hint?: string, field?: string) {
    super(message)
    this.name = 'AppError'
    this.code = code
    this.hint = hint ?? ERROR_CODES[code].hint
    this.field = field
  }

  get status(): number {
    return ERROR_CODES[this.code].status
  }
}

export const invalid = (message: string, hint?: string, field?: string) =>
  new AppError('invalid_request', message, hint, field)
export const notFound = (what: string) => new AppError('not_found', `${what} not found.`)
export const conflict = (message: string, hint?: string, field?: string) =>
  new AppError('conflict', message, hint, field)

/** A refusal for now (429): the HTTP layer sends `retryAfterSeconds` as the Retry-After header. */
export class RetryLater extends AppError {
  readonly retryAfterSeconds: number

  constructor(message: string, retryAfterSeconds: number, hint?: string) {
    super('rate_limited', message, hint)
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds))
  }
}
