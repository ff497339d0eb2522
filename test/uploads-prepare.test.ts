// The first and last steps of an upload as the client sees them: POST /files hands out one grant per file,
// and refuses a body, a folder or a credential it must not accept; the status endpoint then tells the owning
// account only whether the upload is pending, complete or in error. The transfer between the two is in
// uploads-transfer.test.ts. Runs on SQLite and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { hashSecret } from '../src/platform/auth/secrets.ts'
import {
  assertError,
  call,
  chars,
  createAccount,
  ENGINES,
  ISO_MS,
  type TestAccount,
} from './support/harness.ts'
import { intentRow, MAX_FILE_SIZE, startUploadApp, uploadHelpers } from './support/upload-helpers.ts'
import {
  type Grant,
  getStatus,
  type ListeningContext,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

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
  })
}
