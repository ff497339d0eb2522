// Rows as objects, built from the arrays of column values both database drivers can return. Drivers that make
// the objects themselves define their properties one by one from the column names (node:sqlite goes through
// a slow path of V8 for it); an object literal compiled once per statement's columns is several times faster.

export type RowFactory = (values: unknown[]) => unknown

/** Later columns of the same name win, as they would in a driver-made object. */
export function rowFactory(columns: string[]): RowFactory {
  const fields = columns.map((name, i) => `${JSON.stringify(name)}: v[${i}]`)
  return new Function('v', `return { ${fields.join(', ')} }`) as RowFactory
}
