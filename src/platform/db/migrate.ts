// Brings the schema up to date. Every migration is written once for both engines (Kysely's schema builder),
// with a branch on the engine only where they differ (indexes, triggers). Concurrent starts are safe: the
// migrator takes a lock.
import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely'
import type { Db } from './database.ts'
import type { Engine } from './engine.ts'
import * as initial from './migrations/0001_initial.ts'
import * as uploads from './migrations/0002_uploads.ts'
import * as multipartUploads from './migrations/0003_multipart_uploads.ts'
import * as credentialNotifications from './migrations/0004_credential_notifications.ts'
import * as searchIndex from './migrations/0005_search_index_without_pending_list.ts'
import * as coveringOrderIndexes from './migrations/0006_covering_order_indexes.ts'
import * as metadataNotifications from './migrations/0007_metadata_notifications.ts'
import * as shareLinks from './migrations/0008_share_links.ts'
import * as requestUploads from './migrations/0009_request_uploads.ts'
import * as blobDeletions from './migrations/0010_blob_deletions.ts'
import * as backupHolds from './migrations/0011_backup_holds.ts'
import * as accountsOnTheWeb from './migrations/0012_accounts_on_the_web.ts'
import * as fileCrc32 from './migrations/0013_file_crc32.ts'
import * as accountDailyCounts from './migrations/0014_account_daily_counts.ts'
import * as downloadPasses from './migrations/0015_download_passes.ts'
import * as signInFailures from './migrations/0016_sign_in_failures.ts'
import * as uploadIntentsClient from './migrations/0017_upload_intents_client.ts'
import * as fileDigestsPending from './migrations/0018_file_digests_pending.ts'
import * as nameIndex from './migrations/0019_name_index.ts'
import * as orderIndexesWithoutNames from './migrations/0020_order_indexes_without_names.ts'
import * as nameIndexBlocksOf65536 from './migrations/0021_name_index_blocks_of_65536.ts'
import * as webhooks from './migrations/0022_webhooks.ts'
import * as requestDeadlineEvents from './migrations/0023_request_deadline_events.ts'
import * as mail from './migrations/0024_mail.ts'
import * as tokenNotifications from './migrations/0025_token_notifications.ts'
import * as nameIndexRunsOfFour from './migrations/0026_name_index_runs_of_four.ts'
import * as uploadCompletionRecovery from './migrations/0027_upload_completion_recovery.ts'
import * as uploadCrc32 from './migrations/0028_upload_crc32.ts'
import * as pastShareCounts from './migrations/0029_past_share_counts.ts'
import * as submissionSendings from './migrations/0030_submission_sendings.ts'
import * as fileOrderIndexes from './migrations/0031_file_order_indexes.ts'
import * as trash from './migrations/0032_trash.ts'
import * as folderShares from './migrations/0033_folder_shares.ts'

const MIGRATIONS: Record<string, { up(db: Kysely<unknown>, engine: Engine): Promise<void> }> = {
  '0001_initial': initial,
  '0002_uploads': uploads,
  '0003_multipart_uploads': multipartUploads,
  '0004_credential_notifications': credentialNotifications,
  '0005_search_index_without_pending_list': searchIndex,
  '0006_covering_order_indexes': coveringOrderIndexes,
  '0007_metadata_notifications': metadataNotifications,
  '0008_share_links': shareLinks,
  '0009_request_uploads': requestUploads,
  '0010_blob_deletions': blobDeletions,
  '0011_backup_holds': backupHolds,
  '0012_accounts_on_the_web': accountsOnTheWeb,
  '0013_file_crc32': fileCrc32,
  '0014_account_daily_counts': accountDailyCounts,
  '0015_download_passes': downloadPasses,
  '0016_sign_in_failures': signInFailures,
  '0017_upload_intents_client': uploadIntentsClient,
  '0018_file_digests_pending': fileDigestsPending,
  '0019_name_index': nameIndex,
  '0020_order_indexes_without_names': orderIndexesWithoutNames,
  '0021_name_index_blocks_of_65536': nameIndexBlocksOf65536,
  '0022_webhooks': webhooks,
  '0023_request_deadline_events': requestDeadlineEvents,
  '0024_mail': mail,
  '0025_token_notifications': tokenNotifications,
  '0026_name_index_runs_of_four': nameIndexRunsOfFour,
  '0027_upload_completion_recovery': uploadCompletionRecovery,
  '0028_upload_crc32': uploadCrc32,
  '0029_past_share_counts': pastShareCounts,
  '0030_submission_sendings': submissionSendings,
  '0031_file_order_indexes': fileOrderIndexes,
  '0032_trash': trash,
  '0033_folder_shares': folderShares,
}

class Migrations implements MigrationProvider {
  readonly #engine: Engine
  constructor(engine: Engine) {
    this.#engine = engine
  }
  async getMigrations(): Promise<Record<string, Migration>> {
    return Object.fromEntries(
      Object.entries(MIGRATIONS).map(([name, m]) => [
        name,
        { up: (db: Kysely<unknown>) => m.up(db, this.#engine) },
      ]),
    )
  }
}

/**
 * How long a start waits for another process's migrations on SQLite, which hold the database's write lock (a
 * statement waits busy_timeout, 5 s, then fails as busy): a long one (a rebuilt index) may take minutes.
 * PostgreSQL's migrator waits for its lock itself; a database that cannot be reached fails the start at once.
 */
const MIGRATION_PATIENCE_MS = 10 * 60_000

/** SQLITE_BUSY (5) or SQLITE_LOCKED (6): another connection holds the database. */
const isBusy = (error: unknown) => {
  const errcode = (error as { errcode?: unknown } | undefined)?.errcode
  return typeof errcode === 'number' && [5, 6].includes(errcode & 0xff)
}

/** Brings the schema up to date, or up to the migration named `target` (tests of a migration's data). */
export async function migrate(db: Db, target?: string): Promise<void> {
  const migrator = new Migrator({ db: db.kysely, provider: new Migrations(db.engine) })
  const deadline = Date.now() + MIGRATION_PATIENCE_MS
  for (let wait = 100; ; wait = Math.min(wait * 2, 5000)) {
    const { error, results } = await (target === undefined
      ? migrator.migrateToLatest()
      : migrator.migrateTo(target))
    const failed = results?.find((r) => r.status === 'Error')
    if (!error && !failed) return
    if (isBusy(error) && Date.now() + wait < deadline) {
      await new Promise((resolve) => setTimeout(resolve, wait))
      continue
    }
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${String(error)}`, {
      cause: error,
    })
  }
}
