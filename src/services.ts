// Builds every domain service from the storage it needs. Routes receive this container; services never see
// a request.
import { AccountsService } from './accounts/accounts.service.ts'
import { ApiKeysService } from './accounts/api-keys.service.ts'
import { AnalyticsService } from './analytics/analytics.service.ts'
import type { BlobStore } from './blob/blob-store.ts'
import { BlobApiService } from './blob-api/blob-api.service.ts'
import { SigningKeyring } from './blob-api/signing-keys.ts'
import type { Config } from './config.ts'
import type { Db } from './db/database.ts'
import { FilesService } from './files/files.service.ts'
import { FoldersService } from './folders/folders.service.ts'
import { HealthService } from './meta/health.service.ts'
import { RequestsService } from './requests/requests.service.ts'
import { SharesService } from './shares/shares.service.ts'
import { UploadProcessor } from './uploads/processing.ts'
import { UploadStore } from './uploads/upload-store.ts'
import { UploadsService } from './uploads/uploads.service.ts'

export interface Services {
  accounts: AccountsService
  apiKeys: ApiKeysService
  folders: FoldersService
  files: FilesService
  shares: SharesService
  requests: RequestsService
  analytics: AnalyticsService
  health: HealthService
  uploads: UploadsService
  blobApi: BlobApiService
}

/** What a service may depend on. Services take only what they use from it. */
export interface ServiceDeps {
  db: Db
  blobs: BlobStore
  config: Config
}

export function createServices(deps: ServiceDeps): Services {
  const { kysely } = deps.db
  const files = new FilesService({ ...deps, cacheSize: deps.config.fileCacheSize })
  const uploadStore = new UploadStore(kysely)
  const keyring = new SigningKeyring(kysely, deps.config.uploadSigningSecret)
  const blobApi = new BlobApiService({ store: uploadStore, blobs: deps.blobs, keyring, config: deps.config })
  const processor = new UploadProcessor({ store: uploadStore, blobs: deps.blobs, files, blobApi })
  return {
    accounts: new AccountsService(kysely),
    apiKeys: new ApiKeysService(deps.db),
    folders: new FoldersService(deps.db),
    files,
    shares: new SharesService(deps),
    requests: new RequestsService(deps),
    analytics: new AnalyticsService(kysely),
    health: new HealthService(deps),
    uploads: new UploadsService({ store: uploadStore, keyring, processor, config: deps.config }),
    blobApi,
  }
}
