// What files bring to the application: their API and the trash's, the owner's files and trash pages, zips of
// several files, and the jobs that keep files whole and findable (their digests, the name index).
import type { Module } from '../../module.ts'
import { FileDigestsService } from './file-digests.job.ts'
import { FilesRepository, type StoredFile } from './files.repository.ts'
import { filesRoutes } from './files.routes.ts'
import {
  FileSchema,
  FileShareSummarySchema,
  FileSummarySchema,
  serializeFile,
  serializeTrashedFile,
  TrashedFileSchema,
} from './files.schemas.ts'
import { type FileEvents, FilesService } from './files.service.ts'
import { filesAppRoutes } from './files-app.routes.ts'
import { NameIndexJob } from './search/name-index.job.ts'
import { trashRoutes } from './trash.routes.ts'
import { type TrashEvents, TrashService } from './trash.service.ts'
import { trashAppRoutes } from './trash-app.routes.ts'
import { zipRoutes } from './zip/zip.routes.ts'
import { FilesZipService } from './zip/zip.service.ts'

declare module '../../module.ts' {
  interface Repositories {
    files: FilesRepository
  }
  interface Services {
    files: FilesService
    /** Deleted files, until they go for good. */
    trash: TrashService
    /** Several files, or a folder, as one zip. */
    zips: FilesZipService
  }
  interface Jobs {
    /** Computes the SHA-256 and CRC-32 of files whose upload came without them (an S3 multipart upload). */
    fileDigests: FileDigestsService
    /**
     * Adds full chunks of files to the name index, and writes again the blocks that deletions and renames left
     * many stale slots in (search/name-index.repository.ts).
     */
    nameIndex: NameIndexJob
  }
  interface EventPayloads extends FileEvents, TrashEvents {}
}

export const filesModule: Module = {
  schemas: [FileSummarySchema, FileShareSummarySchema, FileSchema, TrashedFileSchema],
  apiRoutes: [filesRoutes, trashRoutes],
  pageRoutes: [filesAppRoutes, trashAppRoutes, zipRoutes],
  repositories: (db, config) => ({ files: new FilesRepository(db, { cacheSize: config.fileCacheSize }) }),
  wire: ({ config, db, blobs, exclusively, events, audit }, { repositories: r, jobs }) => {
    const { transaction } = db
    const trash = new TrashService({
      transaction,
      files: r.files,
      folders: r.folders,
      deletions: jobs.blobDeletions,
      events,
      linkHistory: r.shares,
      audit,
      retentionDays: config.trashRetentionDays,
    })
    return {
      services: {
        files: new FilesService({ transaction, files: r.files, folders: r.folders, blobs, events, trash }),
        trash,
        zips: new FilesZipService({ files: r.files, folders: r.folders, blobs }),
      },
      jobs: {
        nameIndex: new NameIndexJob(db, exclusively),
        fileDigests: new FileDigestsService({ files: r.files, blobs, exclusively }),
      },
    }
  },
  purges: (_platform, { services }) => ({ 'files in the trash': (log) => services.trash.purge(log) }),
  eventShapes: (urls) => {
    const file = (stored: StoredFile) => serializeFile(stored, urls)
    return {
      'file.created': file,
      'file.trashed': (trashed) => serializeTrashedFile(trashed, urls),
      'file.restored': file,
      'file.deleted': file,
    }
  },
}
