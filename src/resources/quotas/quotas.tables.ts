// The tables of quotas, as Kysely sees them (migration 0035; platform/db/schema.ts: timestamps are epoch ms).

declare module '../../platform/db/schema.ts' {
  interface Database {
    account_usage: AccountUsageTable
    account_quotas: AccountQuotasTable
  }
}

/**
 * What an account stores, kept by triggers on `files` in the transaction of every change: its files and bytes
 * (the trash included), and the part of them in the trash. No row: nothing stored yet.
 */
export interface AccountUsageTable {
  account_id: string
  files: number
  bytes: number
  trash_files: number
  trash_bytes: number
}

/** What an admin set for an account. No row, or neither `quota_bytes` nor `unlimited`: DEFAULT_QUOTA_BYTES. */
export interface AccountQuotasTable {
  account_id: string
  /** The account's own quota in bytes; null: none of its own. */
  quota_bytes: number | null
  /** Unlimited, whatever DEFAULT_QUOTA_BYTES says. */
  unlimited: boolean
  /** The largest file it may upload, in bytes; null: none but the server's (MAX_FILE_SIZE). */
  max_file_bytes: number | null
  updated_at: number
}
