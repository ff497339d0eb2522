// One connection per process that LISTENs for a PostgreSQL notification channel, and an epoch that changes
// with every notification. A cache stamps each entry with the epoch it was read in and trusts it only while the
// epoch is unchanged. The connection is opened on first use (the CLI never needs it) and reopened when lost;
// while it is down the epoch is NaN, which equals nothing, so no entry is trusted: a notification missed
// then can never leave a stale entry in use. Nothing fails while it is down, but every cache read goes to the
// database, so an outage is logged when it begins, every minute it lasts, and when it ends.
import pg from 'pg'

const RECONNECT_MS = 1000
const REPEAT_WARNING_MS = 60_000
/** The listening connection's application_name, to tell it apart in pg_stat_activity. */
export const LISTENER_NAME = 'coffer-change-listener'

/** Where the listener reports its outages: the app's logger (pino's methods have this shape). */
export interface ListenerLog {
  warn(details: object, message: string): void
  info(details: object, message: string): void
}

export class PgChangeListener {
  readonly #url: string
  readonly #channel: string
  #client: pg.Client | undefined
  #epoch = Number.NaN
  #counter = 0
  #started = false
  #closed = false
  #retry: NodeJS.Timeout | undefined
  #log: ListenerLog | undefined
  /** When the current outage began (the first attempt counts as one until it succeeds). */
  #downSince: number | undefined
  #warnedAt = 0

  constructor(url: string, channel: string) {
    this.#url = url
    this.#channel = channel
  }

  reportTo(log: ListenerLog): void {
    this.#log = log
  }

  /** Changes with every notification; NaN while not listening. */
  epoch(): number {
    if (!this.#started) {
      this.#started = true
      void this.#listen()
    }
    return this.#epoch
  }

  async #listen(): Promise<void> {
    // Keepalive notices a connection that died without a word (a dropped route), which would otherwise look
    // alive, and so trusted, while its notifications go nowhere.
    const client = new pg.Client({
      connectionString: this.#url,
      application_name: LISTENER_NAME,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    })
    const lost = (error?: Error) => {
      if (this.#client !== client) return
      this.#client = undefined
      this.#epoch = Number.NaN
      client.end().catch(() => {})
      this.#failed(error)
    }
    client.on('notification', () => {
      if (this.#client === client) this.#epoch = ++this.#counter
    })
    client.on('error', lost)
    client.on('end', () => lost())
    try {
      await client.connect()
      await client.query(`listen ${client.escapeIdentifier(this.#channel)}`)
    } catch (error) {
      client.end().catch(() => {})
      this.#failed(error as Error)
      return
    }
    if (this.#closed) {
      await client.end().catch(() => {})
      return
    }
    this.#client = client
    // Anything may have changed while nobody listened.
    this.#epoch = ++this.#counter
    if (this.#downSince !== undefined) {
      this.#log?.info(
        { channel: this.#channel, downForMs: Date.now() - this.#downSince },
        'PostgreSQL change notifications are back: cached API keys are trusted again',
      )
    }
    this.#downSince = undefined
    this.#warnedAt = 0
  }

  /** Counts an attempt that failed, or a connection lost, warns when due, and tries again shortly. */
  #failed(error: Error | undefined): void {
    if (this.#closed) return
    const now = Date.now()
    this.#downSince ??= now
    if (now - this.#warnedAt >= REPEAT_WARNING_MS) {
      this.#warnedAt = now
      this.#log?.warn(
        {
          channel: this.#channel,
          error: error?.message ?? 'connection ended',
          downForMs: now - this.#downSince,
        },
        'PostgreSQL change notifications are down: every request reads its API key from the database ' +
          `until they are back; retrying every ${RECONNECT_MS / 1000} s`,
      )
    }
    this.#retry = setTimeout(() => void this.#listen(), RECONNECT_MS)
    this.#retry.unref()
  }

  async close(): Promise<void> {
    this.#closed = true
    clearTimeout(this.#retry)
    const client = this.#client
    this.#client = undefined
    this.#epoch = Number.NaN
    await client?.end().catch(() => {})
  }
}
