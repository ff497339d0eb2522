// Opens the metadata database on the engine the configuration names: PostgreSQL when DATABASE_URL is set,
// SQLite in DATA_DIR otherwise.
import type { DatabaseOptions, Db } from './database.ts'
import { openPostgres } from './postgres.ts'
import { openSqlite } from './sqlite.ts'

export function openDatabase(options: DatabaseOptions): Db {
  if (options.databaseUrl) {
    return openPostgres(options.databaseUrl, { poolSize: options.poolSize ?? 10 })
  }
  return openSqlite(options.dataDir)
}
