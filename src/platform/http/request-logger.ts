// Each request's logger, made only when the request first logs something its level lets through. Fastify makes
// a pino child (bound to the request id) for every request, though at the usual levels most requests log
// nothing; on a small request that child was a tenth of the server's time.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { Bindings, ChildLoggerOptions, LevelWithSilent } from 'pino'
import { clientAddress } from './client-address.ts'

type Level = Exclude<LevelWithSilent, 'silent'>
type LogFn = FastifyBaseLogger['info']
type LevelTest = FastifyBaseLogger & { isLevelEnabled(level: string): boolean }

const LEVELS: Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace']

class RequestLogger implements FastifyBaseLogger {
  // On the prototype (added below), so a request's logger costs one small object.
  declare fatal: LogFn
  declare error: LogFn
  declare warn: LogFn
  declare info: LogFn
  declare debug: LogFn
  declare trace: LogFn
  readonly #parent: LevelTest
  readonly #bindings: Bindings
  #child: FastifyBaseLogger | undefined

  constructor(parent: LevelTest, bindings: Bindings) {
    this.#parent = parent
    this.#bindings = bindings
  }

  get level(): string {
    return this.#child?.level ?? this.#parent.level
  }

  set level(level: string) {
    this.#real().level = level
  }

  #real(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings)
    return this.#child
  }

  log(level: Level, args: Parameters<LogFn>): void {
    if (this.#child || this.#parent.isLevelEnabled(level)) this.#real()[level](...args)
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options)
  }
}

for (const level of LEVELS) {
  RequestLogger.prototype[level] = function (this: RequestLogger, ...args: Parameters<LogFn>) {
    this.log(level, args)
  } as LogFn
}

/** For Fastify's `childLoggerFactory`. A route-level log level needs a real child at once. */
export function requestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined || !('isLevelEnabled' in parent)) return parent.child(bindings, options)
  return new RequestLogger(parent as LevelTest, bindings)
}

/**
 * A credential anywhere in a URL (a client that put its key in the query string, say): Coffer's own secrets
 * (`coffer_` API keys, `coffer_grant_` upload grants, `coffer_setup_` setup links), blob client tokens, and
 * the device flow's user code. Such a request may be refused, but its URL is still logged.
 */
const SECRET_IN_URL = /(coffer_|vercel_blob_client_|user_code=)[^&#/?\s]+/g
/**
 * A query parameter whose name says it carries a secret, whatever the secret looks like: a METRICS_TOKEN sent as
 * `?token=` (refused: only the Authorization header is read), an OAuth token, a password, the code and state a
 * sign-in provider sends back (the state stands for a sign-in in progress).
 */
const SECRET_PARAMETER =
  /([?&](?:token|access_token|refresh_token|id_token|api_key|apikey|key|secret|password|code|state)=)[^&#]*/gi

/**
 * The public id of a share link or a file request, which is the capability to use it (`/s/{id}`, `/r/{id}`,
 * `/api/v1/public/requests/{id}`): logged by its first four characters only, enough to tell lines of one link
 * from another's, as a setup link is logged without its secret.
 */
const CAPABILITY_IN_PATH = /^(\/(?:s|r|api\/v1\/public\/requests)\/[^/?#]{0,4})[^/?#]*/

/** A URL as logs may keep it: no credential, no capability. */
export function redactedUrl(url: string): string {
  return url
    .replace(SECRET_IN_URL, '$1[redacted]')
    .replace(SECRET_PARAMETER, '$1[redacted]')
    .replace(CAPABILITY_IN_PATH, '$1…')
}

/** What a log line says of a request: Fastify's default fields, with any secret in the URL redacted. */
export function loggedRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactedUrl(request.url),
    host: request.host,
    remoteAddress: clientAddress(request),
    remotePort: request.socket?.remotePort,
  }
}
