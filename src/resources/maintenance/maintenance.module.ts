// What keeps the blob store and the database in step: the deletions of blobs that records left behind (a crash,
// a failing disk), the storage check that compares the two and repairs what is safe to, and backups (the admin
// command's). No routes: jobs, and the admin command's services.
import type { Module } from '../../module.ts'
import type { BlobStore } from '../../platform/blob/blob-store.ts'
import type { Config } from '../../platform/config.ts'
import type { Db, Exclusively } from '../../platform/db/database.ts'
import { BackupsRepository } from './backups.repository.ts'
import { BackupsService } from './backups.service.ts'
import { BlobDeletionsService } from './blob-deletions.job.ts'
import { BlobDeletionsRepository } from './blob-deletions.repository.ts'
import { StorageReconciler } from './reconciler.job.ts'
import { StorageRepository } from './storage.repository.ts'

declare module '../../module.ts' {
  interface Jobs {
    /** Removes the blobs that deletions recorded and left (a crash, a failing disk). */
    blobDeletions: BlobDeletionsService
    /** Compares the blob store with the database, and repairs what is safe to (reconciler.job.ts). */
    storageReconciler: StorageReconciler
  }
}

export const maintenanceModule: Module = {
  wire: ({ config, db, blobs, exclusively }) => ({
    jobs: {
      storageReconciler: wireStorage(db, blobs, config, exclusively).storage,
      blobDeletions: new BlobDeletionsService({
        deletions: new BlobDeletionsRepository(db),
        blobs,
        exclusively,
      }),
    },
  }),
}

/**
 * The storage reconciler, which compares the BlobStore with the database (a job of the server and a command
 * of the admin command; a blob without a row may belong to an upload for as long as a grant lasts), and
 * backups (the admin command's).
 */
export function wireStorage(
  db: Db,
  blobs: BlobStore,
  config: Pick<Config, 'uploadGrantTtlSeconds' | 'storageCheckIntervalMs' | 'databaseUrl'>,
  exclusively: Exclusively = db.exclusively,
): { storage: StorageReconciler; backups: BackupsService } {
  return {
    storage: new StorageReconciler({
      blobs,
      storage: new StorageRepository(db),
      graceMs: Math.max(HOUR_MS, config.uploadGrantTtlSeconds * 1000),
      intervalMs: config.storageCheckIntervalMs,
      exclusively,
    }),
    backups: new BackupsService({
      engine: db.engine,
      databaseUrl: config.databaseUrl,
      backups: new BackupsRepository(db),
      blobs,
    }),
  }
}

const HOUR_MS = 60 * 60 * 1000
