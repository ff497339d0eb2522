// The tables of shares, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).
import type { Generated } from 'kysely'

declare module '../../platform/db/schema.ts' {
  interface Database {
    shares: SharesTable
    share_daily_counts: ShareDailyCountsTable
    past_share_counts: PastShareCountsTable
    download_passes: DownloadPassesTable
  }
}

/** A share link, of a file or of a folder (migration 0033): exactly one of `file_id` and `folder_id` is set. */
export interface SharesTable {
  id: string
  account_id: string
  file_id: string | null
  folder_id: string | null
  public_id: string
  is_active: boolean
  expires_at: number | null
  view_count: Generated<number>
  download_count: Generated<number>
  /** scrypt hash of the link's password (auth/secrets.ts); null for a link without one. */
  password_hash: string | null
  /** Downloads allowed in all; null for no limit. */
  max_downloads: number | null
  created_at: number
  updated_at: number
}

/** A share's views and downloads on one UTC day. */
export interface ShareDailyCountsTable {
  share_id: string
  /** The share's account, copied when the day's row is made: the account's days are read by it. */
  account_id: string
  /** Days since 1970-01-01 (UTC). */
  day: number
  views: Generated<number>
  downloads: Generated<number>
}

/** What the links of deleted files counted, per account and day (migration 0029). */
export interface PastShareCountsTable {
  account_id: string
  /** Days since 1970-01-01 (UTC). */
  day: number
  views: Generated<number>
  downloads: Generated<number>
}

/** The bytes a download pass of a limited share link may still fetch (migration 0015). */
export interface DownloadPassesTable {
  /** SHA-256 (hex) of the pass, which the browser holds in a cookie. */
  pass_hash: string
  share_id: string
  bytes_left: number
  expires_at: number
}
