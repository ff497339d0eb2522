// The tables of maintenance, as Kysely sees them (platform/db/schema.ts: timestamps are epoch milliseconds).

declare module '../../platform/db/schema.ts' {
  interface Database {
    blob_deletions: BlobDeletionsTable
    backup_holds: BackupHoldsTable
  }
}

/** A blob whose row is gone, to be removed from the BlobStore (storage/blob-deletions.job.ts). */
export interface BlobDeletionsTable {
  key: string
  recorded_at: number
}

/** A backup in progress, which holds back blob removals until `until` (storage/backups.ts). */
export interface BackupHoldsTable {
  id: string
  until: number
}
