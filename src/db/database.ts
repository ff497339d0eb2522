// Opens the metadata database for either engine and brings its schema up to date.
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import {
  type CompiledQuery,
  Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  PostgresDialect,
  SqliteDialect,
} from 'kysely'
import pg from 'pg'
import * as initial from './migrations/0001_initial.ts'
import * as uploads from './migrations/0002_uploads.ts'
import * as multipartUploads from './migrations/0003_multipart_uploads.ts'
import * as credentialNotifications from './migrations/0004_credential_notifications.ts'
import * as searchIndex from './migrations/0005_search_index_without_pending_list.ts'
import * as coveringOrderIndexes from './migrations/0006_covering_order_indexes.ts'
import * as metadataNotifications from './migrations/0007_metadata_notifications.ts'
import { NodeSqliteDatabase } from './node-sqlite.ts'
import { type ListenerLog, PgChangeListener } from './pg-change-listener.ts'
import { type RowFactory, rowFactory } from './row-factory.ts'
import type { Database } from './schema.ts'
import { watchWrites } from './write-watch.ts'

export type Engine = 'sqlite' | 'postgres'

export interface Db {
  kysely: Kysely<Database>
  engine: Engine
  /**
   * Runs a read-only query outside any transaction, for request handling. It sees every write this process
   * committed, and those of other processes committed before the current turn of the event loop began. On
   * SQLite it runs at once on a read connection of its own, which skips the single writer connection's queue
   * (WAL lets readers and the writer work side by side), in a snapshot that lasts until the turn's end (see
   * SnapshotReader). Never use it for a read that must see the caller's own open transaction.
   * A `statementName` makes PostgreSQL keep the parsed and planned statement on each connection; give one
   * only to queries whose SQL never changes.
   */
  read<Row>(query: CompiledQuery<Row>, statementName?: string): Promise<Row[]>
  /**
   * `read` for the few statements whose only good plan reads a table through an index the planner cannot
   * judge, such as the trigram index for a substring, and whose caller has a way on without them.
   * PostgreSQL runs them on connections where it may read tables only through bitmap index scans (no
   * sequential or plain index scans), plans each statement once, for any values (keep such statements to a
   * shape with a single bitmap plan), and cancels a statement still running after BITMAP_READ_TIMEOUT_MS:
   * the result is then undefined. SQLite: `read`.
   */
  readThroughBitmaps<Row>(query: CompiledQuery<Row>, statementName: string): Promise<Row[] | undefined>
  /**
   * For caches of credentials: a number that changes whenever an API key may have changed (been revoked,
   * say) in any process, NaN when that cannot be known. Stamp an entry with the epoch taken before reading
   * it, and trust the entry only while the epoch is the same. On SQLite it changes with every commit, seen
   * from the next turn of the event loop as `read` sees commits; on PostgreSQL with every notification of a
   * change to api_keys (migration 0004).
   */
  credentialEpoch(): number
  /**
   * For caches of file rows, which join a file with its folder and share: like `credentialEpoch`, for changes
   * to the account's files, folders and shares. On SQLite it changes with every commit; on PostgreSQL with
   * every notification of a change to the account's rows (migration 0007), and with every write of this
   * process, at once, so that its next read sees its own writes before their notification arrives.
   */
  metadataEpoch(accountId: string): number
  /** Where trouble in the background (PostgreSQL's change notifications) is logged; until called, nowhere. */
  reportTo(log: ListenerLog): void
  close(): Promise<void>
}

export interface DatabaseOptions {
  /** `postgres://...`, or undefined for SQLite in `dataDir`. */
  databaseUrl: string | undefined
  dataDir: string
  /** PostgreSQL pool size per process. */
  poolSize?: number
}

const MIGRATIONS: Record<string, { up(db: Kysely<unknown>, engine: Engine): Promise<void> }> = {
  '0001_initial': initial,
  '0002_uploads': uploads,
  '0003_multipart_uploads': multipartUploads,
  '0004_credential_notifications': credentialNotifications,
  '0005_search_index_without_pending_list': searchIndex,
  '0006_covering_order_indexes': coveringOrderIndexes,
  '0007_metadata_notifications': metadataNotifications,
}

class Migrations implements MigrationProvider {
  readonly #engine: Engine
  constructor(engine: Engine) {
    this.#engine = engine
  }
  async getMigrations(): Promise<Record<string, Migration>> {
    return Object.fromEntries(
      Object.entries(MIGRATIONS).map(([name, m]) => [
        name,
        { up: (db: Kysely<unknown>) => m.up(db, this.#engine) },
      ]),
    )
  }
}

function int8AsNumber(value: string): number {
  // Counters, sizes and epoch-millisecond timestamps all fit well inside 2^53.
  return Number(value)
}

/**
 * How long `Db.readThroughBitmaps` lets a statement run on PostgreSQL. An index can cost far more than its
 * answer is worth: the trigram index knows only letters and digits, so for "report-1" it offers every name
 * with the word "report" and any word starting with "1", and PostgreSQL reads them all from the table to
 * keep the one that matches (90 ms, a sixteenth of a million-file table).
 */
export const BITMAP_READ_TIMEOUT_MS = 20

/** Session settings of `Db.readThroughBitmaps`'s connections. */
const BITMAPS_ONLY = [
  'enable_seqscan=off',
  'enable_indexscan=off',
  'enable_indexonlyscan=off',
  'plan_cache_mode=force_generic_plan',
  `statement_timeout=${BITMAP_READ_TIMEOUT_MS}`,
]

/** The PostgreSQL notification channels of migrations 0004 (payload empty) and 0007 (payload an account id). */
const CREDENTIALS_CHANNEL = 'coffer_credentials'
const METADATA_CHANNEL = 'coffer_metadata'

/** PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout (or by request). */
const QUERY_CANCELED = '57014'

function newPgPool(connectionString: string, max: number, settings: string[] = []): pg.Pool {
  const set = settings.map((setting) => `set ${setting}`).join('; ')
  const pool = new pg.Pool({
    connectionString,
    max,
    types: {
      getTypeParser: (oid, format) => {
        // int8 (count, bigint columns) and numeric (sum) arrive as strings by default.
        if (oid === 20 || oid === 1700) return int8AsNumber
        return pg.types.getTypeParser(oid, format)
      },
    },
    // Set by a statement rather than the `options` startup parameter, which connection poolers such as
    // PgBouncer refuse. The pool hands the connection out only once this has finished; should it fail, the
    // connection is closed and the query that asked for it fails.
    ...(settings.length > 0 ? { onConnect: (client: pg.ClientBase) => client.query(set) } : {}),
  })
  // An idle connection the server drops (restart, failover, a dropped database) makes the pool emit
  // 'error'; with no listener that would crash the process. The pool has already discarded the client,
  // and the next query opens a fresh one.
  pool.on('error', () => {})
  return pool
}

/**
 * Runs statements PostgreSQL keeps parsed and planned on each connection, under their names, with rows built
 * by a factory made once per statement (its columns never change).
 */
function namedStatementReader() {
  const rowFactories = new Map<string, RowFactory>()
  return async <Row>(pool: pg.Pool, query: CompiledQuery<Row>, name: string): Promise<Row[]> => {
    const result = await pool.query({
      name,
      text: query.sql,
      values: [...query.parameters],
      rowMode: 'array',
    })
    let toRow = rowFactories.get(name)
    if (!toRow) {
      toRow = rowFactory(result.fields.map((field) => field.name))
      rowFactories.set(name, toRow)
    }
    return (result.rows as unknown[][]).map(toRow) as Row[]
  }
}

export function openDatabase(options: DatabaseOptions): Db {
  if (options.databaseUrl) {
    const pool = newPgPool(options.databaseUrl, options.poolSize ?? 10)
    // Few requests use it, and each briefly; a search that waits for one waits about as long as it would
    // for the CPU.
    const bitmapPool = newPgPool(options.databaseUrl, 4, BITMAPS_ONLY)
    const changes = new PgChangeListener(options.databaseUrl, [CREDENTIALS_CHANNEL, METADATA_CHANNEL])
    const kysely = new Kysely<Database>({
      dialect: watchWrites(new PostgresDialect({ pool }), () => changes.touch(METADATA_CHANNEL)),
    })
    const readNamed = namedStatementReader()
    let closing: Promise<void> | undefined
    return {
      kysely,
      engine: 'postgres',
      read: async <Row>(query: CompiledQuery<Row>, statementName?: string) => {
        if (!statementName) return (await kysely.executeQuery(query)).rows
        return readNamed(pool, query, statementName)
      },
      readThroughBitmaps: async (query, statementName) => {
        try {
          return await readNamed(bitmapPool, query, statementName)
        } catch (error) {
          if ((error as { code?: unknown }).code === QUERY_CANCELED) return undefined
          throw error
        }
      },
      credentialEpoch: () => changes.epoch(CREDENTIALS_CHANNEL),
      metadataEpoch: (accountId) => changes.epoch(METADATA_CHANNEL, accountId),
      reportTo: (log) => changes.reportTo(log),
      // Callers may close twice (a test's own close, then its harness's); a pool may end only once.
      close: () => {
        closing ??= (async () => {
          await changes.close()
          await bitmapPool.end()
          await kysely.destroy()
        })()
        return closing
      },
    }
  }

  mkdirSync(options.dataDir, { recursive: true })
  const filename = path.join(options.dataDir, 'coffer.sqlite')
  const reader = new SnapshotReader(filename)
  const kysely = new Kysely<Database>({
    dialect: new SqliteDialect({
      database: async () => {
        // After each statement of this (the only writing) connection, the reader's next read must see it.
        const db = new NodeSqliteDatabase(filename, { executed: () => reader.end() })
        // WAL lets the CLI and readers work while the server writes; FULL sync makes every
        // acknowledged commit survive a power cut, not just a process crash.
        db.exec('pragma journal_mode = wal')
        db.exec('pragma synchronous = full')
        db.exec('pragma foreign_keys = on')
        db.exec('pragma busy_timeout = 5000')
        return db
      },
    }),
  })
  return {
    kysely,
    engine: 'sqlite',
    read: async <Row>(query: CompiledQuery<Row>) => reader.all(query) as Row[],
    readThroughBitmaps: async <Row>(query: CompiledQuery<Row>) => reader.all(query) as Row[],
    credentialEpoch: () => reader.dataVersion(),
    metadataEpoch: () => reader.dataVersion(),
    reportTo: () => {},
    close: async () => {
      reader.close()
      await kysely.destroy()
    },
  }
}

/**
 * The SQLite read connection of `Db.read`. Its reads within one turn of the event loop share one read
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

export async function migrate(db: Db): Promise<void> {
  const migrator = new Migrator({ db: db.kysely, provider: new Migrations(db.engine) })
  const { error, results } = await migrator.migrateToLatest()
  const failed = results?.find((r) => r.status === 'Error')
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${String(error)}`, {
      cause: error,
    })
  }
}
