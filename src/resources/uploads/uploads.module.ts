// What uploads bring to the application: preparing and following uploads (API and the owner's app), the blob
// endpoint the bytes go to, which speaks the Vercel Blob protocol under a path of its own, and the processing
// that makes files of them.
import { laterService, type Module } from '../../module.ts'
import { BLOB_API_PATH } from '../../platform/public-urls.ts'
import { blobEndpointRoutes } from './blob-endpoint/blob-endpoint.routes.ts'
import { BlobEndpointService } from './blob-endpoint/blob-endpoint.service.ts'
import { SigningKeyring } from './blob-endpoint/signing-keys.ts'
import { UploadProcessor } from './processing.job.ts'
import { StagedBlobs } from './staged-blobs.ts'
import { UploadsRepository } from './uploads.repository.ts'
import { uploadsRoutes } from './uploads.routes.ts'
import { UploadsService } from './uploads.service.ts'
import { uploadsAppRoutes } from './uploads-app.routes.ts'

declare module '../../module.ts' {
  interface Repositories {
    uploads: UploadsRepository
  }
  interface Services {
    uploads: UploadsService
    blobEndpoint: BlobEndpointService
  }
  interface Jobs {
    uploadProcessor: UploadProcessor
  }
}

export const uploadsModule: Module = {
  apiRoutes: [uploadsRoutes],
  pageRoutes: [uploadsAppRoutes],
  mounts: [{ prefix: BLOB_API_PATH, routes: blobEndpointRoutes }],
  repositories: (db) => ({ uploads: new UploadsRepository(db) }),
  wire: ({ config, db, blobs, urls, serverSecrets }, built) => {
    const { repositories: r, services, jobs } = built
    const keyring = new SigningKeyring(serverSecrets, config.uploadSigningSecret)
    const staged = new StagedBlobs({ uploads: r.uploads, blobs })
    const uploadProcessor = new UploadProcessor({
      soleProcessor: db.engine === 'sqlite',
      transaction: db.transaction,
      uploads: r.uploads,
      files: r.files,
      filesService: services.files,
      // Files that a request receives become its submissions: the requests module, built after this one.
      submissions: laterService(built, 'submissions'),
      staged,
      blobs,
      digests: jobs.fileDigests,
    })
    const uploads = new UploadsService({
      transaction: db.transaction,
      uploads: r.uploads,
      folders: r.folders,
      quotas: services.quotas,
      keyring,
      processor: uploadProcessor,
      staged,
      config,
      urls,
    })
    const blobEndpoint = new BlobEndpointService({
      uploads: r.uploads,
      staged,
      intents: uploads,
      blobs,
      keyring,
      urls,
    })
    return { services: { uploads, blobEndpoint }, jobs: { uploadProcessor } }
  },
}
