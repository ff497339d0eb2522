// Hot queries compiled once. Building and compiling a Kysely query costs several times more than running it
// on SQLite, so the queries every request makes (credential lookup, file by id, list pages, searches) are
// built once with placeholder values and afterwards only get their parameters bound. On PostgreSQL each is
// also prepared once per connection, under its name (Db.read).
import type { Compilable, CompiledQuery, SelectQueryBuilder } from 'kysely'
import type { Db } from '../database.ts'
import { decodeCursor, fetchSizeFor, keysetAfter } from '../pagination.ts'

const PLACEHOLDER = '\u0000prepared-parameter-'

/**
 * Runs through `db.read`, so only for reads outside transactions. `name` identifies the statement on
 * PostgreSQL connections, so it must be unique per query.
 * `build` receives one placeholder per parameter and must use each as a bound value, as it is (never inside raw
 * SQL, nor in arithmetic): the placeholders are strings, whatever type the parameter has at run time.
 * Returns a function that runs the compiled query with the given values and returns its rows.
 */
export function prepare<Args extends unknown[], Row>(
  db: Db,
  name: string,
  arity: Args['length'],
  build: (...placeholders: Args) => Compilable<Row>,
): (...args: Args) => Promise<Row[]> {
  const bind = compileOnce(arity, build)
  return async (...args) => db.read<Row>(bind(...args), name)
}

/** `prepare` without running: the compiled query with the given values bound, for use in a transaction. */
export function compileOnce<Args extends unknown[], Row>(
  arity: Args['length'],
  build: (...placeholders: Args) => Compilable<Row>,
): (...args: Args) => CompiledQuery<Row> {
  let compiled: CompiledQuery<Row> | undefined
  let slots: number[] = []
  return (...args) => {
    if (!compiled) {
      const placeholders = Array.from({ length: arity }, (_, i) => `${PLACEHOLDER}${i}`) as Args
      compiled = build(...placeholders).compile()
      slots = compiled.parameters.map((p) =>
        typeof p === 'string' && p.startsWith(PLACEHOLDER) ? Number(p.slice(PLACEHOLDER.length)) : -1,
      )
      if (slots.filter((s) => s >= 0).length < arity)
        throw new Error('prepare: a placeholder was not used as a value')
    }
    const parameters = compiled.parameters.map((value, i) => {
      const slot = slots[i] ?? -1
      return slot >= 0 ? args[slot] : value
    })
    return { ...compiled, parameters }
  }
}

/**
 * A list page statement, `build`'s query paged by `keysetAfter` on `table`, prepared as `prepare` does once per
 * shape: with or without a cursor, and for each row count `fetchSizeFor` gives. `build` receives one
 * placeholder per argument, under `prepare`'s rules. Returns a function that reads the rows of one page (and
 * at least one more when another page follows; see `toPage`), after the cursor if one is given (a malformed
 * one is a 400).
 */
export function preparePages<Args extends unknown[], DB, TB extends keyof DB, Row>(
  db: Db,
  name: string,
  table: string,
  arity: Args['length'],
  build: (...placeholders: Args) => SelectQueryBuilder<DB, TB, Row>,
): (args: Args, cursor: string | undefined, limit: number) => Promise<Row[]> {
  const statements = new PreparedShapes(db)
  return (args, cursor, limit) => {
    const after = cursor === undefined ? undefined : decodeCursor(cursor)
    const fetch = fetchSizeFor(limit)
    const values = after ? [...args, after.createdAt, after.id] : args
    return statements.read<Row>(`${name}${after ? '_after' : ''}_${fetch}`, values, (...placeholders) => {
      const [createdAt, id] = placeholders.slice(arity) as [number, string]
      const position = after ? { createdAt, id } : undefined
      return keysetAfter(build(...(placeholders.slice(0, arity) as Args)), table, position, fetch)
    })
  }
}

/**
 * Statements whose SQL depends on a shape (which conditions apply, which constants it holds), each compiled
 * once per shape by `prepare`'s rules and run with the values bound. The shape's name must tell apart every
 * SQL text `build` can make, since PostgreSQL keeps each under that name.
 */
export class PreparedShapes {
  readonly #db: Db
  readonly #compiled = new Map<string, (...args: unknown[]) => CompiledQuery<unknown>>()

  constructor(db: Db) {
    this.#db = db
  }

  /** `values` in the order `build` receives their placeholders. */
  read<Row>(shape: string, values: unknown[], build: (...placeholders: unknown[]) => Compilable<Row>) {
    return this.#db.read<Row>(this.#bind(shape, values, build), shape)
  }

  #bind<Row>(shape: string, values: unknown[], build: (...placeholders: unknown[]) => Compilable<Row>) {
    let bind = this.#compiled.get(shape)
    if (!bind) {
      bind = compileOnce(values.length, build) as (...args: unknown[]) => CompiledQuery<unknown>
      this.#compiled.set(shape, bind)
    }
    return bind(...values) as CompiledQuery<Row>
  }
}
