// Adapts node:sqlite's DatabaseSync to the small better-sqlite3-like interface Kysely's SqliteDialect
// drives, so the embedded mode needs no native addon.
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite'
import type { SqliteDatabase, SqliteStatement } from 'kysely'
import { rowFactory } from './row-factory.ts'

const STATEMENT_CACHE_SIZE = 200

/** node:sqlite binds neither booleans nor Dates; store them as 0/1 and epoch milliseconds. */
function toSqlite(value: unknown): SQLInputValue {
  if (typeof value === 'boolean') return value ? 1 : 0
  if (value instanceof Date) return value.getTime()
  return value as SQLInputValue
}

class Statement implements SqliteStatement {
  readonly reader: boolean
  readonly #statement: StatementSync
  readonly #row: ((values: unknown[]) => unknown) | undefined
  readonly #executed: () => void

  constructor(statement: StatementSync, executed: () => void) {
    this.#statement = statement
    this.#executed = executed
    const columns = statement.columns()
    this.reader = columns.length > 0
    if (this.reader) {
      statement.setReturnArrays(true)
      this.#row = rowFactory(columns.map((column) => column.name))
    }
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    const rows = this.#statement.all(...parameters.map(toSqlite)) as unknown as unknown[][]
    this.#executed()
    const row = this.#row
    return row ? rows.map(row) : rows
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    const result = this.#statement.run(...parameters.map(toSqlite))
    this.#executed()
    return result
  }

  /** Only Kysely's streaming reads use this; a write through it is not reported to `executed`. */
  *iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    const row = this.#row
    for (const values of this.#statement.iterate(...parameters.map(toSqlite))) {
      yield row ? row(values as unknown as unknown[]) : values
    }
  }
}

export class NodeSqliteDatabase implements SqliteDatabase {
  readonly #db: DatabaseSync
  // Preparing is a large part of a small query's cost; most statements repeat with other parameters.
  readonly #statements = new Map<string, Statement>()
  readonly #executed: () => void

  /** `executed` is called after every statement run through `prepare`, once its effects are committed or not. */
  constructor(filename: string, options: { executed?: () => void } = {}) {
    this.#db = new DatabaseSync(filename)
    this.#executed = options.executed ?? (() => {})
  }

  exec(sql: string): void {
    this.#db.exec(sql)
  }

  prepare(query: string): Statement {
    // Kysely opens transactions with a plain (deferred) BEGIN. Under WAL, a deferred transaction that reads
    // and then writes fails at once with SQLITE_BUSY when another process (the CLI, a second server)
    // wrote in between; an immediate one takes the write lock up front and waits out busy_timeout instead.
    const sql = query === 'begin' ? 'begin immediate' : query
    let statement = this.#statements.get(sql)
    if (statement) {
      // Re-insert to keep the map in least-recently-used order.
      this.#statements.delete(sql)
    } else {
      statement = new Statement(this.#db.prepare(sql), this.#executed)
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) {
        const oldest = this.#statements.keys().next().value
        if (oldest !== undefined) this.#statements.delete(oldest)
      }
    }
    this.#statements.set(sql, statement)
    return statement
  }

  close(): void {
    this.#statements.clear()
    this.#db.close()
  }
}
