// Opens the metadata database for either engine and brings its schema up to date.
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import {
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
import { NodeSqliteDatabase } from './node-sqlite.ts'
import type { Database } from './schema.ts'

export type Engine = 'sqlite' | 'postgres'

export interface Db {
  kysely: Kysely<Database>
  engine: Engine
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
    const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
    return { kysely, engine: 'postgres', close: () => kysely.destroy() }
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
  return { kysely, engine: 'sqlite', close: () => kysely.destroy() }
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
