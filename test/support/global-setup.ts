// `npm test`'s global setup (node --test-global-setup): one Ceph cluster for the whole run, when Ceph is
// installed, which every test file reaches through the TEST_S3_* variables it inherits (see s3.ts). A test
// file run on its own starts a cluster of its own instead.
import { type Ceph, cephMissing, startCeph } from './ceph.ts'

let ceph: Ceph | undefined

export async function globalSetup(): Promise<void> {
  if (cephMissing || process.env.TEST_S3_ENDPOINT) return
  ceph = await startCeph()
  process.env.TEST_S3_ENDPOINT = ceph.endpoint
  process.env.TEST_S3_ACCESS_KEY_ID = ceph.accessKeyId
  process.env.TEST_S3_SECRET_ACCESS_KEY = ceph.secretAccessKey
}

export async function globalTeardown(): Promise<void> {
  await ceph?.stop()
}
