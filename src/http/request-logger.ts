// Each request's logger, made only when the request first logs something its level lets through. Fastify makes
// a pino child (bound to the request id) for every request, though at the usual levels most requests log
// nothing; on a small request that child was a tenth of the server's time.
import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, LevelWithSilent } from 'pino'

type Level = Exclude<LevelWithSilent, 'silent'>
type LogFn = FastifyBaseLogger['info']

class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger & { isLevelEnabled(level: string): boolean }
  readonly #bindings: Bindings
  #child: FastifyBaseLogger | undefined

  constructor(parent: FastifyBaseLogger & { isLevelEnabled(level: string): boolean }, bindings: Bindings) {
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

  #at(level: Level): LogFn {
    return ((...args: Parameters<LogFn>) => {
      if (this.#child || this.#parent.isLevelEnabled(level)) this.#real()[level](...args)
    }) as LogFn
  }

  fatal = this.#at('fatal')
  error = this.#at('error')
  warn = this.#at('warn')
  info = this.#at('info')
  debug = this.#at('debug')
  trace = this.#at('trace')
  silent: LogFn = () => {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options)
  }
}

/** For Fastify's `childLoggerFactory`. A route-level log level needs a real child at once. */
export function requestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined || !('isLevelEnabled' in parent)) return parent.child(bindings, options)
  return new RequestLogger(parent as FastifyBaseLogger & { isLevelEnabled(level: string): boolean }, bindings)
}
