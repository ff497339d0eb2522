// The upload flow end to end, with the real @vercel/blob client against the app on a real port: POST /files,
// the handshake, the blob endpoint (single PUT and multipart), the signed completion callback, processing and
// the status endpoint; then every refusal the issue lists. Runs on SQLite and, with TEST_DATABASE_URL, on
// PostgreSQL.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import {
  BlobAccessError,
  BlobClientTokenExpiredError,
  BlobContentTypeNotAllowedError,
  BlobError,
  BlobFileTooLargeError,
  BlobPathnameMismatchError,
} from '@vercel/blob'
import { createMultipartUploader, put } from '@vercel/blob/client'
import sharp from 'sharp'
import { hashSecret } from '../src/auth/secrets.ts'
import { MultipartUploadNotFoundError } from '../src/blob/blob-store.ts'
import { signCallback, signClientToken } from '../src/blob-api/client-token.ts'
import { SigningKeyring } from '../src/blob-api/signing-keys.ts'
import { blobKeyOf } from '../src/files/files.service.ts'
import { newId } from '../src/ids.ts'
import { previewKeyOf } from '../src/uploads/previews.ts'
import { LEASE_MS } from '../src/uploads/processing.ts'
import {
  type ApiResponse,
  assertError,
  call,
  chars,
  createAccount,
  ENGINES,
  ISO_MS,
  type TestAccount,
} from './support/harness.ts'
import {
  type Grant,
  getStatus,
  handshakeToken,
  type ListeningContext,
  MULTIPART_THRESHOLD,
  prepareUploads,
  seededStream,
  sha256,
  sha256Of,
  startListening,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

const MiB = 1024 * 1024
const MAX_FILE_SIZE = 64 * MiB

/** Log lines of the app under test, to see which blob API calls the client made. */
const logLines: string[] = []
const logger = { level: 'info', stream: { write: (line: string) => logLines.push(line) } }

function blobCalls(pathname: string): string[] {
  const query = new URLSearchParams({ pathname }).toString()
  return logLines
    .map((line) => JSON.parse(line) as { msg?: string; req?: { method: string; url: string } })
    .filter((entry) => entry.msg === 'incoming request' && entry.req?.url.includes(query))
    .map((entry) => `${entry.req?.method} ${entry.req?.url.split('?')[0]}`)
}

async function storedBytesHash(ctx: ListeningContext, accountId: string, fileId: string): Promise<string> {
  const file = await ctx.app.services.files.get(accountId, fileId)
  return sha256Of(await ctx.blobs.get(file.blobKey))
}

async function stagedKeys(ctx: ListeningContext, intentId: string): Promise<string[]> {
  const rows = await ctx.db.kysely
    .selectFrom('upload_blobs')
    .select('key')
    .where('intent_id', '=', intentId)
    .execute()
  return rows.map((r) => r.key)
}

async function intentRow(ctx: ListeningContext, intentId: string) {
  return ctx.db.kysely
    .selectFrom('upload_intents')
    .selectAll()
    .where('id', '=', intentId)
    .executeTakeFirstOrThrow()
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

async function expectRejection(
  promise: Promise<unknown>,
  type: new (...args: any[]) => Error,
  pattern?: RegExp,
) {
  await assert.rejects(promise, (error: Error) => {
    assert.ok(error instanceof type, `expected ${type.name}, got ${error.constructor.name}: ${error.message}`)
    if (pattern) assert.match(error.message, pattern)
    return true
  })
}

/** Refused at the handshake: the client reports only that it got no token. */
const NO_TOKEN = /Failed to {1,2}retrieve the client token/

for (const engine of ENGINES) {
  describe(`uploads [${engine}]`, () => {
    let ctx: ListeningContext | undefined
    const app = () => {
      assert.ok(ctx)
      return ctx
    }
    let account: TestAccount

    before(async () => {
      ctx = await startListening(engine, { env: { MAX_FILE_SIZE: String(MAX_FILE_SIZE) }, logger })
      process.env.VERCEL_BLOB_API_URL = `${ctx.base}/blob`
      // A refusal in a shape the client does not understand would be retried; one retry shows it quickly.
      process.env.VERCEL_BLOB_RETRIES = '1'
      account = await createAccount(ctx.app)
    })
    after(async () => {
      await ctx?.stop()
    })

    const prepare = (files: { name: string; type: string; size: number }[], folderId?: string | null) =>
      prepareUploads(app().base, account.token, files, folderId)

    /** Uploads `content` through a fresh grant and waits for the outcome. */
    async function uploadFile(name: string, type: string, content: Buffer, folderId?: string | null) {
      const [grant] = await prepare([{ name, type, size: content.length }], folderId)
      assert.ok(grant)
      const result = await uploadWithGrant(grant, content)
      return { grant, result, status: await waitForUpload(grant, account.token) }
    }

    describe('POST /files', () => {
      test('answers 201 with exactly the grant fields of 2.12, one intent per file', async () => {
        const { app: fastify, base } = app()
        const folder = await call(fastify, 'POST', '/api/v1/folders', {
          token: account.token,
          body: { name: `In ${randomBytes(3).toString('hex')}` },
        })
        const before = Date.now()
        const res = await call(fastify, 'POST', '/api/v1/files', {
          token: account.token,
          body: {
            files: [
              { name: 'Quarterly report (final).pdf', type: 'application/pdf', size: 1234 },
              { name: '../../etc/passwd', type: 'text/plain', size: 1 },
            ],
            folderId: folder.body.data.id,
          },
        })
        assert.equal(res.status, 201)
        const uploads = res.body.data.uploads as Grant[]
        assert.deepEqual(Object.keys(res.body), ['data'])
        assert.deepEqual(Object.keys(res.body.data), ['uploads'])
        assert.equal(uploads.length, 2)
        for (const [i, [name, type, size]] of [
          ['Quarterly report (final).pdf', 'application/pdf', 1234],
          ['../../etc/passwd', 'text/plain', 1],
        ].entries()) {
          const grant = uploads[i] as Grant
          assert.match(grant.intentId, /^upl_[0-9a-z]{26}$/)
          assert.ok(grant.clientPayload.grant.length >= 32)
          assert.match(grant.expiresAt, ISO_MS)
          assert.deepEqual(grant, {
            intentId: grant.intentId,
            name,
            contentType: type,
            size,
            pathname: grant.pathname,
            handleUploadUrl: `${base}/api/v1/files/uploads/handshake`,
            statusUrl: `${base}/api/v1/files/uploads/${grant.intentId}`,
            clientPayload: { intentId: grant.intentId, name, grant: grant.clientPayload.grant },
            expiresAt: grant.expiresAt,
          })
          // Chosen by the server: under the intent id, only safe characters, nothing that climbs out.
          assert.ok(grant.pathname.startsWith(`${grant.intentId}/`))
          assert.match(grant.pathname, /^upl_[0-9a-z]{26}\/[A-Za-z0-9._-]+$/)
          assert.ok(!grant.pathname.includes('..'))
          const expires = Date.parse(grant.expiresAt)
          assert.ok(expires >= before + 3600_000 && expires <= Date.now() + 3600_000)
          // The grant is kept only as its hash.
          const row = await intentRow(app(), grant.intentId)
          assert.equal(row.grant_hash, hashSecret(grant.clientPayload.grant))
          assert.ok(!JSON.stringify(row).includes(grant.clientPayload.grant))
          assert.equal(row.folder_id, folder.body.data.id)
        }
        assert.equal(uploads[0]?.pathname.split('/')[1], 'Quarterly-report-final-.pdf')
        assert.equal(uploads[1]?.pathname.split('/')[1], 'etc-passwd')
        assert.notEqual(uploads[0]?.clientPayload.grant, uploads[1]?.clientPayload.grant)
        for (const grant of uploads) {
          assert.deepEqual(await getStatus(grant, account.token), { status: 'pending', phase: 'uploading' })
        }
      })

      test('validates the body strictly, at and past every bound', async () => {
        const { app: fastify } = app()
        const post = (body: unknown) => call(fastify, 'POST', '/api/v1/files', { token: account.token, body })
        const file = { name: 'a.txt', type: 'text/plain', size: 1 }
        const accepted = [
          { files: [file] },
          { files: Array.from({ length: 100 }, () => file) },
          { files: [{ ...file, name: chars(255) }] },
          { files: [{ ...file, type: chars(255) }] },
          { files: [{ ...file, size: MAX_FILE_SIZE }] },
          { files: [file], folderId: null },
        ]
        for (const body of accepted)
          assert.equal((await post(body)).status, 201, JSON.stringify(body).slice(0, 80))
        const refused: [unknown, RegExp][] = [
          [{}, /required field "files"/],
          [{ files: [] }, /"files" must have at least 1 item/],
          [{ files: Array.from({ length: 101 }, () => file) }, /"files" must have at most 100 items/],
          [{ files: [{ ...file, name: '' }] }, /"files\[0\]\.name" must be at least 1 character/],
          [{ files: [{ ...file, name: chars(256) }] }, /"files\[0\]\.name" must be at most 255/],
          [{ files: [{ ...file, type: '' }] }, /"files\[0\]\.type" must be at least 1 character/],
          [{ files: [{ ...file, type: chars(256) }] }, /"files\[0\]\.type" must be at most 255/],
          [{ files: [{ ...file, size: 0 }] }, /"files\[0\]\.size" must be at least 1/],
          [{ files: [{ ...file, size: 1.5 }] }, /"files\[0\]\.size" must be an integer/],
          [{ files: [{ ...file, size: '1' }] }, /"files\[0\]\.size" must be an integer/],
          [{ files: [{ name: 'a', type: 'b' }] }, /required field "files\[0\]\.size"/],
          [{ files: [{ ...file, extra: 1 }] }, /Unknown field "files\[0\]\.extra"/],
          [{ files: [file], extra: 1 }, /Unknown field "extra"/],
          [{ files: [file], folderId: '' }, /"folderId" must be at least 1 character/],
          [{ files: [file], folderId: chars(101) }, /"folderId" must be at most 100/],
        ]
        for (const [body, message] of refused) {
          assert.match(
            assertError(await post(body), 400, 'invalid_request'),
            message,
            JSON.stringify(body).slice(0, 80),
          )
        }
        const tooBig = await post({ files: [file, { ...file, size: MAX_FILE_SIZE + 1 }] })
        assert.equal(
          assertError(tooBig, 400, 'invalid_request'),
          `The request body "files[1].size" must be at most ${MAX_FILE_SIZE}, the largest file this server accepts.`,
        )
        assert.match(tooBig.body.error.hint, /MAX_FILE_SIZE/)
      })

      test("a folder that is absent or another account's is a 404, and nothing is prepared", async () => {
        const { app: fastify } = app()
        const other = await createAccount(fastify)
        const theirs = await call(fastify, 'POST', '/api/v1/folders', {
          token: other.token,
          body: { name: 'Theirs' },
        })
        for (const folderId of [theirs.body.data.id, 'fld_absent']) {
          const res = await call(fastify, 'POST', '/api/v1/files', {
            token: account.token,
            body: { files: [{ name: 'a', type: 'text/plain', size: 1 }], folderId },
          })
          assertError(res, 404, 'not_found')
        }
        const count = await app()
          .db.kysely.selectFrom('upload_intents')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('folder_id', '=', theirs.body.data.id)
          .executeTakeFirstOrThrow()
        assert.equal(Number(count.n), 0)
      })

      test('needs files:write: 401 without a credential, 403 with files:read only', async () => {
        const { app: fastify } = app()
        const body = { files: [{ name: 'a', type: 'text/plain', size: 1 }] }
        assertError(await call(fastify, 'POST', '/api/v1/files', { body }), 401, 'unauthorized')
        const reader = await account.key(['files:read'])
        assert.match(
          assertError(
            await call(fastify, 'POST', '/api/v1/files', { token: reader, body }),
            403,
            'insufficient_scope',
          ),
          /files:write/,
        )
      })
    })

    describe('GET /files/uploads/{intentId}', () => {
      test('is visible to the owning account only, with files:write', async () => {
        const { app: fastify } = app()
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 3 }])
        assert.ok(grant)
        const path = `/api/v1/files/uploads/${grant.intentId}`
        const other = await createAccount(fastify)
        assertError(await call(fastify, 'GET', path, { token: other.token }), 404, 'not_found')
        assertError(
          await call(fastify, 'GET', '/api/v1/files/uploads/upl_absent', { token: account.token }),
          404,
          'not_found',
        )
        assertError(await call(fastify, 'GET', path), 401, 'unauthorized')
        assertError(
          await call(fastify, 'GET', path, { token: await account.key(['files:read']) }),
          403,
          'insufficient_scope',
        )
        assertError(
          await call(fastify, 'GET', `/api/v1/files/uploads/${chars(129)}`, { token: account.token }),
          400,
          'invalid_request',
        )
        const res = await call(fastify, 'GET', path, { token: account.token })
        assert.deepEqual(res.body, { data: { status: 'pending', phase: 'uploading' } })
      })

      test('the three shapes: pending with a phase, complete with result.id, error with a message', async () => {
        const { app: fastify } = app()
        const path = (grant: Grant) => `/api/v1/files/uploads/${grant.intentId}`
        const ok = await uploadFile('ok.txt', 'text/plain', Buffer.from('all good'))
        assert.equal(ok.status.status, 'complete')
        const done = await call(fastify, 'GET', path(ok.grant), { token: account.token })
        assert.deepEqual(done.body, {
          data: { status: 'complete', result: { id: (ok.status as { result: { id: string } }).result.id } },
        })

        const [short] = await prepare([{ name: 'short.txt', type: 'text/plain', size: 10 }])
        assert.ok(short)
        await uploadWithGrant(short, Buffer.from('only 9 b.'))
        await waitForUpload(short, account.token)
        const failed = await call(fastify, 'GET', path(short), { token: account.token })
        assert.deepEqual(failed.body, {
          data: {
            status: 'error',
            error:
              'The uploaded file has 9 bytes, but 10 were declared. Prepare the upload again with the right size.',
          },
        })
      })
    })

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
          const file = await app().app.services.files.get(account.id, fileId)
          assert.equal(file.name, `many-${i}.bin`)
          assert.equal(file.sha256, sha256(contents[i] as Buffer))
          assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(contents[i] as Buffer))
        }
        assert.equal(ids.size, 20)
      })
    })

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
        const parts = [randomBytes(MiB), randomBytes(MiB + 17), randomBytes(333)]
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

      test('a part sent again replaces the first attempt when the list names it', async () => {
        const one = randomBytes(MiB)
        const two = randomBytes(1000)
        const [grant] = await prepare([
          { name: 'again.bin', type: 'application/octet-stream', size: MiB + 1000 },
        ])
        assert.ok(grant)
        const mpu = await uploader(grant)
        const firstAttempt = await mpu.uploadPart(1, one)
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

      test('a part of another length than announced is refused, and the upload goes on', async () => {
        const content = randomBytes(20)
        const [grant] = await prepare([{ name: 'length.bin', type: 'application/octet-stream', size: 20 }])
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
        const one = await mpu.uploadPart(1, content.subarray(0, 10))
        const two = await mpu.uploadPart(2, content.subarray(10))
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

      test('a completion whose callback failed on a fault is retried by the client, with the same blob', async () => {
        const content = randomBytes(MULTIPART_THRESHOLD + 1)
        const [grant] = await prepare([
          { name: 'retried.bin', type: 'application/octet-stream', size: content.length },
        ])
        assert.ok(grant)
        const uploads = app().app.services.uploads
        const original = uploads.uploadCompleted
        let failures = 0
        uploads.uploadCompleted = async function (this: typeof uploads, ...args) {
          if (failures++ === 0) throw new Error('the database is away for a moment')
          return original.apply(this, args)
        }
        try {
          await uploadWithGrant(grant, content)
        } finally {
          uploads.uploadCompleted = original
        }
        assert.equal(failures, 2)
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal(await storedBytesHash(app(), account.id, fileId), sha256(content))
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
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

    describe('processing', () => {
      const previewRows = (fileId: string) =>
        app().db.kysely.selectFrom('file_previews').selectAll().where('file_id', '=', fileId).execute()

      test('an image gets a WebP preview of at most 512 px, recorded for its file', async () => {
        const png = await sharp({
          create: { width: 1200, height: 600, channels: 3, background: { r: 200, g: 30, b: 60 } },
        })
          .png()
          .toBuffer()
        const { status } = await uploadFile('red.png', 'image/png', png)
        assert.equal(status.status, 'complete')
        const fileId = (status as { result: { id: string } }).result.id
        const key = previewKeyOf(account.id, fileId)
        const [row] = await previewRows(fileId)
        assert.ok(row)
        const preview = Buffer.concat(await (await app().blobs.get(key)).toArray())
        const meta = await sharp(preview).metadata()
        assert.deepEqual(
          { format: meta.format, width: meta.width, height: meta.height },
          { format: 'webp', width: 512, height: 256 },
        )
        assert.deepEqual(
          { ...row, created_at: 0, size: Number(row.size) },
          {
            file_id: fileId,
            blob_key: key,
            content_type: 'image/webp',
            width: 512,
            height: 256,
            size: preview.length,
            created_at: 0,
          },
        )

        // Deleting the file deletes its preview with it.
        const deleted = await fetch(`${app().base}/api/v1/files/${fileId}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${account.token}` },
        })
        assert.equal(deleted.status, 200)
        assert.equal(await app().blobs.stat(key), undefined, 'the preview blob is gone')
        assert.equal(
          await app().blobs.stat(blobKeyOf(account.id, fileId)),
          undefined,
          'the file blob is gone',
        )
        assert.deepEqual(await previewRows(fileId), [])
      })

      test('a damaged image is kept without a preview', async () => {
        const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#000' } })
          .png()
          .toBuffer()
        const damaged = Buffer.concat([png.subarray(0, 40), Buffer.alloc(200, 0xff)])
        const { status } = await uploadFile('broken.png', 'image/png', damaged)
        assert.equal(status.status, 'complete')
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal((await app().app.services.files.get(account.id, fileId)).contentType, 'image/png')
        assert.deepEqual(await previewRows(fileId), [])
        assert.equal(await app().blobs.stat(previewKeyOf(account.id, fileId)), undefined)
      })

      test('the type detected from the bytes replaces a declared type it contradicts', async () => {
        const pdf = Buffer.from('%PDF-1.7\n1 0 obj\n<<>>\nendobj\n')
        const cases: [string, string, Buffer, string][] = [
          ['page.png', 'image/png', Buffer.from('<html><script>alert(1)</script></html>'), 'text/plain'],
          ['doc.pdf', 'application/octet-stream', pdf, 'application/pdf'],
          [
            'notes.md',
            'text/markdown; charset=utf-8',
            Buffer.from('# Notes\n'),
            'text/markdown; charset=utf-8',
          ],
          ['data.bin', 'application/x-custom', randomBytes(64).fill(0, 0, 1), 'application/x-custom'],
          [
            'photo.jpg',
            'image/png',
            Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46]),
            'image/jpeg',
          ],
        ]
        for (const [name, declared, content, stored] of cases) {
          const { status } = await uploadFile(name, declared, content)
          assert.equal(status.status, 'complete', name)
          const file = await app().app.services.files.get(
            account.id,
            (status as { result: { id: string } }).result.id,
          )
          assert.equal(file.contentType, stored, name)
        }
      })

      test('fewer bytes than declared end in error and leave no file, blob or preview', async () => {
        const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } })
          .png()
          .toBuffer()
        const [grant] = await prepare([{ name: 'short.png', type: 'image/png', size: png.length + 5 }])
        assert.ok(grant)
        const result = await uploadWithGrant(grant, png)
        const fileId = result.etag.slice(1, -1)
        assert.deepEqual(await waitForUpload(grant, account.token), {
          status: 'error',
          error: `The uploaded file has ${png.length} bytes, but ${png.length + 5} were declared. Prepare the upload again with the right size.`,
        })
        assert.equal(await app().blobs.stat(blobKeyOf(account.id, fileId)), undefined)
        assert.equal(await app().blobs.stat(previewKeyOf(account.id, fileId)), undefined)
        const files = await app()
          .db.kysely.selectFrom('files')
          .select('id')
          .where('id', '=', fileId)
          .execute()
        assert.deepEqual(files, [])
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      test('a file whose folder was deleted during the upload lands in root', async () => {
        const { app: fastify } = app()
        const folder = await call(fastify, 'POST', '/api/v1/folders', {
          token: account.token,
          body: { name: `Gone ${randomBytes(3).toString('hex')}` },
        })
        const [grant] = await prepare(
          [{ name: 'orphan.txt', type: 'text/plain', size: 5 }],
          folder.body.data.id,
        )
        assert.ok(grant)
        await call(fastify, 'DELETE', `/api/v1/folders/${folder.body.data.id}`, { token: account.token })
        await uploadWithGrant(grant, Buffer.from('hello'))
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete')
        const file = await fastify.services.files.get(
          account.id,
          (status as { result: { id: string } }).result.id,
        )
        assert.equal(file.folderId, null)
      })

      test('when upload() returns, the intent is already past uploading', async () => {
        const [grant] = await prepare([{ name: 'quick.txt', type: 'text/plain', size: 2 }])
        assert.ok(grant)
        await uploadWithGrant(grant, Buffer.from('hi'))
        const status = await getStatus(grant, account.token)
        assert.ok(
          status.status === 'complete' || (status.status === 'pending' && status.phase === 'processing'),
          JSON.stringify(status),
        )
      })
    })

    describe('refusals', () => {
      test('a wrong or altered grant is refused at the handshake, which answers 401', async () => {
        const { app: fastify } = app()
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 1 }])
        assert.ok(grant)
        const real = grant.clientPayload.grant
        const altered = `${real.slice(0, -1)}${real.endsWith('A') ? 'B' : 'A'}`
        for (const forged of [altered, `${GRANT_LIKE}${randomBytes(32).toString('base64url')}`, '']) {
          const payload = { ...grant.clientPayload, grant: forged }
          await expectRejection(
            uploadWithGrant(grant, Buffer.from('x'), { clientPayload: JSON.stringify(payload) }),
            BlobError,
            NO_TOKEN,
          )
          const res: ApiResponse = await call(fastify, 'POST', '/api/v1/files/uploads/handshake', {
            body: {
              type: 'blob.generate-client-token',
              payload: { pathname: grant.pathname, clientPayload: JSON.stringify(payload), multipart: false },
            },
          })
          assert.equal(assertError(res, 401, 'unauthorized'), 'The upload grant is not valid.')
        }
        // Another intent's grant does not open this one, and an unknown intent looks like a wrong grant.
        const [other] = await prepare([{ name: 'b.txt', type: 'text/plain', size: 1 }])
        assert.ok(other)
        for (const payload of [
          { ...grant.clientPayload, grant: other.clientPayload.grant },
          { ...grant.clientPayload, intentId: newId('upl') },
        ]) {
          const res = await call(fastify, 'POST', '/api/v1/files/uploads/handshake', {
            body: {
              type: 'blob.generate-client-token',
              payload: { pathname: grant.pathname, clientPayload: JSON.stringify(payload), multipart: false },
            },
          })
          assertError(res, 401, 'unauthorized')
        }
        for (const clientPayload of [
          null,
          'not json',
          JSON.stringify({ ...grant.clientPayload, extra: 1 }),
        ]) {
          const res = await call(fastify, 'POST', '/api/v1/files/uploads/handshake', {
            body: {
              type: 'blob.generate-client-token',
              payload: { pathname: grant.pathname, clientPayload },
            },
          })
          assertError(res, 400, 'invalid_request')
        }
        assert.deepEqual(await getStatus(grant, account.token), { status: 'pending', phase: 'uploading' })
      })

      test("a name or pathname other than the grant's is refused at the handshake", async () => {
        const { app: fastify } = app()
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 1 }])
        assert.ok(grant)
        await expectRejection(
          uploadWithGrant(grant, Buffer.from('x'), { pathname: `${grant.intentId}/other.txt` }),
          BlobError,
          NO_TOKEN,
        )
        const handshake = (pathname: string, clientPayload: object) =>
          call(fastify, 'POST', '/api/v1/files/uploads/handshake', {
            body: {
              type: 'blob.generate-client-token',
              payload: { pathname, clientPayload: JSON.stringify(clientPayload), multipart: false },
            },
          })
        assert.match(
          assertError(await handshake('elsewhere.txt', grant.clientPayload), 400, 'invalid_request'),
          /pathname must be/,
        )
        assert.match(
          assertError(
            await handshake(grant.pathname, { ...grant.clientPayload, name: 'b.txt' }),
            400,
            'invalid_request',
          ),
          /clientPayload\.name/,
        )
        const ok = await handshake(grant.pathname, grant.clientPayload)
        assert.equal(ok.status, 200)
        assert.deepEqual(Object.keys(ok.body), ['type', 'clientToken'])
        assert.equal(ok.body.type, 'blob.generate-client-token')
        assert.match(ok.body.clientToken, /^vercel_blob_client_coffer_[A-Za-z0-9+/=]+$/)
        // Bound to the pathname, the declared size and type, and the grant's expiry; no secret inside.
        assert.deepEqual(await tokenPayloadOf(grant), {
          pathname: grant.pathname,
          validUntil: Date.parse(grant.expiresAt),
          maximumSizeInBytes: 1,
          allowedContentTypes: ['text/plain'],
          addRandomSuffix: false,
          allowOverwrite: false,
          tokenPayload: grant.intentId,
          onUploadCompleted: {
            callbackUrl: `${app().base}/api/v1/files/uploads/completed`,
            tokenPayload: grant.intentId,
          },
        })
      })

      test("the blob endpoint refuses a pathname other than the token's", async () => {
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 1 }])
        assert.ok(grant)
        const clientToken = await handshakeToken(grant)
        await expectRejection(
          put(`${grant.intentId}/other.txt`, Buffer.from('x'), {
            access: 'private',
            token: clientToken,
            contentType: 'text/plain',
          }),
          BlobPathnameMismatchError,
        )
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      test('an expired grant is refused, and the upload ends in error', async () => {
        const { app: fastify } = app()
        const [grant] = await prepare([{ name: 'late.txt', type: 'text/plain', size: 4 }])
        assert.ok(grant)
        await app()
          .db.kysely.updateTable('upload_intents')
          .set({ expires_at: Date.now() - 1 })
          .where('id', '=', grant.intentId)
          .execute()
        await expectRejection(uploadWithGrant(grant, Buffer.from('late')), BlobError, NO_TOKEN)
        const res = await call(fastify, 'POST', '/api/v1/files/uploads/handshake', {
          body: {
            type: 'blob.generate-client-token',
            payload: { pathname: grant.pathname, clientPayload: JSON.stringify(grant.clientPayload) },
          },
        })
        assertError(res, 409, 'conflict')
        assert.deepEqual(await getStatus(grant, account.token), {
          status: 'error',
          error: 'The upload grant expired before the file was stored.',
        })
      })

      test('an expired client token is refused by the blob endpoint', async () => {
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 1 }])
        assert.ok(grant)
        const { clientToken: key } = await signingKeys(app())
        const expired = signClientToken(key, {
          ...(await tokenPayloadOf(grant)),
          validUntil: Date.now() - 1,
        })
        await expectRejection(
          put(grant.pathname, Buffer.from('x'), {
            access: 'private',
            token: expired,
            contentType: 'text/plain',
          }),
          BlobClientTokenExpiredError,
        )
      })

      test('a token not signed by this server, or altered, is refused by the blob endpoint', async () => {
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 1 }])
        assert.ok(grant)
        const payload = await tokenPayloadOf(grant)
        const forged = signClientToken(randomBytes(32), payload)
        const real = await handshakeToken(grant)
        const signed = Buffer.from(real.slice('vercel_blob_client_coffer_'.length), 'base64').toString()
        const [signature, payloadB64] = signed.split('.') as [string, string]
        const bigger = Buffer.from(
          JSON.stringify({
            ...JSON.parse(Buffer.from(payloadB64, 'base64').toString()),
            maximumSizeInBytes: 1e9,
          }),
        ).toString('base64')
        const altered = `vercel_blob_client_coffer_${Buffer.from(`${signature}.${bigger}`).toString('base64')}`
        // 64 characters before the dot, some of them multi-byte: the signature check must not throw on it.
        const multibyte = `vercel_blob_client_coffer_${Buffer.from(`${'é'.repeat(32)}${'a'.repeat(32)}.${payloadB64}`).toString('base64')}`
        for (const token of [forged, altered, multibyte, 'vercel_blob_client_coffer_bm90IGEgdG9rZW4=']) {
          await expectRejection(
            put(grant.pathname, Buffer.from('x'), { access: 'private', token, contentType: 'text/plain' }),
            BlobAccessError,
          )
        }
        assert.deepEqual(await getStatus(grant, account.token), { status: 'pending', phase: 'uploading' })
      })

      test('a grant is refused once its upload completed', async () => {
        const { app: fastify } = app()
        const { grant, status } = await uploadFile('once.txt', 'text/plain', Buffer.from('once'))
        assert.equal(status.status, 'complete')
        await expectRejection(uploadWithGrant(grant, Buffer.from('once')), BlobError, NO_TOKEN)
        const res = await call(fastify, 'POST', '/api/v1/files/uploads/handshake', {
          body: {
            type: 'blob.generate-client-token',
            payload: { pathname: grant.pathname, clientPayload: JSON.stringify(grant.clientPayload) },
          },
        })
        assert.match(assertError(res, 409, 'conflict'), /already received its file/)
        assert.deepEqual(await getStatus(grant, account.token), status)
      })

      test('more bytes than declared are refused, single PUT, streamed or multipart, and nothing stays', async () => {
        const [small, streamed, multi] = await prepare([
          { name: 'ten.txt', type: 'text/plain', size: 10 },
          { name: 'stream.bin', type: 'application/octet-stream', size: 100_000 },
          { name: 'multi.bin', type: 'application/octet-stream', size: MULTIPART_THRESHOLD + 1 },
        ])
        assert.ok(small && streamed && multi)
        await expectRejection(
          uploadWithGrant(small, Buffer.from('eleven byte')),
          BlobFileTooLargeError,
          /cannot be greater than 10 bytes/,
        )
        // A stream has no length up front: the endpoint counts, and stops at the limit.
        await expectRejection(
          uploadWithGrant(streamed, seededStream(100_001)),
          BlobFileTooLargeError,
          /cannot be greater than 100000 bytes/,
        )
        await expectRejection(
          uploadWithGrant(multi, seededStream(12 * MiB)),
          BlobFileTooLargeError,
          new RegExp(`cannot be greater than ${MULTIPART_THRESHOLD + 1} bytes`),
        )
        for (const grant of [small, streamed]) {
          assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
          assert.deepEqual(await getStatus(grant, account.token), { status: 'pending', phase: 'uploading' })
        }
        // Parts the client sent before it gave up wait for the intent to end; expiry removes them all.
        await app()
          .db.kysely.updateTable('upload_intents')
          .set({ expires_at: Date.now() - 1 })
          .where('id', '=', multi.intentId)
          .execute()
        const leftover = await stagedKeys(app(), multi.intentId)
        await app().app.services.uploads.processor.sweep()
        assert.deepEqual(await stagedKeys(app(), multi.intentId), [])
        for (const key of leftover) assert.equal(await app().blobs.stat(key), undefined)
        assert.equal((await getStatus(multi, account.token)).status, 'error')
        // The refusal spent nothing: the right bytes still go through on the same grant.
        await uploadWithGrant(small, Buffer.from('ten bytes!'))
        assert.equal((await waitForUpload(small, account.token)).status, 'complete')
      })

      test('another content type is refused', async () => {
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 5 }])
        assert.ok(grant)
        await expectRejection(
          uploadWithGrant(grant, Buffer.from('<b>x</b>'.slice(0, 5)), { contentType: 'text/html' }),
          BlobContentTypeNotAllowedError,
          /"text\/html" is not allowed/,
        )
        await expectRejection(
          uploadWithGrant(grant, Buffer.from('hello'), { multipart: true, contentType: 'image/png' }),
          BlobContentTypeNotAllowedError,
        )
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
        assert.deepEqual(await getStatus(grant, account.token), { status: 'pending', phase: 'uploading' })
        // Without a content type the client claims none, and the declared one stands.
        await uploadWithGrant(grant, Buffer.from('hello'), { contentType: undefined })
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete')
        const file = await app().app.services.files.get(
          account.id,
          (status as { result: { id: string } }).result.id,
        )
        assert.equal(file.contentType, 'text/plain')
      })

      test('the blob endpoint answers every refusal as { error: { code, message } }, with codes the client does not retry', async () => {
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 5 }])
        assert.ok(grant)
        const token = await handshakeToken(grant)
        const blob = `${app().base}/blob`
        const query = `?${new URLSearchParams({ pathname: grant.pathname })}`
        const headers = { authorization: `Bearer ${token}`, 'x-vercel-blob-access': 'private' }
        const cases: [string, RequestInit, number, string][] = [
          [`${blob}/${query}`, { method: 'PUT', body: 'hello' }, 403, 'forbidden'],
          [
            `${blob}/${query}`,
            { method: 'PUT', body: 'hello', headers: { ...headers, authorization: 'Bearer x' } },
            403,
            'forbidden',
          ],
          [`${blob}/`, { method: 'PUT', body: 'hello', headers }, 400, 'bad_request'],
          [
            `${blob}/${query}`,
            { method: 'PUT', body: 'hello', headers: { ...headers, 'x-vercel-blob-access': 'public' } },
            400,
            'bad_request',
          ],
          [
            `${blob}/mpu${query}`,
            { method: 'POST', headers: { ...headers, 'x-mpu-action': 'explode' } },
            400,
            'bad_request',
          ],
          [
            `${blob}/mpu${query}`,
            {
              method: 'POST',
              body: 'x',
              headers: {
                ...headers,
                'x-mpu-action': 'upload',
                'x-mpu-upload-id': 'nope',
                'x-mpu-key': grant.pathname,
                'x-mpu-part-number': '1',
              },
            },
            400,
            'bad_request',
          ],
          [
            `${blob}/mpu${query}`,
            {
              method: 'POST',
              body: 'not json',
              headers: {
                ...headers,
                'x-mpu-action': 'complete',
                'x-mpu-upload-id': `mpu_${'0'.repeat(24)}`,
                'x-mpu-key': encodeURIComponent(grant.pathname),
              },
            },
            400,
            'bad_request',
          ],
          [`${blob}/${query}`, { method: 'PUT', body: 'too long', headers }, 413, 'file_too_large'],
          [`${blob}/${query}`, { method: 'GET', headers }, 404, 'not_found'],
          [`${blob}/elsewhere`, { method: 'POST', headers }, 404, 'not_found'],
        ]
        for (const [url, init, status, code] of cases) {
          const res = await fetch(url, init)
          const body = (await res.json()) as { error: { code: string; message: string } }
          assert.equal(res.status, status, `${init.method} ${url}: ${JSON.stringify(body)}`)
          assert.deepEqual(Object.keys(body), ['error'])
          assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message'])
          assert.equal(body.error.code, code, body.error.message)
          assert.ok(body.error.message.length > 0)
        }
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      test('a forged completion callback is refused and moves nothing', async () => {
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 5 }])
        assert.ok(grant)
        const fileId = newId('fil')
        const body = JSON.stringify({
          type: 'blob.upload-completed',
          payload: {
            blob: {
              url: grant.statusUrl,
              downloadUrl: grant.statusUrl,
              pathname: grant.pathname,
              contentType: 'text/plain',
              contentDisposition: 'attachment; filename="a.txt"',
              etag: `"${fileId}"`,
            },
            tokenPayload: grant.intentId,
          },
        })
        const send = (headers: Record<string, string>, payload = body) =>
          fetch(`${app().base}/api/v1/files/uploads/completed`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...headers },
            body: payload,
          })
        const { callback } = await signingKeys(app())
        const attempts: Record<string, string>[] = [
          {},
          { 'x-vercel-signature': '' },
          { 'x-vercel-signature': signCallback(randomBytes(32), body) },
          // Signed with the key the tokens use, not the callback key.
          { 'x-vercel-signature': signCallback((await signingKeys(app())).clientToken, body) },
        ]
        for (const headers of attempts) {
          const res = await send(headers)
          assert.equal(res.status, 401)
          assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'unauthorized')
        }
        // A valid signature over another body does not cover this one.
        const other = body.replace(grant.intentId, newId('upl'))
        assert.equal((await send({ 'x-vercel-signature': signCallback(callback, other) })).status, 401)
        // Correctly signed, but naming a blob the endpoint never stored: nothing to adopt.
        const res = await send({ 'x-vercel-signature': signCallback(callback, body) })
        assert.equal(res.status, 409)
        assert.deepEqual(await getStatus(grant, account.token), { status: 'pending', phase: 'uploading' })
      })
    })

    describe('durability', () => {
      test('a restart resumes intents left in processing and ends expired uploads in error', async () => {
        const context = app()
        const content = Buffer.from('left mid-processing')
        const fileId = newId('fil')
        const key = blobKeyOf(account.id, fileId)
        await context.blobs.put(key, Readable.from([content]))
        const now = Date.now()
        const base = {
          account_id: account.id,
          folder_id: null,
          content_type: 'text/plain',
          grant_hash: hashSecret(randomBytes(32).toString('hex')),
          error: null,
          stored_size: null,
          sha256: null,
          stored_at: null,
          created_at: now,
          updated_at: now,
        }
        const processing = newId('upl')
        const expired = newId('upl')
        await context.db.kysely
          .insertInto('upload_intents')
          .values([
            {
              ...base,
              id: processing,
              name: 'resumed.txt',
              size: content.length,
              pathname: `${processing}/resumed.txt`,
              expires_at: now + 60_000,
              state: 'processing',
              file_id: fileId,
              stored_size: content.length,
              sha256: sha256(content),
              stored_at: now,
              // The process that held it died: its lease ran out.
              lease_until: now - 1,
            },
            {
              ...base,
              id: expired,
              name: 'abandoned.bin',
              size: 10 * MiB,
              pathname: `${expired}/abandoned.bin`,
              expires_at: now - 1,
              state: 'uploading',
              file_id: null,
              lease_until: null,
            },
          ])
          .execute()
        // A multipart upload the abandoned upload had begun, with a part sent.
        const abandoned = await context.blobs.createMultipart(blobKeyOf(account.id, newId('fil')))
        await context.blobs.writePart(abandoned, 1, Buffer.from('abc'), 3)
        await context.db.kysely
          .insertInto('upload_blobs')
          .values({
            key: abandoned.key,
            intent_id: expired,
            upload_id: `mpu_${'0'.repeat(24)}`,
            store_upload_id: abandoned.uploadId,
            size: null,
            sha256: null,
            created_at: now,
          })
          .execute()

        // Another process (or this one restarted) on the same database and blobs.
        const { buildApp } = await import('../src/app.ts')
        const restarted = await buildApp({
          config: context.config,
          db: context.db,
          blobs: context.blobs,
          logger: false,
        })
        await restarted.ready()
        try {
          const deadline = Date.now() + 10_000
          while ((await intentRow(context, processing)).state === 'processing' && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
          const statusOf = (id: string) =>
            getStatus({ statusUrl: `${context.base}/api/v1/files/uploads/${id}` } as Grant, account.token)
          assert.deepEqual(await statusOf(processing), { status: 'complete', result: { id: fileId } })
          const file = await context.app.services.files.get(account.id, fileId)
          assert.equal(file.sha256, sha256(content))
          assert.equal(file.name, 'resumed.txt')
          assert.deepEqual(await statusOf(expired), {
            status: 'error',
            error: 'The upload grant expired before the file was stored.',
          })
          // The upload is gone from the store, and its record with it.
          await assert.rejects(
            () => context.blobs.writePart(abandoned, 2, Buffer.from('d'), 1),
            MultipartUploadNotFoundError,
          )
          assert.deepEqual(await stagedKeys(context, expired), [])
        } finally {
          await restarted.close()
        }
      })

      test('a lease held by a live process is respected', async () => {
        const context = app()
        const id = newId('upl')
        const now = Date.now()
        await context.db.kysely
          .insertInto('upload_intents')
          .values({
            id,
            account_id: account.id,
            folder_id: null,
            name: 'held.txt',
            content_type: 'text/plain',
            size: 1,
            pathname: `${id}/held.txt`,
            grant_hash: hashSecret('x'),
            expires_at: now + 60_000,
            state: 'processing',
            error: null,
            file_id: newId('fil'),
            stored_size: 1,
            sha256: sha256('x'),
            stored_at: now,
            lease_until: now + LEASE_MS,
            created_at: now,
            updated_at: now,
          })
          .execute()
        await context.app.services.uploads.processor.kick(id)
        assert.equal((await intentRow(context, id)).state, 'processing')
      })
    })
  })
}

const GRANT_LIKE = 'coffer_grant_'

/** The server's signing keys, read the way any process of the deployment reads them. */
const signingKeys = (ctx: ListeningContext) =>
  new SigningKeyring(ctx.db.kysely, ctx.config.uploadSigningSecret).keys()

async function tokenPayloadOf(grant: Grant) {
  const token = await handshakeToken(grant)
  const signed = Buffer.from(token.slice('vercel_blob_client_coffer_'.length), 'base64').toString()
  return JSON.parse(Buffer.from(signed.split('.')[1] ?? '', 'base64').toString())
}
