// The bytes of an upload, sent by the real @vercel/blob client to the app on a real port: one PUT up to 5 MiB
// and multipart above it, stored byte for byte whatever the size, a retry or twenty uploads at once, and
// downloaded back the same. The multipart endpoint is also driven part by part, to send what upload() never
// would: parts out of order or sent twice, a part of another length than announced, a list that does not
// match the parts, an upload the store has closed. Runs on SQLite and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { crc32 } from 'node:zlib'
import { BlobError, BlobFileTooLargeError } from '@vercel/blob'
import { completeMultipartUpload, createMultipartUploader, uploadPart } from '@vercel/blob/client'
import { blobKeyOf } from '../src/platform/blob/blob-keys.ts'
import { MIN_PART_BYTES } from '../src/resources/uploads/blob-endpoint/blob-endpoint.service.ts'
import { STALLED_COMPLETION_MS } from '../src/resources/uploads/processing.job.ts'
import { call, createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import {
  blobCalls,
  expectRejection,
  MiB,
  stagedKeys,
  startUploadApp,
  uploadHelpers,
} from './support/upload-helpers.ts'
import {
  digestsSettled,
  type Grant,
  getStatus,
  handshakeToken,
  type ListeningContext,
  MULTIPART_THRESHOLD,
  seededStream,
  sha256,
  sha256Of,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

async function storedBytesHash(ctx: ListeningContext, accountId: string, fileId: string): Promise<string> {
  const file = await ctx.app.services.files.get(accountId, fileId)
  return sha256Of(await ctx.blobs.get(file.blobKey))
}

/** GET /files/{fileId}/download with the account's credential. */
async function download(
  ctx: ListeningContext,
  token: string,
  fileId: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${ctx.base}/api/v1/files/${fileId}/download`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
  })
}

for (const engine of ENGINES) {
  describe(`uploads [${engine}]`, () => {
    let ctx: ListeningContext | undefined
    const app = () => {
      assert.ok(ctx)
      return ctx
    }
    let account: TestAccount

    before(async () => {
      ctx = await startUploadApp(engine)
      account = await createAccount(ctx.app)
    })
    after(async () => {
      await ctx?.stop()
    })

    const { prepare, uploadFile } = uploadHelpers(app, () => account)

    describe('transfers with the real client', () => {
      test('a small file: stored byte for byte, with its SHA-256, in its folder', async () => {
        const { app: fastify } = app()
        const folder = await call(fastify, 'POST', '/api/v1/folders', {
          token: account.token,
          body: { name: `Small ${randomBytes(3).toString('hex')}` },
        })
        const content = Buffer.from('Hello, Coffer!\n')
        const { grant, result, status } = await uploadFile(
          'hello.txt',
          'text/plain',
          content,
          folder.body.data.id,
        )
        assert.equal(status.status, 'complete')
        const fileId = (status as { result: { id: string } }).result.id
        assert.deepEqual(result, {
          url: grant.statusUrl,
          downloadUrl: grant.statusUrl,
          pathname: grant.pathname,
          contentType: 'text/plain',
          contentDisposition: `attachment; filename="hello.txt"; filename*=UTF-8''hello.txt`,
          etag: `"${fileId}"`,
        })
        assert.deepEqual(blobCalls(grant.pathname), ['PUT /blob/'])
        const file = await fastify.services.files.get(account.id, fileId)
        assert.deepEqual(
          { ...file, createdAt: 0, folder: null },
          {
            id: fileId,
            accountId: account.id,
            name: 'hello.txt',
            contentType: 'text/plain',
            size: content.length,
            blobKey: blobKeyOf(account.id, fileId),
            sha256: sha256(content),
            createdAt: 0,
            folderId: folder.body.data.id,
            folder: null,
            share: null,
            preview: null,
          },
        )
        assert.equal(file.folder?.fileCount, 1)
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(content))
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      test('exactly 5 MiB goes in one PUT; 5 MiB + 1 byte goes multipart', async () => {
        for (const size of [MULTIPART_THRESHOLD, MULTIPART_THRESHOLD + 1]) {
          const body = seededStream(size, size)
          const content = Buffer.concat(await body.toArray())
          const { grant, status } = await uploadFile(
            `seeded-${size}.bin`,
            'application/octet-stream',
            content,
          )
          assert.equal(status.status, 'complete', JSON.stringify(status))
          const fileId = (status as { result: { id: string } }).result.id
          assert.deepEqual(
            blobCalls(grant.pathname),
            size > MULTIPART_THRESHOLD
              ? ['POST /blob/mpu', 'POST /blob/mpu', 'POST /blob/mpu']
              : ['PUT /blob/'],
          )
          await digestsSettled(app(), fileId)
          const file = await app().app.services.files.get(account.id, fileId)
          assert.equal(file.size, size)
          assert.equal(file.sha256, sha256(content))
          assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(content))
          assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
        }
      })

      test('downloads return the uploaded bytes, whole and ranged', async () => {
        for (const size of [15, MULTIPART_THRESHOLD, MULTIPART_THRESHOLD + 1]) {
          const content = Buffer.concat(await seededStream(size, size + 1).toArray())
          const { status } = await uploadFile(`download-${size}.bin`, 'application/octet-stream', content)
          assert.equal(status.status, 'complete', JSON.stringify(status))
          const fileId = (status as { result: { id: string } }).result.id
          const full = await download(app(), account.token, fileId)
          assert.equal(full.status, 200)
          assert.equal(sha256(Buffer.from(await full.arrayBuffer())), sha256(content))
          const ranged = await download(app(), account.token, fileId, { range: `bytes=7-${size - 3}` })
          assert.equal(ranged.status, 206)
          assert.equal(ranged.headers.get('content-range'), `bytes 7-${size - 3}/${size}`)
          assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), content.subarray(7, size - 2))
        }
      })

      test('a multipart upload of several parts, body streamed, is joined in order', async () => {
        const size = 20 * MiB + 12345
        const [grant] = await prepare([{ name: 'big.bin', type: 'application/octet-stream', size }])
        assert.ok(grant)
        const body = seededStream(size, 7)
        await uploadWithGrant(grant, body)
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        // create, three parts of 8, 8 and 4 MiB + 12345 bytes, complete
        assert.equal(blobCalls(grant.pathname).length, 5)
        assert.equal(await storedBytesHash(app(), account.id, fileId), body.digest())
        await digestsSettled(app(), fileId)
        assert.equal((await app().app.services.files.get(account.id, fileId)).sha256, body.digest())
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      test('20 uploads at once', async () => {
        const contents = Array.from({ length: 20 }, (_, i) =>
          i % 5 === 0 ? randomBytes(MULTIPART_THRESHOLD + 1 + i) : randomBytes(1000 + i * 997),
        )
        const grants = await prepare(
          contents.map((c, i) => ({
            name: `many-${i}.bin`,
            type: 'application/octet-stream',
            size: c.length,
          })),
        )
        await Promise.all(grants.map((grant, i) => uploadWithGrant(grant, contents[i] as Buffer)))
        const statuses = await Promise.all(grants.map((grant) => waitForUpload(grant, account.token)))
        const ids = new Set<string>()
        for (const [i, status] of statuses.entries()) {
          assert.equal(status.status, 'complete', JSON.stringify(status))
          const fileId = (status as { result: { id: string } }).result.id
          ids.add(fileId)
          await digestsSettled(app(), fileId)
          const file = await app().app.services.files.get(account.id, fileId)
          assert.equal(file.name, `many-${i}.bin`)
          assert.equal(file.sha256, sha256(contents[i] as Buffer))
          assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(contents[i] as Buffer))
        }
        assert.equal(ids.size, 20)
      })
    })

    test('on S3, a multipart upload is complete before its digests, which a job computes afterwards', async (t) => {
      if (app().blobStore !== 's3') return t.skip('the local disk hashes a multipart upload as it joins it')
      const { jobs, log } = app().app
      // Held back, so that the state between the two is seen.
      await jobs.fileDigests.stop()
      const content = randomBytes(MULTIPART_THRESHOLD + 1234)
      let fileId = ''
      try {
        const { grant, status } = await uploadFile('later.bin', 'application/octet-stream', content)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        assert.equal(blobCalls(grant.pathname).length, 3, 'multipart')
        fileId = (status as { result: { id: string } }).result.id
        assert.deepEqual(await digestsOf(fileId), { sha256: null, crc32: null })
        // Usable meanwhile, with its id as its ETag.
        const response = await download(app(), account.token, fileId)
        assert.equal(response.headers.get('etag'), `"${fileId}"`)
        assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(content))
      } finally {
        jobs.fileDigests.start(log)
      }
      await digestsSettled(app(), fileId)
      assert.deepEqual(await digestsOf(fileId), { sha256: sha256(content), crc32: crc32(content) })
      const response = await download(app(), account.token, fileId, {
        'if-none-match': `"${sha256(content)}"`,
      })
      assert.equal(response.status, 304)
    })

    /** The digests a file's row holds. */
    const digestsOf = async (fileId: string) => {
      const row = await app()
        .db.kysely.selectFrom('files')
        .select(['sha256', 'crc32'])
        .where('id', '=', fileId)
        .executeTakeFirstOrThrow()
      return { sha256: row.sha256, crc32: row.crc32 === null ? null : Number(row.crc32) }
    }

    describe('multipart uploads', () => {
      /** A manual multipart upload with the token the handshake gives for a grant. */
      async function uploader(grant: Grant) {
        const token = await handshakeToken(grant)
        const mpu = await createMultipartUploader(grant.pathname, {
          access: 'private',
          token,
          contentType: grant.contentType,
        })
        return Object.assign(mpu, { token })
      }

      /** A part request as the client sends a streamed one: chunked, its length in x-content-length. */
      async function sendPart(
        grant: Grant,
        mpu: { token: string; key: string; uploadId: string },
        partNumber: number,
        bytes: Buffer,
        announced: number,
      ): Promise<Response> {
        return fetch(`${app().base}/blob/mpu?${new URLSearchParams({ pathname: grant.pathname })}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${mpu.token}`,
            'x-vercel-blob-access': 'private',
            'x-mpu-action': 'upload',
            'x-mpu-key': encodeURIComponent(mpu.key),
            'x-mpu-upload-id': mpu.uploadId,
            'x-mpu-part-number': String(partNumber),
            'x-content-length': String(announced),
          },
          body: Readable.toWeb(Readable.from([bytes])) as ReadableStream,
          duplex: 'half',
        } as RequestInit)
      }

      test('parts sent out of order, with a gap in the numbers, are joined in number order', async () => {
        const parts = [randomBytes(MIN_PART_BYTES), randomBytes(MIN_PART_BYTES + 17), randomBytes(333)]
        const size = parts.reduce((sum, p) => sum + p.length, 0)
        const [grant] = await prepare([{ name: 'gap.bin', type: 'application/octet-stream', size }])
        assert.ok(grant)
        const mpu = await uploader(grant)
        // Part 4 first, alone; then 1 and 3 together.
        const fourth = await mpu.uploadPart(4, parts[2] as Buffer)
        const [first, third] = await Promise.all([
          mpu.uploadPart(1, parts[0] as Buffer),
          mpu.uploadPart(3, parts[1] as Buffer),
        ])
        await mpu.complete([fourth, first, third])
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(Buffer.concat(parts)))
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      test('an upload stopped half-way resumes: its status lists the parts stored, a new token sends the rest (issue 44, 3)', async () => {
        const parts = [randomBytes(MIN_PART_BYTES), randomBytes(MIN_PART_BYTES), randomBytes(4321)]
        const size = parts.reduce((sum, p) => sum + p.length, 0)
        const [grant] = await prepare([{ name: 'resumed.bin', type: 'application/octet-stream', size }])
        assert.ok(grant)
        const before = await getStatus(grant, account.token)
        assert.deepEqual(before, { status: 'pending', phase: 'uploading' }, 'nothing stored yet')
        const mpu = await uploader(grant)
        const first = await mpu.uploadPart(1, parts[0] as Buffer)
        // Part 2 twice, the second shorter than the first: the status names the largest write of a number.
        await mpu.uploadPart(2, (parts[1] as Buffer).subarray(0, 1000))
        const second = await mpu.uploadPart(2, parts[1] as Buffer)
        // The sender stops here (killed, a closed tab): all it had is the grant.
        const stopped = await getStatus(grant, account.token)
        assert.deepEqual(stopped, {
          status: 'pending',
          phase: 'uploading',
          multipart: {
            uploadId: mpu.uploadId,
            parts: [
              { partNumber: 1, size: MIN_PART_BYTES, etag: first.etag },
              { partNumber: 2, size: MIN_PART_BYTES, etag: second.etag },
            ],
          },
        })
        assert.ok(stopped.status === 'pending' && stopped.multipart)
        const token = await handshakeToken(grant)
        const resumed = {
          access: 'private' as const,
          token,
          key: grant.pathname,
          uploadId: stopped.multipart.uploadId,
        }
        const third = await uploadPart(grant.pathname, parts[2] as Buffer, { ...resumed, partNumber: 3 })
        await completeMultipartUpload(grant.pathname, [...stopped.multipart.parts, third], resumed)
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(Buffer.concat(parts)))
      })

      test('a part sent again replaces the first attempt when the list names it', async () => {
        const first = randomBytes(MIN_PART_BYTES)
        const one = randomBytes(MIN_PART_BYTES)
        const two = randomBytes(1000)
        const [grant] = await prepare([
          { name: 'again.bin', type: 'application/octet-stream', size: MIN_PART_BYTES + 1000 },
        ])
        assert.ok(grant)
        const mpu = await uploader(grant)
        const firstAttempt = await mpu.uploadPart(1, first)
        const secondAttempt = await mpu.uploadPart(1, one)
        assert.notEqual(firstAttempt.etag, secondAttempt.etag)
        const second = await mpu.uploadPart(2, two)
        await mpu.complete([secondAttempt, second])
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(Buffer.concat([one, two])))
      })

      test('a part the list does not name, or names with a wrong etag, is refused', async () => {
        const [grant] = await prepare([{ name: 'wrong.bin', type: 'application/octet-stream', size: 10 }])
        assert.ok(grant)
        const mpu = await uploader(grant)
        const part = await mpu.uploadPart(1, Buffer.from('0123456789'))
        await expectRejection(
          mpu.complete([{ ...part, etag: 'nope' }]),
          BlobError,
          /Part 1 with etag "nope" was not uploaded/,
        )
        await expectRejection(mpu.complete([part, part]), BlobError, /listed twice/)
      })

      test('a part under 5 MiB but the last is refused at completion, as Vercel Blob and S3 refuse it', async () => {
        const small = randomBytes(MIN_PART_BYTES - 1)
        const tail = randomBytes(10)
        const [grant] = await prepare([
          { name: 'small.bin', type: 'application/octet-stream', size: small.length + tail.length },
        ])
        assert.ok(grant)
        const mpu = await uploader(grant)
        const one = await mpu.uploadPart(1, small)
        const two = await mpu.uploadPart(2, tail)
        await expectRejection(
          mpu.complete([one, two]),
          BlobError,
          /Part 1 holds 5242879 bytes; every part but the last must hold at least 5242880/,
        )
      })

      test('a part of another length than announced is refused, and the upload goes on', async () => {
        const content = randomBytes(MIN_PART_BYTES + 10)
        const [grant] = await prepare([
          { name: 'length.bin', type: 'application/octet-stream', size: content.length },
        ])
        assert.ok(grant)
        const mpu = await uploader(grant)
        for (const [bytes, announced] of [
          [12, 10],
          [9, 10],
        ] as const) {
          const res = await sendPart(grant, mpu, 1, content.subarray(0, bytes), announced)
          assert.equal(res.status, 400)
          const body = (await res.json()) as { error: { code: string; message: string } }
          assert.equal(body.error.code, 'bad_request')
          assert.match(body.error.message, /length differs from the one announced/)
        }
        const one = await mpu.uploadPart(1, content.subarray(0, MIN_PART_BYTES))
        const two = await mpu.uploadPart(2, content.subarray(MIN_PART_BYTES))
        await mpu.complete([one, two])
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(content))
      })

      test('an upload the store no longer holds is refused as closed; the file goes through again', async () => {
        const content = randomBytes(MULTIPART_THRESHOLD + 1)
        const [grant] = await prepare([
          { name: 'closed.bin', type: 'application/octet-stream', size: content.length },
        ])
        assert.ok(grant)
        const mpu = await uploader(grant)
        const one = await mpu.uploadPart(1, content.subarray(0, MiB))
        // As if swept from the store (untouched for long) behind the endpoint's back.
        const row = await app()
          .db.kysely.selectFrom('upload_blobs')
          .select(['key', 'store_upload_id'])
          .where('intent_id', '=', grant.intentId)
          .executeTakeFirstOrThrow()
        await app().blobs.abortMultipart({ key: row.key, uploadId: row.store_upload_id as string })
        await expectRejection(mpu.uploadPart(2, content.subarray(MiB)), BlobError, /no longer open/)
        await expectRejection(mpu.complete([one]), BlobError, /no longer open/)
        await uploadWithGrant(grant, content)
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      test('a completion whose adoption failed on a fault is retried by the client, with the same blob', async () => {
        const content = randomBytes(MULTIPART_THRESHOLD + 1)
        const [grant] = await prepare([
          { name: 'retried.bin', type: 'application/octet-stream', size: content.length },
        ])
        assert.ok(grant)
        const uploads = app().app.services.uploads
        const original = uploads.blobStored
        let failures = 0
        uploads.blobStored = async function (this: typeof uploads, ...args) {
          if (failures++ === 0) throw new Error('the database is away for a moment')
          return original.apply(this, args)
        }
        try {
          await uploadWithGrant(grant, content)
        } finally {
          uploads.blobStored = original
        }
        assert.equal(failures, 2)
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(content))
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      /**
       * A multipart upload left as a completion that failed after the store joined its parts leaves it (the
       * database went away before it recorded the blob): the parts are joined and forgotten by the store, the
       * blob's row knows nothing of it but that its completion began.
       */
      async function halfCompleted(name: string) {
        const content = randomBytes(MIN_PART_BYTES + 1000)
        const [grant] = await prepare([{ name, type: 'application/octet-stream', size: content.length }])
        assert.ok(grant)
        const mpu = await uploader(grant)
        const parts = [
          await mpu.uploadPart(1, content.subarray(0, MIN_PART_BYTES)),
          await mpu.uploadPart(2, content.subarray(MIN_PART_BYTES)),
        ]
        const row = await app()
          .db.kysely.selectFrom('upload_blobs')
          .select(['key', 'store_upload_id'])
          .where('intent_id', '=', grant.intentId)
          .executeTakeFirstOrThrow()
        await app()
          .db.kysely.updateTable('upload_blobs')
          .set({ completing_at: Date.now() })
          .where('key', '=', row.key)
          .execute()
        await app().blobs.completeMultipart({ key: row.key, uploadId: row.store_upload_id as string }, parts)
        return { content, grant, mpu, parts, key: row.key }
      }

      test('a completion that failed after the store joined the parts succeeds when the client sends it again', async () => {
        const { content, grant, mpu, parts, key } = await halfCompleted('joined.bin')
        const blob = await mpu.complete(parts)
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal(blob.etag, `"${fileId}"`)
        assert.equal(key, blobKeyOf(account.id, fileId), 'the joined blob is the file’s, not a copy')
        await digestsSettled(app(), fileId)
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(content))
        const file = await app().app.services.files.get(account.id, fileId)
        assert.equal(file.sha256, sha256(content), 'its digest is computed afterwards')
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
        // Sent once more (its answer lost, say), the completion gets the same answer.
        assert.equal((await mpu.complete(parts)).etag, blob.etag)
      })

      test('a completion that failed after the join and was never sent again is finished by the sweep', async () => {
        const { content, grant, mpu, parts } = await halfCompleted('abandoned-join.bin')
        const sweep = () => app().app.jobs.uploadProcessor.sweep()
        // Not while the client may still send it again.
        await sweep()
        assert.equal((await getStatus(grant, account.token)).status, 'pending')
        await app()
          .db.kysely.updateTable('upload_blobs')
          .set({ completing_at: Date.now() - STALLED_COMPLETION_MS - 1 })
          .where('intent_id', '=', grant.intentId)
          .execute()
        await sweep()
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(content))
        // The client that comes back after all is told of the same blob.
        assert.equal((await mpu.complete(parts)).etag, `"${fileId}"`)
      })

      test('a completion not yet joined by the store is left to the client by the sweep', async () => {
        const content = randomBytes(MIN_PART_BYTES + 10)
        const [grant] = await prepare([
          { name: 'not-joined.bin', type: 'application/octet-stream', size: content.length },
        ])
        assert.ok(grant)
        const mpu = await uploader(grant)
        const parts = [
          await mpu.uploadPart(1, content.subarray(0, MIN_PART_BYTES)),
          await mpu.uploadPart(2, content.subarray(MIN_PART_BYTES)),
        ]
        // Its completion began long ago and failed before the store joined anything.
        await app()
          .db.kysely.updateTable('upload_blobs')
          .set({ completing_at: Date.now() - STALLED_COMPLETION_MS - 1 })
          .where('intent_id', '=', grant.intentId)
          .execute()
        await app().app.jobs.uploadProcessor.sweep()
        assert.equal((await getStatus(grant, account.token)).status, 'pending')
        await mpu.complete(parts)
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
      })

      test('more bytes than declared, spread over parts each within the size, are refused', async () => {
        const [grant] = await prepare([
          { name: 'over.bin', type: 'application/octet-stream', size: 10 * MiB },
        ])
        assert.ok(grant)
        await expectRejection(
          uploadWithGrant(grant, seededStream(17 * MiB)),
          BlobFileTooLargeError,
          new RegExp(`cannot be greater than ${10 * MiB} bytes`),
        )
        await uploadWithGrant(grant, seededStream(10 * MiB, 3))
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
      })
    })
  })
}
