// Tells when this process has written through Kysely, for caches that must not serve what it read before its
// own write (see Db.changeEpoch). Other processes' writes arrive as PostgreSQL notifications, but this
// process's own may arrive after it has answered the writer, whose next request must already see the change.
import {
  type CompiledQuery,
  type DatabaseConnection,
  DeleteQueryNode,
  type Dialect,
  type Driver,
  InsertQueryNode,
  type OperationNode,
  type QueryResult,
  TableNode,
  type TransactionSettings,
  UpdateQueryNode,
} from 'kysely'

/**
 * Tables whose rows no cache keeps: the webhooks' outbox, which every process polls twice a second, and the
 * mail's (each message sent is a write), with what they are written from. A write to them alone must not make
 * the caches read again what they hold.
 */
const UNCACHED_TABLES = new Set([
  'events',
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
  'mail_outbox',
  'submission_notices',
  'password_resets',
])

/** The table an INSERT, UPDATE or DELETE of one table writes; undefined for anything else. */
function writtenTable(node: OperationNode): string | undefined {
  const target = UpdateQueryNode.is(node)
    ? node.table
    : InsertQueryNode.is(node)
      ? node.into
      : DeleteQueryNode.is(node) && node.from.froms.length === 1
        ? node.from.froms[0]
        : undefined
  return target && TableNode.is(target) ? target.table.identifier.name : undefined
}

/**
 * A statement that may change rows a cache keeps: anything but a SELECT (raw SQL counts unless it starts with
 * one) and a write to UNCACHED_TABLES.
 */
function mayWrite(query: CompiledQuery): boolean {
  const kind = query.query.kind
  if (kind === 'SelectQueryNode') return false
  const table = writtenTable(query.query)
  if (table !== undefined && UNCACHED_TABLES.has(table)) return false
  return !(kind === 'RawNode' && /^\s*select\b/i.test(query.sql))
}

/** The tables of credentials (Db.changeEpoch('credentials')): API keys, and OAuth's tokens and grants. */
const CREDENTIAL_TABLES = new Set(['api_keys', 'oauth_records'])

/** A connection that remembers whether it ran a statement that may write, and whether to credentials. */
class WatchedConnection implements DatabaseConnection {
  readonly inner: DatabaseConnection
  wrote = false
  wroteCredentials = false

  constructor(inner: DatabaseConnection) {
    this.inner = inner
  }

  #watch(query: CompiledQuery): void {
    if (!mayWrite(query)) return
    this.wrote = true
    const table = writtenTable(query.query)
    // Raw SQL names no table it could be told by: it counts for both.
    if (table === undefined || CREDENTIAL_TABLES.has(table)) this.wroteCredentials = true
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    this.#watch(query)
    return this.inner.executeQuery<R>(query)
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    this.#watch(query)
    return this.inner.streamQuery<R>(query, chunkSize)
  }
}

/** What a connection released had written: anything, and credentials among it. */
export type Written = (writes: { credentials: boolean }) => void

/**
 * Calls `written` whenever a connection that ran a write goes back to the pool: after the statement, or
 * after the transaction that held it has committed (or rolled back). That is before the caller of the
 * write goes on, and after the change is visible to every later read. Savepoints are left out, so Kysely
 * refuses them rather than letting one run unwatched; Coffer uses none.
 */
class WatchingDriver implements Driver {
  readonly #inner: Driver
  readonly #written: Written
  /** One wrapper per pooled connection, reused: Kysely keeps a set of the connections it has seen. */
  readonly #watched = new WeakMap<DatabaseConnection, WatchedConnection>()

  constructor(inner: Driver, written: Written) {
    this.#inner = inner
    this.#written = written
  }

  init(): Promise<void> {
    return this.#inner.init()
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const inner = await this.#inner.acquireConnection()
    let watched = this.#watched.get(inner)
    if (!watched) {
      watched = new WatchedConnection(inner)
      this.#watched.set(inner, watched)
    }
    watched.wrote = false
    watched.wroteCredentials = false
    return watched
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.#inner.beginTransaction(innerOf(connection), settings)
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.commitTransaction(innerOf(connection))
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#inner.rollbackTransaction(innerOf(connection))
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    try {
      await this.#inner.releaseConnection(innerOf(connection))
    } finally {
      const watched = connection as WatchedConnection
      if (watched.wrote) this.#written({ credentials: watched.wroteCredentials })
    }
  }

  destroy(): Promise<void> {
    return this.#inner.destroy()
  }
}

function innerOf(connection: DatabaseConnection): DatabaseConnection {
  return (connection as WatchedConnection).inner
}

/** `dialect`, with `written` called after every release of a connection that may have written. */
export function watchWrites(dialect: Dialect, written: Written): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new WatchingDriver(dialect.createDriver(), written),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  }
}
