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
