// How the SDK sends a request: with the credential (an API key, or OAuth tokens that refresh themselves),
// again after 429 and 503 as `Retry-After` says, and with a failure to connect reported as a CofferError.
import * as oauth from 'oauth4webapi'
import { CofferError } from './errors.ts'

/** OAuth tokens as the token endpoint hands them out. */
export interface OAuthTokens {
  accessToken: string
  refreshToken?: string
  /** When the access token expires, in epoch milliseconds; unknown when absent. */
  expiresAt?: number
}

export interface OAuthCredentials {
  /** The client the tokens were issued to (dynamic registration, or Coffer's own for `coffer login`). */
  clientId: string
  tokens: OAuthTokens
  /**
   * Called with each new set of tokens, to store them: the refresh token rotates, and the old one, used
   * again, ends the whole grant (a replay).
   */
  onRefresh?: (tokens: OAuthTokens) => void | Promise<void>
  /**
   * For tokens that several processes share (the `coffer` command's saved credentials): each refresh runs
   * holding `lock`, a lock across those processes, and first reads the tokens as saved (`load`). Tokens another
   * process saved since this one read them are taken as they are, rather than spending the same refresh token
   * again, which would end the grant.
   */
  shared?: {
    lock<T>(work: () => Promise<T>): Promise<T>
    load(): Promise<OAuthTokens | undefined>
  }
}

export type Credentials = { apiKey: string } | { oauth: OAuthCredentials }

export interface SendOptions {
  /** The server's address, such as `https://files.example.com`. */
  url: string
  /** None for the operations that need none: the capability index, and the public side of file requests. */
  credentials: Credentials | undefined
  /** Retries of a request answered 429 or 503 (default 3). */
  retries: number
  /** The longest wait before a retry, whatever `Retry-After` asks (default 60 s). */
  maxRetryDelayMs: number
  fetch: typeof fetch
}

/** Refreshes an access token this long before it expires, so that a request under way does not outlive it. */
const REFRESH_EARLY_MS = 30_000

/**
 * A fetch that adds the credential and retries as SendOptions say; `fetchFn` sends one request differently
 * (a download written to a file: save.ts).
 */
export function authorizedFetch(
  options: SendOptions,
): (request: Request, fetchFn?: (request: Request) => Promise<Response>) => Promise<Response> {
  const credential = credentialOf(options)
  return async (request, fetchFn = options.fetch) => {
    let refreshed = false
    for (let attempt = 0; ; attempt++) {
      const token = await credential.token()
      // A request's body can be read once: each attempt sends a copy.
      const sent = request.clone()
      if (token !== undefined) sent.headers.set('authorization', `Bearer ${token}`)
      const response = await send(fetchFn, sent)
      if (response.status === 401 && credential.refresh && token !== undefined && !refreshed) {
        refreshed = true
        await response.body?.cancel()
        await credential.refresh(token)
        continue
      }
      if ((response.status === 429 || response.status === 503) && attempt < options.retries) {
        await response.body?.cancel()
        await delay(retryDelay(response, attempt, options.maxRetryDelayMs), request.signal)
        continue
      }
      return response
    }
  }
}

/** `fetch`, its failures to connect and its cancellations as CofferErrors. */
export async function send(
  fetchFn: (request: Request) => Promise<Response>,
  request: Request,
): Promise<Response> {
  try {
    return await fetchFn(request)
  } catch (error) {
    if (request.signal.aborted) throw aborted(error)
    if (error instanceof CofferError) throw error
    throw new CofferError(
      0,
      'network_error',
      `Could not reach ${new URL(request.url).origin}: ${(error as Error).message}`,
      'Check the server address and your connection.',
      { cause: error },
    )
  }
}

export const aborted = (cause?: unknown) =>
  new CofferError(0, 'aborted', 'The operation was cancelled.', '', { cause })

/** Waits `ms`, or rejects as soon as `signal` aborts. */
export function delay(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted(signal.reason))
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(aborted(signal?.reason))
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** `Retry-After` in seconds or as a date; else 1, 2, 4… seconds. At most `most`. */
function retryDelay(response: Response, attempt: number, most: number): number {
  const header = response.headers.get('retry-after')
  let ms = 1000 * 2 ** attempt
  if (header !== null) {
    const seconds = Number(header)
    ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now()
  }
  return Math.min(Math.max(ms, 0), most)
}

interface Credential {
  /** The bearer credential to send now; undefined for none. */
  token(): Promise<string | undefined>
  /** For OAuth: refreshes the access token unless it is no longer `stale` (another request refreshed it). */
  refresh?(stale: string): Promise<void>
}

function credentialOf(options: SendOptions): Credential {
  const { credentials } = options
  if (credentials === undefined) return { token: async () => undefined }
  if ('apiKey' in credentials) {
    const key = credentials.apiKey
    return { token: async () => key }
  }
  return new OAuthSession(options.url, credentials.oauth, options.fetch)
}

/**
 * OAuth tokens in use by one client: the access token refreshed before it expires, and once when the API
 * refuses it. One refresh at a time, however many requests need it: a refresh token is good for one use, and
 * a second use of it ends the grant.
 */
class OAuthSession implements Credential {
  readonly #url: string
  readonly #credentials: OAuthCredentials
  readonly #fetch: typeof fetch
  #tokens: OAuthTokens
  #refreshing: Promise<void> | undefined

  constructor(url: string, credentials: OAuthCredentials, fetchFn: typeof fetch) {
    this.#url = url
    this.#credentials = credentials
    this.#tokens = credentials.tokens
    this.#fetch = fetchFn
  }

  async token(): Promise<string> {
    const { accessToken, refreshToken, expiresAt } = this.#tokens
    if (refreshToken && expiresAt !== undefined && expiresAt - REFRESH_EARLY_MS <= Date.now()) {
      await this.refresh(accessToken)
    }
    return this.#tokens.accessToken
  }

  async refresh(stale: string): Promise<void> {
    if (this.#tokens.accessToken !== stale || !this.#tokens.refreshToken) return
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined
    })
    await this.#refreshing
  }

  async #refresh(): Promise<void> {
    const { shared } = this.#credentials
    if (!shared) return this.#refreshNow()
    await shared.lock(async () => {
      const saved = await shared.load()
      if (saved?.refreshToken && saved.refreshToken !== this.#tokens.refreshToken) this.#tokens = saved
      else await this.#refreshNow()
    })
  }

  async #refreshNow(): Promise<void> {
    const refreshToken = this.#tokens.refreshToken as string
    // Plain HTTP only when the server's own address is (a server on this machine or a private network).
    const http = {
      [oauth.allowInsecureRequests]: this.#url.startsWith('http:'),
      [oauth.customFetch]: this.#fetch,
    }
    const issuer = new URL(this.#url)
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, http))
    const client = { client_id: this.#credentials.clientId }
    let result: oauth.TokenEndpointResponse
    try {
      const response = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken, {
        ...http,
        additionalParameters: { resource: `${this.#url}/api/v1` },
      })
      result = await oauth.processRefreshTokenResponse(as, client, response)
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError) {
        throw new CofferError(
          401,
          'refresh_failed',
          `The refresh token was refused (${error.error}): it was used already, revoked, or it expired.` +
            ' A refresh token used twice ends its grant, and every token of it.',
          'Sign in again (`coffer login`).',
          { cause: error },
        )
      }
      throw error
    }
    this.#tokens = {
      accessToken: result.access_token,
      refreshToken: result.refresh_token ?? refreshToken,
      ...(result.expires_in === undefined ? {} : { expiresAt: Date.now() + result.expires_in * 1000 }),
    }
    await this.#credentials.onRefresh?.(this.#tokens)
  }
}
