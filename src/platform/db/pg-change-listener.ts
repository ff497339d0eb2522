// One connection per process that LISTENs for PostgreSQL notification channels, and epochs that change with
// their notifications. A cache stamps each entry with the epoch it was read in and trusts it only while the
// epoch is unchanged. A notification's payload may name a scope (an account id): it then changes the epochs
// of that scope alone, and an empty payload changes every epoch of its channel. The connection is opened on
// first use (the CLI never needs it) and reopened when lost; while it is down every epoch is NaN, which
// equals nothing, so no entry is trusted: a notification missed then can never leave a stale entry in use.
// Nothing fails while it is down, but every cache read goes to the database, so an outage is logged when it
// begins, every minute it lasts, and when it ends.
import pg from 'pg'

const RECONNECT_MS = 1000
const REPEAT_WARNING_MS = 60_000
/**
 * Scopes remembered per channel. Past this many since the last reset, all are forgotten and the whole
 * channel counts as changed: one spurious miss per cached entry, against memory that grows without bound.
 */
const MAX_SCOPES = 100_000
/** The listening connection's application_name, to tell it apart in pg_stat_activity. */
export const LISTENER_NAME = 'coffer-change-listener'

/** Where the listener reports its outages: the app's logger (pino's methods have this shape). */
export interface ListenerLog {
  warn(details: object, message: string): void
  info(details: object, message: string): void
}

/** When a channel last changed, as values of the listener's counter. */
interface ChannelChanges {
  /** The last notification without a scope, or the last `touch`. */
  whole: number
  /** The last notification per scope, since the last reset. */
  byScope: Map<string, number>
}

export class PgChangeListener {
  readonly #url: string
  readonly #channels = new Map<string, ChannelChanges>()
  #client: pg.Client | undefined
  /** The counter when the current connection began listening; NaN while not listening. */
  #listeningSince = Number.NaN
  #counter = 0
  #started = false
  #closed = false
  #retry: NodeJS.Timeout | undefined
  #log: ListenerLog | undefined
  /** When the current outage began (the first attempt counts as one until it succeeds). */
  #downSince: number | undefined
  #warnedAt = 0

  constructor(url: string, channels: readonly string[]) {
    this.#url = url
    for (const channel of channels) this.#channels.set(channel, { whole: 0, byScope: new Map() })
  }

  reportTo(log: ListenerLog): void {
    this.#log = log
  }

  /**
   * Changes with every notification on `channel` whose payload is empty or `scope`, and with every `touch` of
   * it; NaN while not listening.
   */
  epoch(channel: string, scope?: string): number {
    if (!this.#started) {
      this.#started = true
      void this.#listen()
    }
    const changes = this.#changesOf(channel)
    // Each part only grows, and any change sets one part above all the others, so the maximum changes too.
    const whole = Math.max(this.#listeningSince, changes.whole)
    return scope === undefined ? whole : Math.max(whole, changes.byScope.get(scope) ?? 0)
  }

  /**
   * Counts a change this process has just committed as a change to the whole channel. Its notification
   * arrives later; until then, this keeps the process from trusting what it read before its own write.
   */
  touch(channel: string): void {
    this.#changesOf(channel).whole = ++this.#counter
  }

  #changesOf(channel: string): ChannelChanges {
    const changes = this.#channels.get(channel)
    if (!changes) throw new Error(`not listening on ${channel}`)
    return changes
  }

  #notified(channel: string, scope: string): void {
    const changes = this.#channels.get(channel)
    if (!changes) return
    if (scope === '') {
      changes.whole = ++this.#counter
      return
    }
    changes.byScope.set(scope, ++this.#counter)
    if (changes.byScope.size > MAX_SCOPES) {
      changes.byScope.clear()
      changes.whole = ++this.#counter
    }
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
      this.#listeningSince = Number.NaN
      client.end().catch(() => {})
      this.#failed(error)
    }
    client.on('notification', (message) => {
      if (this.#client === client) this.#notified(message.channel, message.payload ?? '')
    })
    client.on('error', lost)
    client.on('end', () => lost())
    try {
      await client.connect()
      for (const channel of this.#channels.keys())
        await client.query(`listen ${client.escapeIdentifier(channel)}`)
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
    // Anything may have changed while nobody listened; what was learnt of scopes before is now moot.
    this.#listeningSince = ++this.#counter
    for (const changes of this.#channels.values()) changes.byScope.clear()
    if (this.#downSince !== undefined) {
      this.#log?.info(
        { channels: [...this.#channels.keys()], downForMs: Date.now() - this.#downSince },
        'PostgreSQL change notifications are back: cached API keys and files are trusted again',
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
          channels: [...this.#channels.keys()],
          error: error?.message ?? 'connection ended',
          downForMs: now - this.#downSince,
        },
        'PostgreSQL change notifications are down: every request reads its API key and files from the ' +
          `database until they are back; retrying every ${RECONNECT_MS / 1000} s`,
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
    this.#listeningSince = Number.NaN
    await client?.end().catch(() => {})
  }
}
