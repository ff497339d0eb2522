// The scale-out engine: a pool of connections for queries, a small pool whose planner may only read through
// bitmap index scans (Db.readThroughBitmaps), and one connection that LISTENs for the change notifications
// that tell every process when its caches must read again (Db.changeEpoch).
import { type CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import type { Db, WatchedRows } from './database.ts'
import { PgChangeListener } from './pg-change-listener.ts'
import { type RowFactory, rowFactory } from './row-factory.ts'
import type { Database } from './schema.ts'
import { watchWrites } from './write-watch.ts'

/**
 * How long `Db.readThroughBitmaps` lets a statement run on PostgreSQL, unless the options say otherwise. An
 * index can cost far more than its answer is worth: the trigram index knows only letters and digits, so for
 * "report-1" it offers every name with the word "report" and any word starting with "1", and PostgreSQL
 * reads them all from the table to keep the one that matches (90 ms, a sixteenth of a million-file table).
 */
export const BITMAP_READ_TIMEOUT_MS = 20

/** Session settings of `Db.readThroughBitmaps`'s connections. */
const bitmapsOnly = (timeoutMs: number) => [
  'enable_seqscan=off',
  'enable_indexscan=off',
  'enable_indexonlyscan=off',
  'plan_cache_mode=force_generic_plan',
  `statement_timeout=${timeoutMs}`,
]

/** The notification channel of each set of watched rows (migrations 0004: payload empty; 0007: an account id). */
const CHANNELS: Record<WatchedRows, string> = {
  api_keys: 'coffer_credentials',
  files_folders_shares: 'coffer_metadata',
}

/** PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout (or by request). */
const QUERY_CANCELED = '57014'

function int8AsNumber(value: string): number {
  // Counters, sizes and epoch-millisecond timestamps all fit well inside 2^53.
  return Number(value)
}

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

export interface PostgresOptions {
  /** Connections per process. */
  poolSize: number
  /** See BITMAP_READ_TIMEOUT_MS. */
  bitmapReadTimeoutMs?: number
}

export function openPostgres(url: string, options: PostgresOptions): Db {
  const pool = newPgPool(url, options.poolSize)
  // Few requests use it, and each briefly; a search that waits for one waits about as long as it would
  // for the CPU.
  const bitmapPool = newPgPool(url, 4, bitmapsOnly(options.bitmapReadTimeoutMs ?? BITMAP_READ_TIMEOUT_MS))
  const changes = new PgChangeListener(url, Object.values(CHANNELS))
  const kysely = new Kysely<Database>({
    dialect: watchWrites(new PostgresDialect({ pool }), () => changes.touch(CHANNELS.files_folders_shares)),
  })
  const readNamed = namedStatementReader()
  let closing: Promise<void> | undefined
  return {
    kysely,
    engine: 'postgres',
    transaction: (work) => kysely.transaction().execute(work),
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
    changeEpoch: (watched, scope) => changes.epoch(CHANNELS[watched], scope),
    ping: async () => {
      await sql`select 1`.execute(kysely)
    },
    exclusively: async (name, job) => {
      const connection = await pool.connect()
      const key = `coffer:job:${name}`
      let broken: Error | undefined
      // The connection may die while the job runs (a restart of the server, a network cut): the lock is gone
      // with it, the job finishes, and the connection is closed rather than reused.
      const lost = (error: Error) => {
        broken = error
      }
      connection.on('error', lost)
      try {
        const { rows } = await connection.query<{ locked: boolean }>(
          'select pg_try_advisory_lock(hashtext($1)) as locked',
          [key],
        )
        if (!rows[0]?.locked) return false
        try {
          await job()
        } finally {
          // A connection that cannot unlock is closed instead, which unlocks too.
          await connection.query('select pg_advisory_unlock(hashtext($1))', [key]).catch((error: Error) => {
            broken = error
          })
        }
        return true
      } finally {
        connection.off('error', lost)
        connection.release(broken)
      }
    },
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
