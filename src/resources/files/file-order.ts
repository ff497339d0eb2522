// The orders a list of files comes in: newest first (the API's default, DESIGN.md), or by date, name or size
// either way. Each is a key with the file's id as the tie-break, walked with a keyset from a cursor, forward
// (the next page) or back (the previous one), along an index of its own (migrations 0006, 0020 and 0031; the
// SQL is files.repository.ts's).
//
// Names are ordered ignoring the case of ASCII letters, then byte by byte: the same order on both engines
// (SQLite's lower() folds only ASCII; PostgreSQL's lower() under the "C" collation does the same, whatever the
// database's locale), so that "apple" comes before "Banana" and a page never depends on where it was read.
import { invalid } from '../../platform/errors.ts'
import type { FileOrder } from './file-orders.shared.ts'

export { DEFAULT_FILE_ORDER, FILE_ORDERS, type FileOrder } from './file-orders.shared.ts'

/** What each order sorts by, and which way (the repository's SQL, files.repository.ts, walks it). */
export const ORDERS: Record<FileOrder, { key: 'created_at' | 'name' | 'size'; direction: 'asc' | 'desc' }> = {
  newest: { key: 'created_at', direction: 'desc' },
  oldest: { key: 'created_at', direction: 'asc' },
  name: { key: 'name', direction: 'asc' },
  'name-desc': { key: 'name', direction: 'desc' },
  largest: { key: 'size', direction: 'desc' },
  smallest: { key: 'size', direction: 'asc' },
}

/**
 * A position in a list in some order: the file the page starts after (`after`, the next page's cursor) or
 * before (`before`, the previous page's). The file's own key values are read by its id, which keeps cursors
 * short whatever the name's length.
 */
export interface FilePosition {
  order: FileOrder
  fileId: string
}

const POSITION = /^([a-z-]{3,12})\.([A-Za-z0-9_]{1,100})$/

export function encodePosition(position: FilePosition): string {
  return Buffer.from(`${position.order}.${position.fileId}`).toString('base64url')
}

/** The position a cursor names; a cursor of another order, or none, is a 400. */
export function decodePosition(raw: string, order: FileOrder): FilePosition {
  const match = POSITION.exec(Buffer.from(raw, 'base64url').toString('utf8'))
  if (match?.[1] !== order || !match[2]) {
    throw invalid(
      'The query parameter "cursor" is malformed, or of a list in another order.',
      'Pass `pagination.nextCursor` from the previous page unchanged, with the same `sort`.',
    )
  }
  return { order, fileId: match[2] }
}
