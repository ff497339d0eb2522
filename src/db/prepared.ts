// Hot queries compiled once. Building and compiling a Kysely query costs several times more than running it
// on SQLite, so the queries every request makes (credential lookup, file by id) are built once with
// placeholder values and afterwards only get their parameters bound.
import type { Compilable, CompiledQuery } from 'kysely'
import type { Db } from './database.ts'

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
