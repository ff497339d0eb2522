// Uploads that resume (issue 44, 3), through the SDK on both engines (PostgreSQL's leg keeps its blobs in S3):
// an upload with a file resume store stopped after some parts goes on where it stopped when `files.upload` is
// called again, and a transfer cut by the network (a TCP proxy that destroys its connections mid-transfer)
// goes on at the queue's Retry; each time only the missing parts are sent again, measured at the proxy in
// front of the server, and the file made is byte for byte the one on disk.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { openAsBlob } from 'node:fs'
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  Coffer,
  CofferError,
  fileResumeStore,
  memoryResumeStore,
  type ResumeStore,
  sendBytes,
} from '../src/clients/sdk/index.ts'
import { apiUploads } from '../src/clients/sdk/upload-endpoints.ts'
import { type QueuedFile, UploadQueue } from '../src/clients/sdk/upload-queue.ts'
import { createAccount, ENGINES } from './support/harness.ts'
import { freePort } from './support/ports.ts'
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const MiB = 1024 * 1024
const PART = 8 * MiB
/** Nine parts of 8 MiB, the last a short one. */
const SIZE = 8 * PART + 12_345
/** What a transfer sends beyond the parts' bytes: the requests' heads, the API's calls (a few KiB). */
const OVERHEAD = 128 * 1024

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

async function downloadDigest(coffer: Coffer, fileId: string): Promise<string> {
  const response = await coffer.files.download(fileId)
  const hash = createHash('sha256')
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk)
  return hash.digest('hex')
}

/** The bytes the server holds of an upload's multipart upload, as its status lists them. */
async function storedBytes(coffer: Coffer, intentId: string): Promise<{ bytes: number; parts: number }> {
  const status = await coffer.files.uploadStatus(intentId)
  assert.equal(status.status, 'pending', JSON.stringify(status))
  const parts = (status.status === 'pending' && 'multipart' in status && status.multipart?.parts) || []
  return { bytes: parts.reduce((sum, part) => sum + part.size, 0), parts: parts.length }
}

for (const engine of ENGINES) {
  describe(`SDK: uploads that resume [${engine}]`, () => {
    let ctx: ListeningContext
    let proxy: TcpProxy
    let dir: string
    let coffer: Coffer
    let data: Buffer
    let onDisk: string

    before(async () => {
      const proxyPort = await freePort()
      // Every call of the client, the blob API's included, goes through the proxy (PUBLIC_URL names it).
      ctx = await startListening(engine, { env: { PUBLIC_URL: `http://127.0.0.1:${proxyPort}` } })
      proxy = await startTcpProxy(Number(new URL(ctx.base).port), proxyPort)
      const account = await createAccount(ctx.app)
      coffer = new Coffer({ url: `http://127.0.0.1:${proxyPort}`, credentials: { apiKey: account.token } })
      dir = await mkdtemp(path.join(tmpdir(), 'coffer-sdk-resume-'))
      data = randomBytes(SIZE)
      onDisk = path.join(dir, 'big.bin')
      await writeFile(onDisk, data)
    })
    after(async () => {
      await proxy?.close()
      await ctx?.stop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    test('an upload stopped after some parts resumes from its file store: only the missing parts go again', async (t) => {
      const storeDir = path.join(dir, 'resume')
      const store = fileResumeStore(storeDir)
      const stop = new AbortController()
      // The program stops once three parts are stored, the others under way.
      const watching: ResumeStore = {
        ...store,
        async set(key, record) {
          await store.set(key, record)
          if ((record.parts?.length ?? 0) >= 3) stop.abort()
        },
      }
      const first = await coffer.files.upload(onDisk, { resume: watching, signal: stop.signal }).then(
        () => assert.fail('the upload was stopped'),
        (error: unknown) => error,
      )
      assert.ok(first instanceof CofferError && first.code === 'aborted', String(first))
      const [record, ...others] = await store.list()
      assert.ok(record, 'the stopped upload is kept')
      assert.equal(others.length, 0)
      assert.equal(record.name, path.resolve(onDisk))
      assert.equal(record.size, SIZE)
      const [name] = await readdir(storeDir)
      assert.equal(
        (await stat(path.join(storeDir, name as string))).mode & 0o777,
        0o600,
        'a grant is a secret',
      )
      const stored = await storedBytes(coffer, record.grant.intentId)
      assert.ok(stored.parts >= 3 && stored.parts < 9, `${stored.parts} parts stored`)

      proxy.reset()
      const resumed: { stored: number; total: number }[] = []
      const file = await coffer.files.upload(onDisk, {
        resume: storeDir,
        onResume: (progress) => resumed.push(progress),
      })
      const resent = proxy.sent
      t.diagnostic(
        `stopped with ${stored.bytes} of ${SIZE} bytes stored (${stored.parts} parts); resumed sending ${resent} bytes (${((100 * resent) / SIZE).toFixed(1)} % of the file; the missing parts are ${SIZE - stored.bytes})`,
      )
      assert.deepEqual(resumed, [{ stored: stored.bytes, total: SIZE }])
      assert.ok(
        resent >= SIZE - stored.bytes,
        `${resent} bytes sent, the missing parts hold ${SIZE - stored.bytes}`,
      )
      assert.ok(resent <= SIZE - stored.bytes + OVERHEAD, `${resent} bytes sent again`)
      assert.equal(file.size, SIZE)
      assert.equal(await downloadDigest(coffer, file.id), sha256(data))
      assert.deepEqual(await store.list(), [], 'the record goes once the file is made')
    })

    test('a transfer cut by the network mid-way resumes at Retry: only the missing parts go again', async (t) => {
      // The library retries a part whose connection broke; here the network stays away until healed.
      const retries = process.env.VERCEL_BLOB_RETRIES
      process.env.VERCEL_BLOB_RETRIES = '0'
      t.after(() => {
        if (retries === undefined) delete process.env.VERCEL_BLOB_RETRIES
        else process.env.VERCEL_BLOB_RETRIES = retries
        proxy.heal()
      })
      const blob = await openAsBlob(onDisk)
      const file: QueuedFile = {
        name: 'cut.bin',
        type: 'application/octet-stream',
        size: SIZE,
        open: () => blob,
      }
      const queue = new UploadQueue({ endpoint: apiUploads(coffer), statusFailure: 'fail' })
      proxy.reset()
      const cut = proxy.cutAfter(Math.round(SIZE * 0.8))
      await queue.add([file])
      const item = queue.itemOf(file)
      assert.ok(item)
      await queue.ended(item)
      await cut
      assert.equal(item.state, 'failed')
      assert.equal(item.failure?.step, 'transfer')
      const grant = item.grant
      assert.ok(grant)
      proxy.heal()
      const stored = await storedBytes(coffer, grant.intentId)
      assert.ok(stored.parts >= 1, 'some parts were stored before the cut')

      proxy.reset()
      await queue.retry(item)
      await queue.ended(item)
      const resent = proxy.sent
      t.diagnostic(
        `cut after ${Math.round(SIZE * 0.8)} bytes with ${stored.bytes} stored (${stored.parts} parts); Retry sent ${resent} bytes (${((100 * resent) / SIZE).toFixed(1)} % of the file; the missing parts are ${SIZE - stored.bytes})`,
      )
      assert.equal(item.state, 'done', JSON.stringify(item.failure))
      assert.equal(item.grant?.intentId, grant.intentId, 'the same upload went on')
      assert.ok(resent >= SIZE - stored.bytes, `${resent} bytes sent`)
      assert.ok(resent <= SIZE - stored.bytes + OVERHEAD, `${resent} bytes sent again`)
      assert.equal(await downloadDigest(coffer, item.fileId as string), sha256(data))
    })

    test('sendBytes with resumeFrom: a part stored at another size goes again; an upload the server does not hold starts anew', async (t) => {
      const { uploads } = await coffer.capabilities()
      const settings = { blobApiUrl: uploads.blobApiUrl, multipartThreshold: uploads.multipartThresholdBytes }
      const blob = await openAsBlob(onDisk)
      const prepare = async (name: string) => {
        const [grant] = await coffer.files.prepareUploads({
          files: [{ name, type: 'application/octet-stream', size: SIZE }],
        })
        assert.ok(grant)
        return grant
      }
      const made = async (intentId: string) => {
        for (;;) {
          const status = await coffer.files.uploadStatus(intentId)
          if (status.status === 'complete') return status.result.id
          assert.equal(status.status, 'pending', JSON.stringify(status))
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }

      const grant = await prepare('sized.bin')
      const stop = new AbortController()
      const reported: number[] = []
      await assert.rejects(
        sendBytes(grant, blob, {
          ...settings,
          signal: stop.signal,
          onStored: ({ parts }) => {
            reported.push(parts.length)
            if (parts.length >= 2) stop.abort()
          },
        }),
        (error: unknown) => error instanceof CofferError && error.code === 'aborted',
      )
      assert.equal(reported[0], 0, 'reported once created, before any part')
      const status = await coffer.files.uploadStatus(grant.intentId)
      assert.ok(status.status === 'pending' && 'multipart' in status && status.multipart)
      const { uploadId, parts } = status.multipart
      const stored = parts.reduce((sum, part) => sum + part.size, 0)
      // The client's own account of part 1 differs from what it would send: part 1 goes again.
      const [first, ...rest] = parts
      assert.ok(first?.partNumber === 1)
      proxy.reset()
      await sendBytes(grant, blob, {
        ...settings,
        resumeFrom: { uploadId, parts: [{ ...first, size: 1 }, ...rest] },
      })
      const resent = proxy.sent
      t.diagnostic(
        `a part listed at another size: ${resent} bytes sent, ${SIZE - stored} missing and part 1's ${PART}`,
      )
      assert.ok(
        resent >= SIZE - stored + PART && resent <= SIZE - stored + PART + OVERHEAD,
        `${resent} bytes`,
      )
      assert.equal(await downloadDigest(coffer, await made(grant.intentId)), sha256(data))

      const other = await prepare('anew.bin')
      proxy.reset()
      await sendBytes(other, blob, {
        ...settings,
        resumeFrom: { uploadId: `mpu_${'0'.repeat(24)}`, parts: [{ partNumber: 1, size: PART, etag: 'x' }] },
      })
      assert.ok(proxy.sent >= SIZE, `${proxy.sent} bytes: an upload of its own, whole`)
      assert.equal(await downloadDigest(coffer, await made(other.intentId)), sha256(data))
    })

    test('a kept upload the server finished meanwhile is not sent again; one it does not know is sent anew', async () => {
      const small = path.join(dir, 'small.bin')
      const bytes = randomBytes(6 * MiB)
      await writeFile(small, bytes)
      const store = memoryResumeStore()
      // Killed once the file was made, before its record went: the record stays.
      const forgetful: ResumeStore = { ...store, delete: async () => {} }
      const made = await coffer.files.upload(small, { resume: forgetful })
      const [kept] = await store.list()
      assert.ok(kept?.uploadId, 'the record of a multipart upload')
      proxy.reset()
      const again = await coffer.files.upload(small, { resume: store })
      assert.equal(again.id, made.id, 'the file the kept upload made')
      assert.ok(proxy.sent < OVERHEAD, `${proxy.sent} bytes sent`)
      assert.deepEqual(await store.list(), [])

      // A record whose upload the server does not know (another server's, or its data gone): a new upload.
      await store.set(kept.key, {
        ...kept,
        grant: { ...kept.grant, intentId: 'upl_000000000000000000000000' },
      })
      proxy.reset()
      const anew = await coffer.files.upload(small, { resume: store })
      assert.notEqual(anew.id, made.id)
      assert.ok(proxy.sent >= bytes.length, `${proxy.sent} bytes sent`)
      assert.equal(await downloadDigest(coffer, anew.id), sha256(bytes))
      assert.deepEqual(await store.list(), [])
    })
  })
}
