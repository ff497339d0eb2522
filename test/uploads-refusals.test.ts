// Every refusal the issue lists, made where it must be: at the handshake (a wrong, expired or spent grant,
// another name or pathname), at the blob endpoint (another pathname, an expired, forged or altered token,
// more bytes than declared, another content type, a malformed request); and no address takes a completion
// callback. A refusal stores nothing. Runs on SQLite and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
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
import { ServerSecrets } from '../src/platform/db/server-secrets.ts'
import { newId } from '../src/platform/ids.ts'
import { signClientToken } from '../src/resources/uploads/blob-endpoint/client-token.ts'
import { SigningKeyring } from '../src/resources/uploads/blob-endpoint/signing-keys.ts'
import {
  type ApiResponse,
  assertError,
  call,
  createAccount,
  ENGINES,
  type TestAccount,
} from './support/harness.ts'
import { expectRejection, MiB, stagedKeys, startUploadApp, uploadHelpers } from './support/upload-helpers.ts'
import {
  type Grant,
  getStatus,
  handshakeToken,
  type ListeningContext,
  MULTIPART_THRESHOLD,
  seededStream,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

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
      ctx = await startUploadApp(engine)
      account = await createAccount(ctx.app)
    })
    after(async () => {
      await ctx?.stop()
    })

    const { prepare, uploadFile } = uploadHelpers(app, () => account)

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
        await app().app.jobs.uploadProcessor.sweep()
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

      test('the blob endpoint takes its parameters strictly: one pathname, part numbers in digits, a list of parts', async () => {
        const blob = `${app().base}/blob`
        const [small] = await prepare([{ name: 'once.txt', type: 'text/plain', size: 5 }])
        assert.ok(small)
        const smallToken = await handshakeToken(small)
        const twice = new URLSearchParams([
          ['pathname', small.pathname],
          ['pathname', small.pathname],
        ])
        const refusal = async (res: Response, what: string) => {
          const body = (await res.json()) as { error: { code: string; message: string } }
          assert.equal(res.status, 400, `${what}: ${JSON.stringify(body)}`)
          assert.equal(body.error.code, 'bad_request', what)
          return body.error.message
        }
        const repeated = await fetch(`${blob}/?${twice}`, {
          method: 'PUT',
          body: 'hello',
          headers: { authorization: `Bearer ${smallToken}`, 'x-vercel-blob-access': 'private' },
        })
        assert.match(await refusal(repeated, 'a repeated pathname'), /"pathname" must be given once/)
        assert.deepEqual(await stagedKeys(app(), small.intentId), [])
        const extra = new URLSearchParams([
          ['pathname', small.pathname],
          ['allowOverwrite', '1'],
        ])
        const unknown = await fetch(`${blob}/?${extra}`, {
          method: 'PUT',
          body: 'hello',
          headers: { authorization: `Bearer ${smallToken}`, 'x-vercel-blob-access': 'private' },
        })
        assert.match(
          await refusal(unknown, 'an unknown parameter'),
          /The query parameter "allowOverwrite" is not one this endpoint takes/,
        )
        assert.deepEqual(await stagedKeys(app(), small.intentId), [])

        const content = randomBytes(MULTIPART_THRESHOLD + 10)
        const [big] = await prepare([
          { name: 'parts.bin', type: 'application/octet-stream', size: content.length },
        ])
        assert.ok(big)
        const token = await handshakeToken(big)
        const mpu = await createMultipartUploader(big.pathname, {
          access: 'private',
          token,
          contentType: big.contentType,
        })
        const action = (name: string, more: Record<string, string>) => ({
          authorization: `Bearer ${token}`,
          'x-vercel-blob-access': 'private',
          'x-mpu-action': name,
          'x-mpu-upload-id': mpu.uploadId,
          'x-mpu-key': encodeURIComponent(mpu.key),
          ...more,
        })
        const query = new URLSearchParams({ pathname: big.pathname })
        for (const number of ['1e0', '0x1', '1.0', '+1', '01', '0', '10001']) {
          const res = await fetch(`${blob}/mpu?${query}`, {
            method: 'POST',
            body: 'x',
            headers: action('upload', { 'x-mpu-part-number': number }),
          })
          assert.match(await refusal(res, `part number ${number}`), /"x-mpu-part-number" must be an integer/)
        }
        const empty = await fetch(`${blob}/mpu?${query}`, {
          method: 'POST',
          body: '[]',
          headers: { ...action('complete', {}), 'content-type': 'application/json' },
        })
        assert.match(
          await refusal(empty, 'an empty list of parts'),
          /list of parts is empty, but the upload declared 5242890 bytes/,
        )

        // None of it harmed the upload: its parts still go in, and it completes with the bytes.
        const parts = [
          await mpu.uploadPart(1, content.subarray(0, MULTIPART_THRESHOLD)),
          await mpu.uploadPart(2, content.subarray(MULTIPART_THRESHOLD)),
        ]
        await mpu.complete(parts)
        const status = await waitForUpload(big, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
      })

      test('no address takes a completion callback: a forged one finds nothing and moves nothing', async () => {
        // The blob endpoint has the intent adopt its blob in-process; no request can stand in for it.
        const [grant] = await prepare([{ name: 'a.txt', type: 'text/plain', size: 5 }])
        assert.ok(grant)
        const fileId = newId('fil')
        const body = JSON.stringify({
          type: 'blob.upload-completed',
          payload: {
            blob: { url: grant.statusUrl, pathname: grant.pathname, etag: `"${fileId}"` },
            tokenPayload: grant.intentId,
          },
        })
        const res = await fetch(`${app().base}/api/v1/files/uploads/completed`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-vercel-signature': 'ab'.repeat(32) },
          body,
        })
        assert.equal(res.status, 404)
        assert.deepEqual(await getStatus(grant, account.token), { status: 'pending', phase: 'uploading' })
      })
    })
  })
}

const GRANT_LIKE = 'coffer_grant_'

/** The server's signing keys, read the way any process of the deployment reads them. */
const signingKeys = (ctx: ListeningContext) =>
  new SigningKeyring(new ServerSecrets(ctx.db), ctx.config.uploadSigningSecret).keys()

async function tokenPayloadOf(grant: Grant) {
  const token = await handshakeToken(grant)
  const signed = Buffer.from(token.slice('vercel_blob_client_coffer_'.length), 'base64').toString()
  return JSON.parse(Buffer.from(signed.split('.')[1] ?? '', 'base64').toString())
}
