// Recognises constraint violations on both engines, so services can answer 409 instead of failing.
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown }
  // PostgreSQL: SQLSTATE 23505. SQLite: SQLITE_CONSTRAINT_UNIQUE (2067) or the primary-key variant (1555).
  return e.code === '23505' || e.errcode === 2067 || e.errcode === 1555
}

export function isForeignKeyViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const e = error as { code?: unknown; errcode?: unknown }
  // PostgreSQL: SQLSTATE 23503. SQLite: SQLITE_CONSTRAINT_FOREIGNKEY (787).
  return e.code === '23503' || e.errcode === 787
}

/**
 * SQLSTATEs of failures that say nothing of the statement, only that the database could not run it now: class
 * 08 (the connection failed), the server shutting down or starting (57P01, 57P02, 57P03), too many connections
 * (53300), a transaction that lost a race and may simply run again (40001 serialization failure, 40P01
 * deadlock).
 */
const TRANSIENT_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '40001', '40P01'])
/** Socket errors of a connection that failed or broke (Node's codes). */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
])
/** node-postgres's own words for a connection that broke, or could not be had in time; they carry no code. */
const PG_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'is not queryable',
  'Query read timeout',
]
/** SQLite: SQLITE_BUSY (5) and SQLITE_LOCKED (6), another connection holding the database for too long. */
const SQLITE_TRANSIENT = new Set([5, 6])

/**
 * Whether the database failed for a reason of its own that may pass (it is down, restarting, unreachable,
 * overloaded, or a transaction lost a race), rather than because of the statement or the data: such a
 * failure is answered 503 and retried, and never taken as a verdict on what was asked.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const { code, errcode, message } = e as { code?: unknown; errcode?: unknown; message?: unknown }
    if (typeof code === 'string' && (code.startsWith('08') || TRANSIENT_SQLSTATES.has(code))) return true
    if (typeof code === 'string' && SOCKET_CODES.has(code)) return true
    if (typeof errcode === 'number' && SQLITE_TRANSIENT.has(errcode & 0xff)) return true
    if (typeof message === 'string' && PG_CONNECTION_MESSAGES.some((words) => message.includes(words))) {
      return true
    }
    e = (e as { cause?: unknown }).cause
  }
  return false
}
