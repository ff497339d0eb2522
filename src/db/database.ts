// Opens the metadata database for either engine and brings its schema up to date.
import { createHash } from 'node:crypto'
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
import { NodeSqliteDatabase } from './node-sqlite.ts'
import type { Database } from './schema.ts'

export type Engine = 'sqlite' | 'postgres'

/**
 * A statement name for a query whose SQL takes one of a few fixed shapes (e.g. a list with or without a
 * cursor): one prepared statement per shape. Never for SQL that embeds values, which would prepare without end.
 */
export function statementNameFor(prefix: string, sql: string): string {
  return `${prefix}_${createHash('sha1').update(sql).digest('hex').slice(0, 16)}`
}

export interface Db {
  kysely: Kysely<Database>
  engine: Engine
  /**
   * Runs a read-only query outside any transaction; it sees every committed write. On SQLite it runs at once
   * on a read connection of its own, which skips the single writer connection's queue (WAL lets readers and
   * the writer work side by side). Never use it for a read that must see the caller's own open transaction.
   * A `statementName` makes PostgreSQL keep the parsed and planned statement on each connection; give one
   * only to queries whose SQL never changes.
   */
  read<Row>(query: CompiledQuery<Row>, statementName?: string): Promise<Row[]>
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

export function openDatabase(options: DatabaseOptions): Db {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      types: {
        getTypeParser: (oid, format) => {
          // int8 (count, bigint columns) and numeric (sum) arrive as strings by default.
          if (oid === 20 || oid === 1700) return int8AsNumber
          return pg.types.getTypeParser(oid, format)
        },
      },
    })
    // An idle connection the server drops (restart, failover, a dropped database) makes the pool emit
    // 'error'; with no listener that would crash the process. The pool has already discarded the client,
    // and the next query opens a fresh one.
    pool.on('error', () => {})
    const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
    return {
      kysely,
      engine: 'postgres',
      read: async <Row>(query: CompiledQuery<Row>, statementName?: string) => {
        if (!statementName) return (await kysely.executeQuery(query)).rows
        const result = await pool.query({
          name: statementName,
          text: query.sql,
          values: [...query.parameters],
        })
        return result.rows as Row[]
      },
      close: () => kysely.destroy(),
    }
  }

  mkdirSync(options.dataDir, { recursive: true })
  const filename = path.join(options.dataDir, 'coffer.sqlite')
  const kysely = new Kysely<Database>({
    dialect: new SqliteDialect({
      database: async () => {
        const db = new NodeSqliteDatabase(filename)
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
  let reader: NodeSqliteDatabase | undefined
  return {
    kysely,
    engine: 'sqlite',
    read: async <Row>(query: CompiledQuery<Row>) => {
      if (!reader) {
        reader = new NodeSqliteDatabase(filename)
        reader.exec('pragma query_only = on')
        reader.exec('pragma busy_timeout = 5000')
      }
      return reader.prepare(query.sql).all(query.parameters) as Row[]
    },
    close: async () => {
      reader?.close()
      await kysely.destroy()
    },
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
