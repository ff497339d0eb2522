// Errors of the blob endpoint, in the shape the @vercel/blob client reads: `{ error: { code, message } }`.
// The client ignores the HTTP status and retries (for up to half an hour) on any code it does not know, so
// every refusal uses one of the codes it maps to a typed error and gives up on (docs/blob-protocol.md §7).

export type BlobErrorCode =
  | 'forbidden'
  | 'bad_request'
  | 'not_found'
  | 'file_too_large'
  | 'content_type_not_allowed'
  | 'client_token_expired'
  | 'client_token_pathname_mismatch'
  | 'internal_server_error'
  | 'service_unavailable'

const STATUS: Record<BlobErrorCode, number> = {
  forbidden: 403,
  bad_request: 400,
  not_found: 404,
  file_too_large: 413,
  content_type_not_allowed: 400,
  client_token_expired: 403,
  client_token_pathname_mismatch: 400,
  // The two codes the client retries (BlobUnknownError, BlobServiceNotAvailable): for faults of this server,
  // and for a dependency that is down (the database, the object store), both of which may pass.
  internal_server_error: 500,
  service_unavailable: 503,
}

export class BlobApiError extends Error {
  readonly code: BlobErrorCode

  constructor(code: BlobErrorCode, message: string) {
    super(message)
    this.name = 'BlobApiError'
    this.code = code
  }

  get status(): number {
    return STATUS[this.code]
  }
}

export const tooLarge = (max: number) =>
  new BlobApiError('file_too_large', `the file length cannot be greater than ${max} bytes`)

export const notAccepting = () =>
  new BlobApiError(
    'bad_request',
    'This upload no longer accepts data: it was completed, failed or expired. Prepare a new upload.',
  )
