// S3BlobStore on a real object store, Ceph's RADOS Gateway (test/support/ceph.ts): the shared BlobStore suite
// (with S3's least part size), then what only this driver promises: keys under S3_PREFIX and nothing outside
// it, a missing or unreadable bucket named at start, a stream of unknown length through a multipart upload of
// its own that is aborted when the stream fails, leftovers that are S3's unfinished multipart uploads.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import {
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { BlobStoreUnavailableError } from '../src/platform/blob/blob-store.ts'
import { clientSettings, S3_MIN_PART_BYTES, S3BlobStore } from '../src/platform/blob/s3-blob-store.ts'
import { BlobLengthError } from '../src/platform/blob/sources.ts'
import { blobStoreSuite } from './blob-store.suite.ts'
import { chunksOf, failingAfter, MiB, readAll } from './support/blob-store-helpers.ts'
import { type Ceph, cephMissing, startCeph } from './support/ceph.ts'

const options = (bucket: string, prefix = '') => ({ bucket, prefix, forcePathStyle: true, timeoutMs: 20_000 })

describe('S3BlobStore', { skip: cephMissing }, () => {
  let ceph: Ceph
  before(async () => {
    ceph = await startCeph()
    await ceph.createBucket('suite')
    await ceph.createBucket('own')
  })
  after(async () => ceph?.stop())

  blobStoreSuite(
    'S3BlobStore',
    async () => {
      const client = ceph.client()
      const store = await S3BlobStore.open(options('suite', 'under/a-prefix/'), client)
      return {
        store,
        async cleanup() {
          // Everything the suite wrote is under the prefix: the bucket holds nothing else.
          const listed = await client.send(new ListObjectsV2Command({ Bucket: 'suite' }))
          for (const object of listed.Contents ?? []) assert.match(String(object.Key), /^under\/a-prefix\//)
          store.close()
        },
      }
    },
    { minPartBytes: S3_MIN_PART_BYTES, hashesMultipart: false },
  )

  describe('on Ceph', () => {
    let store: S3BlobStore
    before(async () => {
      store = await S3BlobStore.open(options('own', 'p/'), ceph.client())
    })
    after(() => store?.close())

    test('a missing bucket, or one the credentials cannot read, fails the start naming S3_BUCKET', async () => {
      await assert.rejects(
        () => S3BlobStore.open(options('no-such-bucket'), ceph.client()),
        (error: Error) =>
          error instanceof BlobStoreUnavailableError &&
          /S3_BUCKET "no-such-bucket" does not exist/.test(error.message),
      )
      const { S3Client } = await import('@aws-sdk/client-s3')
      const stranger = new S3Client({
        endpoint: ceph.endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'NOBODY0000000000000', secretAccessKey: 'wrong'.repeat(8) },
      })
      await assert.rejects(
        () => S3BlobStore.open(options('own'), stranger),
        (error: Error) => error instanceof BlobStoreUnavailableError && /S3_BUCKET "own"/.test(error.message),
      )
    })

    test('keys are objects under the prefix; objects outside it, or not keys, are not listed; the inventory names the latter', async () => {
      const s3 = ceph.client()
      await store.put('files/acc_1/fil_1', Buffer.from('one'))
      await s3.send(new PutObjectCommand({ Bucket: 'own', Key: 'elsewhere/x', Body: 'x' }))
      await s3.send(new PutObjectCommand({ Bucket: 'own', Key: 'p/Not.A.Key', Body: 'x' }))
      const objects = await s3.send(new ListObjectsV2Command({ Bucket: 'own', Prefix: 'p/files/' }))
      assert.deepEqual(
        objects.Contents?.map((object) => object.Key),
        ['p/files/acc_1/fil_1'],
      )
      const listed = []
      for await (const blob of store.list('')) listed.push(blob.key)
      assert.deepEqual(listed, ['files/acc_1/fil_1'])
      // Everything under the prefix, a key or not; nothing outside it.
      const inventory = []
      for await (const { key, name, size } of store.inventory()) inventory.push({ key, name, size })
      assert.deepEqual(inventory, [
        { key: undefined, name: 'Not.A.Key', size: 1 },
        { key: 'files/acc_1/fil_1', name: 'files/acc_1/fil_1', size: 3 },
      ])
      s3.destroy()
    })

    test('a stream of unknown length goes up in parts, and a failing one leaves no upload behind', async () => {
      const s3 = ceph.client()
      const content = randomBytes(20 * MiB + 3)
      assert.deepEqual(await store.put('big/unknown', chunksOf(content, 1024 * 1024)), {
        size: content.length,
      })
      assert.ok((await readAll(await store.get('big/unknown'))).equals(content))
      await assert.rejects(
        () => store.put('big/failing', failingAfter(randomBytes(12 * MiB), new Error('reset by the client'))),
        /reset by the client/,
      )
      assert.equal(await store.stat('big/failing'), undefined)
      const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: 'own', Prefix: 'p/big/' }))
      assert.deepEqual(uploads.Uploads ?? [], [])
      s3.destroy()
    })

    test('with a length, a put streams in one request and refuses a source of another length', async () => {
      const content = randomBytes(3 * MiB)
      assert.deepEqual(await store.put('known/ok', chunksOf(content, 64 * 1024), content.length), {
        size: content.length,
      })
      await assert.rejects(
        () => store.put('known/short', chunksOf(content, 64 * 1024), content.length + 1),
        BlobLengthError,
      )
      await assert.rejects(
        () => store.put('known/long', chunksOf(content, 64 * 1024), content.length - 1),
        BlobLengthError,
      )
      assert.equal(await store.stat('known/short'), undefined)
      assert.equal(await store.stat('known/long'), undefined)
    })

    test('leftovers are the unfinished multipart uploads, with their parts and age; removing aborts', async () => {
      const before = Date.now()
      const upload = await store.createMultipart('left/over')
      await store.writePart(upload, 1, randomBytes(1000), 1000)
      await store.writePart(upload, 2, randomBytes(234), 234)
      const mine = []
      for await (const leftover of store.leftovers())
        if (leftover.id.includes(upload.uploadId)) mine.push(leftover)
      assert.equal(mine.length, 1)
      assert.equal(mine[0]?.size, 1234)
      assert.ok(Math.abs((mine[0]?.modifiedAt ?? 0) - before) < 60_000)
      await store.removeLeftover(mine[0]?.id ?? '')
      for await (const leftover of store.leftovers()) assert.ok(!leftover.id.includes(upload.uploadId))
    })

    test('as the server configures it: a slow transfer that keeps moving goes through; a frozen store is unavailable within two timeouts', async () => {
      const timeoutMs = 1000
      const client = new S3Client({
        ...clientSettings({ forcePathStyle: true, timeoutMs }),
        endpoint: ceph.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: ceph.accessKeyId, secretAccessKey: ceph.secretAccessKey },
      })
      const timed = await S3BlobStore.open({ ...options('own', 'p/'), timeoutMs }, client)
      try {
        // A chunk every 400 ms for 2.4 s: longer than the timeout in all, never silent for as long.
        async function* trickle() {
          for (let i = 0; i < 6; i++) {
            await new Promise((resolve) => setTimeout(resolve, 400))
            yield Buffer.alloc(1024, i)
          }
        }
        assert.deepEqual(await timed.put('slow/moving', trickle(), 6 * 1024), { size: 6 * 1024 })
        const big = randomBytes(48 * MiB)
        await timed.put('slow/big', big)
        const reading = await timed.get('slow/big')
        const first = await new Promise<Buffer>((resolve) => reading.once('data', resolve))
        reading.pause()
        assert.ok(first.length > 0)

        await ceph.gateway.freeze()
        try {
          for (const [what, call] of [
            ['get', () => timed.get('slow/moving')],
            ['stat', () => timed.stat('slow/moving')],
            ['put', () => timed.put('slow/other', Buffer.from('x'))],
          ] as const) {
            const started = Date.now()
            await assert.rejects(call, BlobStoreUnavailableError, what)
            const waited = Date.now() - started
            assert.ok(waited >= timeoutMs && waited < 2 * timeoutMs + 1500, `${what} waited ${waited} ms`)
          }
          // A download under way whose store stops sending ends within the timeout, once what was in flight is read.
          const started = Date.now()
          reading.resume()
          await assert.rejects(async () => {
            for await (const _ of reading);
          }, /timed out/)
          assert.ok(Date.now() - started < timeoutMs + 3000)
        } finally {
          await ceph.gateway.thaw()
        }
        assert.deepEqual(await timed.stat('slow/moving'), { size: 6 * 1024 })
      } finally {
        timed.close()
      }
    })
  })
})
