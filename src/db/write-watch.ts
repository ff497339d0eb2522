// Tells when this process has written through Kysely, for caches that must not serve what it read before its
// own write (see Db.changeEpoch). Other processes' writes arrive as PostgreSQL notifications, but this
// process's own may arrive after it has answered the writer, whose next request must already see the change.
import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryResult,
  TransactionSettings,
} from 'kysely'

/** A statement that may change rows: anything but a SELECT (raw SQL counts unless it starts with one). */
function mayWrite(query: CompiledQuery): boolean {
  const kind = query.query.kind
  if (kind === 'SelectQueryNode') return false
  return !(kind === 'RawNode' && /^\s*select\b/i.test(query.sql))
}

/** A connection that remembers whether it ran a statement that may write. */
class WatchedConnection implements DatabaseConnection {
  readonly inner: DatabaseConnection
  wrote = false

  constructor(inner: DatabaseConnection) {
    this.inner = inner
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (mayWrite(query)) this.wrote = true
    return this.inner.executeQuery<R>(query)
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    if (mayWrite(query)) this.wrote = true
    return this.inner.streamQuery<R>(query, chunkSize)
  }
}

/**
 * Calls `written` whenever a connection that ran a write goes back to the pool: after the statement, or
 * after the transaction that held it has committed (or rolled back). That is before the caller of the
 * write goes on, and after the change is visible to every later read. Savepoints are left out, so Kysely
 * refuses them rather than letting one run unwatched; Coffer uses none.
 */
class WatchingDriver implements Driver {
  readonly #inner: Driver
  readonly #written: () => void
  /** One wrapper per pooled connection, reused: Kysely keeps a set of the connections it has seen. */
  readonly #watched = new WeakMap<DatabaseConnection, WatchedConnection>()

  constructor(inner: Driver, written: () => void) {
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
      if ((connection as WatchedConnection).wrote) this.#written()
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
export function watchWrites(dialect: Dialect, written: () => void): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new WatchingDriver(dialect.createDriver(), written),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  }
}
