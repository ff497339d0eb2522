// The one error the SDK throws: what the API's envelope said ({ error: { code, message, hint } }), or, for a
// failure that never reached the API (the network, a proxy's own page), a code of the SDK's own.

/** Codes of failures the SDK itself reports; the API's own codes are in its OpenAPI document. */
export type ClientErrorCode =
  /** The server could not be reached, or answered with something other than the API's JSON. */
  | 'network_error'
  /** The OAuth refresh token was refused: spent (replayed), revoked, or expired. Sign in again. */
  | 'refresh_failed'
  /** The upload reached the server but could not become a file. */
  | 'upload_failed'
  /** The operation was cancelled by its AbortSignal. */
  | 'aborted'
  /** A download's bytes could not be written to its file (no such directory, no room left). */
  | 'write_failed'
  /** The SDK was called with something it cannot use. */
  | 'invalid_argument'

export class CofferError extends Error {
  override readonly name = 'CofferError'
  /** The HTTP status, or 0 when no response came. */
  readonly status: number
  /** The API's error code (`not_found`, `insufficient_scope`, …) or one of ClientErrorCode. */
  readonly code: string
  /** What to do about it, as the API says. */
  readonly hint: string
  /** The request body's field the API refused (`files[2].size`), when it named one. */
  readonly field: string | undefined

  constructor(
    status: number,
    code: string,
    message: string,
    hint: string,
    options?: { cause?: unknown; field?: string },
  ) {
    super(message, options)
    this.status = status
    this.code = code
    this.hint = hint
    this.field = options?.field
  }

  /** The error of a response that is not a success, from its envelope when it has one. */
  static async fromResponse(response: Response, body?: unknown): Promise<CofferError> {
    const parsed = body === undefined ? await response.json().catch(() => undefined) : body
    const envelope = (
      parsed as { error?: { code?: unknown; message?: unknown; hint?: unknown; field?: unknown } }
    )?.error
    if (typeof envelope?.code === 'string' && typeof envelope.message === 'string') {
      const hint = typeof envelope.hint === 'string' ? envelope.hint : ''
      const field = typeof envelope.field === 'string' ? { field: envelope.field } : {}
      return new CofferError(response.status, envelope.code, envelope.message, hint, field)
    }
    return new CofferError(
      response.status,
      'network_error',
      `The server answered ${response.status} ${response.statusText} without the API's error envelope.`,
      'Check the server address: it may point at something other than Coffer, or a proxy in front of it failed.',
    )
  }
}
