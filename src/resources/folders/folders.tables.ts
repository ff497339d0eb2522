// The tables of folders, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).
import type { Generated } from 'kysely'

declare module '../../platform/db/schema.ts' {
  interface Database {
    folders: FoldersTable
  }
}

export interface FoldersTable {
  id: string
  account_id: string
  name: string
  /** Lower-cased name: folder names are unique per account regardless of case. */
  name_key: string
  file_count: Generated<number>
  request_count: Generated<number>
  created_at: number
}
