// The embedded engine: one SQLite file in DATA_DIR, written through a single connection (Kysely's SQLite
// dialect serialises its queries) and read through another that skips the writer's queue (Db.read).
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { type CompiledQuery, Kysely, SqliteAdapter, SqliteDialect, sql } from 'kysely'
import type { Db } from './database.ts'
import { NodeSqliteDatabase } from './node-sqlite.ts'
import type { Database } from './schema.ts'

/**
 * Each connection's page cache, in KiB (a negative cache_size): 64 MiB, where SQLite's default is 2. A search of
 * 10,000,000 files reads thousands of pages of the name index and the files table; with 2 MiB each came from the
 * operating system again, through a system call. It grows only as pages are read.
 */
const CACHE_SIZE = -65_536

/**
 * SQLite's schema changes are transactional, though Kysely's adapter says otherwise to be safe. Saying so makes
 * the migrator run them in one transaction, which begins immediately (node-sqlite.ts): a second process that
 * starts at the same time (the CLI beside a starting server) waits for the first's migrations, then finds them
 * done, rather than running them again beside it (and failing on a column the first has just added).
 */
class TransactionalDdlAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true
  }
}

class CofferSqliteDialect extends SqliteDialect {
  override createAdapter(): SqliteAdapter {
    return new TransactionalDdlAdapter()
  }
}

export function openSqlite(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true })
  const filename = path.join(dataDir, 'coffer.sqlite')
  const reader = new SnapshotReader(filename)
  const kysely = new Kysely<Database>({
    dialect: new CofferSqliteDialect({
      database: async () => {
        // After each statement of this (the only writing) connection, the reader's next read must see it.
        const db = new NodeSqliteDatabase(filename, { executed: () => reader.end() })
        // WAL lets the CLI and readers work while the server writes; FULL sync makes every
        // acknowledged commit survive a power cut, not just a process crash.
        db.exec('pragma journal_mode = wal')
        db.exec('pragma synchronous = full')
        db.exec('pragma foreign_keys = on')
        db.exec('pragma busy_timeout = 5000')
        db.exec(`pragma cache_size = ${CACHE_SIZE}`)
        return db
      },
    }),
  })
  return {
    kysely,
    engine: 'sqlite',
    transaction: (work) => kysely.transaction().execute(work),
    read: async <Row>(query: CompiledQuery<Row>) => reader.all(query) as Row[],
    // Every set of watched rows: SQLite knows only that the file changed, not what in it.
    changeEpoch: () => reader.dataVersion(),
    ping: async () => {
      await sql`select 1`.execute(kysely)
    },
    poolUse: () => undefined,
    exclusively: async (_name, job) => {
      await job()
      return true
    },
    reportTo: () => {},
    close: async () => {
      reader.close()
      await kysely.destroy()
    },
  }
}

/**
 * The read connection of `Db.read`. Its reads within one turn of the event loop share one read
 * transaction: taking and dropping SQLite's file locks for each statement (several fcntl calls) cost as much
 * as the statement itself, and a busy server makes many reads per turn. The transaction ends at the end of
 * the turn, and at once whenever this process writes, so a read always sees this process's own writes and,
 * from the next turn on, those of other processes (the CLI): a request that arrives after a commit elsewhere
 * is read from the socket in a later turn than any snapshot older than that commit.
 */
class SnapshotReader {
  readonly #filename: string
  #db: NodeSqliteDatabase | undefined
  #inTransaction = false
  #dataVersion = Number.NaN
  readonly #endOfTurn = () => this.end()

  constructor(filename: string) {
    this.#filename = filename
  }

  all(query: CompiledQuery): unknown[] {
    return this.#begin().prepare(query.sql).all(query.parameters)
  }

  /** SQLite's `data_version` as of the current snapshot: it changes when another connection commits. */
  dataVersion(): number {
    this.#begin()
    return this.#dataVersion
  }

  #begin(): NodeSqliteDatabase {
    if (!this.#db) {
      this.#db = new NodeSqliteDatabase(this.#filename)
      this.#db.exec('pragma query_only = on')
      this.#db.exec('pragma busy_timeout = 5000')
      this.#db.exec(`pragma cache_size = ${CACHE_SIZE}`)
    }
    if (!this.#inTransaction) {
      // Cached statements, as they run every turn; spelled out as deferred, since `prepare` turns a plain
      // BEGIN into BEGIN IMMEDIATE, which takes the write lock.
      this.#db.prepare('begin deferred').run([])
      this.#inTransaction = true
      setImmediate(this.#endOfTurn)
      const [row] = this.#db.prepare('pragma data_version').all([]) as { data_version: number }[]
      this.#dataVersion = Number(row?.data_version)
    }
    return this.#db
  }

  end(): void {
    if (!this.#inTransaction) return
    this.#inTransaction = false
    this.#db?.prepare('commit').run([])
  }

  close(): void {
    this.end()
    this.#db?.close()
    this.#db = undefined
  }
}
