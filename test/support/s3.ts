// S3 for the tests: the run's Ceph cluster (global-setup.ts), or one this process starts when a test file runs
// on its own, and a bucket of their own for each app, emptied and removed when it stops. The PostgreSQL leg
// of the HTTP tests keeps its blobs here (harness.ts), so the suite runs on S3 as well as on local disk.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3'
import type { BlobStore, Leftover } from '../../src/platform/blob/blob-store.ts'
import { LocalBlobStore } from '../../src/platform/blob/local-blob-store.ts'
import { S3BlobStore } from '../../src/platform/blob/s3-blob-store.ts'
import { loadConfig } from '../../src/platform/config.ts'
import { type Ceph, cephMissing, type S3Endpoint, s3ClientOf, s3EnvOf, startCeph } from './ceph.ts'

/** Why there is no S3 here, or false when there is. */
export const s3Missing: string | false = process.env.TEST_S3_ENDPOINT ? false : cephMissing

let own: Promise<Ceph> | undefined

async function endpoint(): Promise<S3Endpoint> {
  const { TEST_S3_ENDPOINT, TEST_S3_ACCESS_KEY_ID, TEST_S3_SECRET_ACCESS_KEY } = process.env
  if (TEST_S3_ENDPOINT && TEST_S3_ACCESS_KEY_ID && TEST_S3_SECRET_ACCESS_KEY) {
    return {
      endpoint: TEST_S3_ENDPOINT,
      accessKeyId: TEST_S3_ACCESS_KEY_ID,
      secretAccessKey: TEST_S3_SECRET_ACCESS_KEY,
    }
  }
  if (!own) {
    own = startCeph()
    // Stopped when the process ends: its daemons must not outlive the test file.
    process.once('beforeExit', () => void own?.then((ceph) => ceph.stop()))
  }
  return own
}

const clientOf = s3ClientOf

export interface TestBucket {
  name: string
  /** What a Coffer process needs to keep its blobs in this bucket. */
  env: Record<string, string>
  /**
   * A client of its S3: an app in this process gets one, since the SDK reads its endpoint and credentials
   * from the process's environment, not from the app's configuration.
   */
  client(): S3Client
  /** Empties the bucket (objects and unfinished uploads) and removes it. */
  drop(): Promise<void>
  /** Makes it again, empty (after `drop`). */
  create(): Promise<void>
}

/** A new, empty bucket. */
export async function freshBucket(): Promise<TestBucket> {
  const s3 = await endpoint()
  const name = `coffer-${randomBytes(6).toString('hex')}`
  const create = async () => {
    const client = clientOf(s3)
    try {
      await client.send(new CreateBucketCommand({ Bucket: name }))
    } finally {
      client.destroy()
    }
  }
  await create()
  let dropped = false
  return {
    name,
    env: s3EnvOf(s3, name),
    client: () => clientOf(s3),
    create: async () => {
      await create()
      dropped = false
    },
    drop: async () => {
      if (dropped) return
      await dropBucket(s3, name)
      dropped = true
    },
  }
}

async function dropBucket(s3: S3Endpoint, Bucket: string): Promise<void> {
  const client = clientOf(s3)
  try {
    for (;;) {
      const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket }))
      for (const upload of uploads.Uploads ?? []) {
        await client.send(
          new AbortMultipartUploadCommand({ Bucket, Key: upload.Key, UploadId: upload.UploadId }),
        )
      }
      if (!uploads.IsTruncated) break
    }
    for (;;) {
      const page = await client.send(new ListObjectsV2Command({ Bucket }))
      const keys = (page.Contents ?? []).map((object) => ({ Key: object.Key }))
      if (keys.length === 0) break
      await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: keys, Quiet: true } }))
    }
    await client.send(new DeleteBucketCommand({ Bucket }))
  } finally {
    client.destroy()
  }
}

/** Where a server process or CLI run on one engine's leg keeps its blobs, and a way for the test to look. */
export interface BlobStorage {
  kind: 'local' | 's3'
  env: Record<string, string> | undefined
  /** The store those processes use, opened in the test's process: `list` and `leftovers` see what they left. */
  open(): Promise<BlobStore>
  drop(): Promise<void>
}

/**
 * The blob settings of a server process or CLI run on `engine`'s leg: a fresh bucket on PostgreSQL when there
 * is S3 here (as harness.ts gives apps in this process), the local disk (`dataDir`'s blobs) otherwise.
 */
export async function blobStorageFor(engine: 'sqlite' | 'postgres', dataDir?: string): Promise<BlobStorage> {
  const local = () =>
    LocalBlobStore.open(path.join(dataDir ?? assert.fail('the local disk needs a dataDir'), 'blobs'))
  if (engine !== 'postgres' || s3Missing) {
    return { kind: 'local', env: undefined, open: local, drop: async () => {} }
  }
  const bucket = await freshBucket()
  const { blobStore } = loadConfig(bucket.env)
  assert.equal(blobStore.kind, 's3')
  return {
    kind: 's3',
    env: bucket.env,
    open: () => S3BlobStore.open(blobStore, bucket.client()),
    drop: () => bucket.drop(),
  }
}

/** Every key `store` holds under `prefix`, sorted. */
export async function keysIn(store: BlobStore, prefix = ''): Promise<string[]> {
  const keys: string[] = []
  for await (const blob of store.list(prefix)) keys.push(blob.key)
  return keys.sort()
}

/** What unfinished writes left in `store` (temporary files, multipart uploads). */
export async function leftoversIn(store: BlobStore): Promise<Leftover[]> {
  const leftovers: Leftover[] = []
  for await (const leftover of store.leftovers()) leftovers.push(leftover)
  return leftovers
}
