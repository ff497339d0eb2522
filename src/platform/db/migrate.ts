// Brings the schema up to date. Every migration is written once for both engines (Kysely's schema builder),
// with a branch on the engine only where they differ (indexes, triggers). Concurrent starts are safe: the
// migrator takes a lock.
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely'
import type { Db } from './database.ts'
import type { Engine } from './engine.ts'

/** The migrations: every file of migrations/, applied in the order of their names (a number first). */
const MIGRATIONS_DIR = path.join(import.meta.dirname, 'migrations')

interface MigrationModule {
  up(db: Kysely<unknown>, engine: Engine): Promise<void>
}

class Migrations implements MigrationProvider {
  readonly #engine: Engine
  constructor(engine: Engine) {
    this.#engine = engine
  }
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(MIGRATIONS_DIR)).filter((file) => /^\d{4}_\w+\.ts$/.test(file)).sort()
    const migrations = await Promise.all(
      files.map(async (file): Promise<[string, Migration]> => {
        const migration = (await import(
          pathToFileURL(path.join(MIGRATIONS_DIR, file)).href
        )) as MigrationModule
        return [file.slice(0, -'.ts'.length), { up: (db) => migration.up(db, this.#engine) }]
      }),
    )
    return Object.fromEntries(migrations)
  }
}

/**
 * How long a start waits for another process's migrations on SQLite, which hold the database's write lock (a
 * statement waits busy_timeout, 5 s, then fails as busy): a long one (a rebuilt index) may take minutes.
 * PostgreSQL's migrator waits for its lock itself; a database that cannot be reached fails the start at once.
 */
const MIGRATION_PATIENCE_MS = 10 * 60_000

/** SQLITE_BUSY (5) or SQLITE_LOCKED (6): another connection holds the database. */
const isBusy = (error: unknown) => {
  const errcode = (error as { errcode?: unknown } | undefined)?.errcode
  return typeof errcode === 'number' && [5, 6].includes(errcode & 0xff)
}

/** Brings the schema up to date, or up to the migration named `target` (tests of a migration's data). */
export async function migrate(db: Db, target?: string): Promise<void> {
  const migrator = new Migrator({ db: db.kysely, provider: new Migrations(db.engine) })
  const deadline = Date.now() + MIGRATION_PATIENCE_MS
  for (let wait = 100; ; wait = Math.min(wait * 2, 5000)) {
    const { error, results } = await (target === undefined
      ? migrator.migrateToLatest()
      : migrator.migrateTo(target))
    const failed = results?.find((r) => r.status === 'Error')
    if (!error && !failed) return
    if (isBusy(error) && Date.now() + wait < deadline) {
      await new Promise((resolve) => setTimeout(resolve, wait))
      continue
    }
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${String(error)}`, {
      cause: error,
    })
  }
}
