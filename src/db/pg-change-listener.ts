// One connection per process that LISTENs for a PostgreSQL notification channel, and an epoch that changes
// with every notification. A cache stamps each entry with the epoch it was read in and trusts it only while the
// epoch is unchanged. The connection is opened on first use (the CLI never needs it) and reopened when lost;
// while it is down the epoch is NaN, which equals nothing, so no entry is trusted: a notification missed
// then can never leave a stale entry in use.
import pg from 'pg'

const RECONNECT_MS = 1000
/** The listening connection's application_name, to tell it apart in pg_stat_activity. */
export const LISTENER_NAME = 'coffer-change-listener'

export class PgChangeListener {
  readonly #url: string
  readonly #channel: string
  #client: pg.Client | undefined
  #epoch = Number.NaN
  #counter = 0
  #started = false
  #closed = false
  #retry: NodeJS.Timeout | undefined

  constructor(url: string, channel: string) {
    this.#url = url
    this.#channel = channel
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
    const lost = () => {
      if (this.#client !== client) return
      this.#client = undefined
      this.#epoch = Number.NaN
      client.end().catch(() => {})
      this.#scheduleRetry()
    }
    client.on('notification', () => {
      if (this.#client === client) this.#epoch = ++this.#counter
    })
    client.on('error', lost)
    client.on('end', lost)
    try {
      await client.connect()
      await client.query(`listen ${client.escapeIdentifier(this.#channel)}`)
    } catch {
      client.end().catch(() => {})
      this.#scheduleRetry()
      return
    }
    if (this.#closed) {
      await client.end().catch(() => {})
      return
    }
    this.#client = client
    // Anything may have changed while nobody listened.
    this.#epoch = ++this.#counter
  }

  #scheduleRetry(): void {
    if (this.#closed) return
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
