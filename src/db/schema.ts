// Row types of every table, as Kysely sees them. Timestamps are epoch milliseconds on both engines, so
// ordering, keyset cursors and comparisons are plain integer arithmetic everywhere.
import type { Generated } from 'kysely'

export interface AccountsTable {
  id: string
  email: string
  password_hash: string | null
  created_at: number
}

export interface ApiKeysTable {
  id: string
  account_id: string
  name: string
  /** SHA-256 (hex) of the whole secret; the secret itself is never stored. */
  secret_hash: string
  /** The first characters of the secret, so a user can tell keys apart. */
  prefix: string
  /** Space-separated scope names. */
  scopes: string
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
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

export interface FilesTable {
  id: string
  account_id: string
  folder_id: string | null
  name: string
  content_type: string
  size: number
  blob_key: string
  sha256: string | null
  created_at: number
  updated_at: number
}

export interface SharesTable {
  id: string
  account_id: string
  file_id: string
  public_id: string
  is_active: boolean
  expires_at: number | null
  view_count: Generated<number>
  download_count: Generated<number>
  created_at: number
  updated_at: number
}

export interface FileRequestsTable {
  id: string
  account_id: string
  folder_id: string | null
  public_id: string
  title: string
  description: string | null
  collect_email: boolean
  email_required: boolean
  is_active: boolean
  submission_count: Generated<number>
  created_at: number
  updated_at: number
}

export interface SubmissionsTable {
  id: string
  request_id: string
  /** Snapshot of the submitted file: it outlives the file itself. */
  file_id: string
  file_name: string
  file_content_type: string
  file_size: number
  submitter_name: string | null
  submitter_email: string | null
  message: string | null
  created_at: number
}

export interface Database {
  accounts: AccountsTable
  api_keys: ApiKeysTable
  folders: FoldersTable
  files: FilesTable
  shares: SharesTable
  file_requests: FileRequestsTable
  submissions: SubmissionsTable
}
