// The blob store the configuration names (BLOB_STORE): files under DATA_DIR/blobs, or objects in an
// S3-compatible bucket. Opening checks that it can be used, so that a wrong setting fails the start with a
// message that names it rather than the first upload.
import path from 'node:path'
import type { Config } from '../config.ts'
import type { BlobStore } from './blob-store.ts'
import { LocalBlobStore } from './local-blob-store.ts'
import { S3BlobStore } from './s3-blob-store.ts'

export async function openBlobStore(config: Pick<Config, 'blobStore' | 'dataDir'>): Promise<BlobStore> {
  const { blobStore } = config
  if (blobStore.kind === 's3') return S3BlobStore.open(blobStore)
  return LocalBlobStore.open(path.join(config.dataDir, 'blobs'))
}
