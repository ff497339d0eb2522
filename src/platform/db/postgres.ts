// The scale-out engine: a pool of connections for queries, and one connection that LISTENs for the change
// notifications that tell every process when its caches must read again (Db.changeEpoch).
import { type CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import type { Db, WatchedRows } from './database.ts'
import { PgChangeListener } from './pg-change-listener.ts'
import { type RowFactory, rowFactory } from './row-factory.ts'
import type { Database } from './schema.ts'
import { watchWrites } from './write-watch.ts'

/** The notification channel of each set of watched rows (migrations 0004 and 0025: payload empty; 0007: an account id). */
const CHANNELS: Record<WatchedRows, string> = {
  credentials: 'coffer_credentials',
  files_folders_shares: 'coffer_metadata',
}

function int8AsNumber(value: string): number {
  // Counters, sizes and epoch-millisecond timestamps all fit well inside 2^53.
  return Number(value)
}

/**
 * How long a query may wait to get a connection (a new one, or a free one of a busy pool) before it fails: a
 * database that does not answer (a dropped route, a frozen server) fails requests with a 503 within this, rather
 * than holding them until the client gives up.
 */
const CONNECT_TIMEOUT_MS = 10_000

function newPgPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // Notices a connection that died without a word (a dropped route), which would otherwise look alive.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    types: {
      getTypeParser: (oid, format) => {
        // int8 (count, bigint columns) and numeric (sum) arrive as strings by default.
        if (oid === 20 || oid === 1700) return int8AsNumber
        return pg.types.getTypeParser(oid, format)
      },
    },
  })
  // A connection the server drops (a restart, a failover, a dropped database) emits 'error', and an 'error' with
  // no listener ends the process. The pool listens on its idle connections only: a connection checked out of
  // it (Kysely holds one for each statement and each transaction) has none while it is out, so every connection
  // gets a listener of its own when it is made. Its query has already failed with the error, which the caller
  // sees; the pool discards the connection when it comes back, and the next query opens a fresh one.
  pool.on('connect', (client) => client.on('error', () => {}))
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
}

export function openPostgres(url: string, options: PostgresOptions): Db {
  const pool = newPgPool(url, options.poolSize)
  const changes = new PgChangeListener(url, Object.values(CHANNELS))
  const kysely = new Kysely<Database>({
    // This process's own writes move its epochs at once (their notifications come after the writer's next
    // request may have read): any write, the files'; a write to the credentials' tables, theirs too.
    dialect: watchWrites(new PostgresDialect({ pool }), ({ credentials }) => {
      changes.touch(CHANNELS.files_folders_shares)
      if (credentials) changes.touch(CHANNELS.credentials)
    }),
  })
  const readNamed = namedStatementReader()
  // The advisory locks of background jobs (`exclusively`), on a connection of their own rather than the
  // pool's: a job that held a pooled connection for its length would leave its own queries, and other jobs',
  // fewer to run on (and none with a small pool). One connection holds them all; if it dies, they are all
  // given up, and the next job opens another.
  let locking: Promise<pg.Client> | undefined
  const lockConnection = () => {
    locking ??= (async () => {
      const client = new pg.Client({ connectionString: url })
      client.on('error', () => {
        locking = undefined
      })
      client.on('end', () => {
        locking = undefined
      })
      await client.connect()
      return client
    })().catch((error: unknown) => {
      locking = undefined
      throw error
    })
    return locking
  }
  // One statement at a time on it (pg would queue them, a use it deprecates): each waits for the one before.
  let lockStatements: Promise<unknown> = Promise.resolve()
  const onLockConnection = (text: string, key: string): Promise<boolean> => {
    const result = lockStatements.then(async () => {
      const client = await lockConnection()
      const { rows } = await client.query<{ locked: boolean }>(text, [key])
      return rows[0]?.locked === true
    })
    lockStatements = result.catch(() => {})
    return result
  }
  let closing: Promise<void> | undefined
  return {
    kysely,
    engine: 'postgres',
    transaction: (work) => kysely.transaction().execute(work),
    read: async <Row>(query: CompiledQuery<Row>, statementName?: string) => {
      if (!statementName) return (await kysely.executeQuery(query)).rows
      return readNamed(pool, query, statementName)
    },
    changeEpoch: (watched, scope) => changes.epoch(CHANNELS[watched], scope),
    ping: async () => {
      await sql`select 1`.execute(kysely)
    },
    poolUse: () => ({ open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    exclusively: async (name, job) => {
      const key = `coffer:job:${name}`
      const locked = await onLockConnection('select pg_try_advisory_lock(hashtext($1)) as locked', key)
      if (!locked) return false
      try {
        await job()
      } finally {
        // A lock connection that died took its locks with it: nothing is left to unlock.
        await onLockConnection('select pg_advisory_unlock(hashtext($1)) as locked', key).catch(() => {})
      }
      return true
    },
    reportTo: (log) => changes.reportTo(log),
    // Callers may close twice (a test's own close, then its harness's); a pool may end only once.
    close: () => {
      closing ??= (async () => {
        const locks = await locking?.catch(() => undefined)
        await locks?.end().catch(() => {})
        await changes.close()
        await kysely.destroy()
      })()
      return closing
    },
  }
}
