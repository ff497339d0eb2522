// What the coffer command prints, and how it ends. People read stdout for results and stderr for errors and
// progress; with --json, stdout carries exactly one JSON value (the result, or the error envelope) and
// nothing else. Exit codes: 0 done, 1 failed, 2 usage, 3 authentication, 130 cancelled (Ctrl-C).
// The SDK's error alone: loading the whole SDK would slow down `--help`.
import { CofferError } from '../sdk/errors.ts'

export const EXIT = { ok: 0, failed: 1, usage: 2, auth: 3, cancelled: 130 } as const

/** A mistake in how the command was called: exit code 2. */
export class UsageError extends Error {
  readonly hint: string
  constructor(message: string, hint = 'Add --help to the command to see its options and examples.') {
    super(message)
    this.hint = hint
  }
}

/** No credentials for the server: exit code 3. */
export class NotSignedIn extends Error {
  readonly hint = 'Run `coffer login <URL>`, or set COFFER_URL and COFFER_TOKEN.'
  constructor() {
    super('Not signed in to a Coffer server.')
  }
}

export interface Output {
  json: boolean
  /** A result for people (lines on stdout); skipped with --json. */
  line(text: string): void
  /** A result for scripts: printed with --json only. */
  result(value: unknown): void
  /** Something people should know that is not a result (stderr). */
  note(text: string): void
}

export function output(json: boolean, stdout = process.stdout, stderr = process.stderr): Output {
  return {
    json,
    line: (text) => {
      if (!json) stdout.write(`${text}\n`)
    },
    result: (value) => {
      if (json) stdout.write(`${JSON.stringify(value, null, 2)}\n`)
    },
    note: (text) => {
      stderr.write(`${text}\n`)
    },
  }
}

/** Reports `error` as the output asks, and returns the exit code it means. */
export function fail(out: Output, error: unknown): number {
  const { code, message, hint, exit } = describe(error)
  if (out.json) {
    process.stdout.write(`${JSON.stringify({ error: { code, message, hint } }, null, 2)}\n`)
  } else {
    process.stderr.write(`Error: ${message}\n${hint ? `Hint: ${hint}\n` : ''}`)
  }
  return exit
}

/** The codes of a sign-in that ended without a credential (login.ts, the SDK's refresh), each with its own hint. */
const SIGN_IN_ENDS = new Set(['refresh_failed', 'access_denied', 'expired_token'])

function describe(error: unknown): { code: string; message: string; hint: string; exit: number } {
  if (error instanceof UsageError) {
    return { code: 'usage', message: error.message, hint: error.hint, exit: EXIT.usage }
  }
  if (error instanceof NotSignedIn) {
    return { code: 'not_signed_in', message: error.message, hint: error.hint, exit: EXIT.auth }
  }
  if (error instanceof CofferError) {
    const auth =
      error.status === 401 || error.code === 'insufficient_scope' || error.code === 'refresh_failed'
    const exit = error.code === 'aborted' ? EXIT.cancelled : auth ? EXIT.auth : EXIT.failed
    // A credential the server refused: the server's hint speaks of HTTP headers, this one of the command. The
    // ends of a sign-in (refused, denied in the browser, expired) carry their own.
    const hint =
      error.status === 401 && !SIGN_IN_ENDS.has(error.code)
        ? 'Sign in again: `coffer login <URL>` (or check COFFER_TOKEN).'
        : error.hint
    return { code: error.code, message: error.message, hint, exit }
  }
  const message = error instanceof Error ? error.message : String(error)
  return { code: 'failed', message, hint: '', exit: EXIT.failed }
}

/**
 * Prints a list: with --json the items as they are, else a table of `columns` (a title and the cell of an
 * item each), or `empty` when there are none.
 */
export function printList<Item>(
  out: Output,
  items: Item[],
  empty: string,
  columns: [title: string, cell: (item: Item) => string][],
): void {
  out.result(items)
  const rows = items.map((item) => columns.map(([, cell]) => cell(item)))
  out.line(
    items.length === 0
      ? empty
      : table(
          columns.map(([title]) => title),
          rows,
        ),
  )
}

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)))
  const format = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd()
  return [format(header), ...rows.map(format)].join('\n')
}
