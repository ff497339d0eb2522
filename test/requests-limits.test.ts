// The limits an owner sets on a file request (a Coffer extension): reading and replacing them with every bound
// checked, and each one enforced on the public API: the largest file, the accepted types (as declared, and
// again as detected from the bytes), the files in all (exactly, under concurrency), the deadline; and the
// rate limit on preparations per client address.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { assertError, call, createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import { newRequest, publicIdOf, REQUESTS } from './support/requests-helpers.ts'
import { cancelPublic, preparePublic, publicApi, sendBytes, settle, submit } from './support/submissions.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const NO_LIMITS = { deadline: null, maxFiles: null, maxFileSize: null, allowedTypes: [] }

for (const engine of ENGINES) {
  describe(`file request limits [${engine}]`, () => {
    let c: ListeningContext
    let a: TestAccount
    before(async () => {
      c = await startListening(engine)
      a = await createAccount(c.app)
    })
    after(async () => c?.stop())

    const limitsOf = (requestId: string) => `${REQUESTS}/${requestId}/limits`
    const put = (requestId: string, body: unknown, token = a.token) =>
      call(c.app, 'PUT', limitsOf(requestId), { token, body })

    test('read and replaced whole, every bound checked; scopes and other accounts', async () => {
      const r = await newRequest(c.app, a.token)
      assert.deepEqual((await call(c.app, 'GET', limitsOf(r.id), { token: a.token })).body, {
        data: NO_LIMITS,
      })

      const deadline = new Date(Date.now() + 86_400_000).toISOString()
      const set = await put(r.id, {
        deadline,
        maxFiles: 3,
        maxFileSize: 1000,
        allowedTypes: ['.PDF', 'image/*', '.pdf', ' Application/Zip '],
      })
      assert.equal(set.status, 200)
      const expected = {
        deadline,
        maxFiles: 3,
        maxFileSize: 1000,
        allowedTypes: ['.pdf', 'image/*', 'application/zip'],
      }
      assert.deepEqual(set.body, { data: expected })
      assert.deepEqual((await call(c.app, 'GET', limitsOf(r.id), { token: a.token })).body, {
        data: expected,
      })
      // The contract's shapes stay as they were.
      const request = await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
      assert.equal('limits' in request.body.data, false)

      const refused = async (body: unknown, field: string, message: RegExp) => {
        const res = await put(r.id, body)
        assert.match(assertError(res, 400, 'invalid_request'), message)
        assert.equal(res.body.error.field, field)
      }
      await refused({ deadline: new Date(Date.now() - 1000).toISOString() }, 'deadline', /in the future/)
      await refused({ deadline: 'tomorrow' }, 'deadline', /date-time/)
      await refused({ maxFiles: 0 }, 'maxFiles', /at least 1/)
      await refused({ maxFiles: 1_000_001 }, 'maxFiles', /at most 1000000/)
      await refused(
        { maxFileSize: c.config.maxFileSize + 1 },
        'maxFileSize',
        /largest file this server accepts/,
      )
      await refused({ allowedTypes: ['.pdf', 'pdf'] }, 'allowedTypes[1]', /extension such as/)
      await refused({ allowedTypes: ['image/'] }, 'allowedTypes[0]', /MIME type/)
      await refused(
        { allowedTypes: Array.from({ length: 51 }, (_, i) => `.e${i}`) },
        'allowedTypes',
        /at most 50/,
      )
      await refused({ maxFiles: 2, unknown: 1 }, 'unknown', /not allowed/)
      assert.deepEqual((await call(c.app, 'GET', limitsOf(r.id), { token: a.token })).body, {
        data: expected,
      })

      // A field left out is no limit of that kind.
      assert.deepEqual((await put(r.id, { maxFiles: 5 })).body, { data: { ...NO_LIMITS, maxFiles: 5 } })
      assert.deepEqual((await put(r.id, {})).body, { data: NO_LIMITS })

      const readOnly = await a.key(['requests:read'])
      assert.equal((await call(c.app, 'GET', limitsOf(r.id), { token: readOnly })).status, 200)
      assertError(await put(r.id, {}, readOnly), 403, 'insufficient_scope')
      assertError(
        await call(c.app, 'GET', limitsOf(r.id), { token: await a.key(['files:read']) }),
        403,
        'insufficient_scope',
      )
      const b = await createAccount(c.app)
      assertError(await call(c.app, 'GET', limitsOf(r.id), { token: b.token }), 404, 'not_found')
      assertError(await put(r.id, { maxFiles: 1 }, b.token), 404, 'not_found')
      assertError(await put('req_absent', {}), 404, 'not_found')
    })

    test('the largest file and the accepted types, as declared and as the bytes show', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const publicId = publicIdOf(r)
      await put(r.id, { maxFileSize: 10, allowedTypes: ['.pdf', 'image/*'] })
      const shown = await call(c.app, 'GET', publicApi(publicId))
      assert.equal(shown.body.data.maxFileSize, 10)
      assert.deepEqual(shown.body.data.allowedTypes, ['.pdf', 'image/*'])

      const big = await preparePublic(c.app, publicId, {}, [
        { name: 'ok.pdf', type: 'application/pdf', content: 'x' },
        { name: 'big.pdf', type: 'application/pdf', content: 'x'.repeat(11) },
      ])
      assert.match(
        assertError(big, 400, 'invalid_request'),
        /"big.pdf" is 11 bytes; this request accepts files of at most 10 bytes/,
      )
      assert.equal(big.body.error.field, 'files[1].size')
      const text = await preparePublic(c.app, publicId, {}, [
        { name: 'notes.txt', type: 'text/plain', content: 'x' },
      ])
      assert.match(assertError(text, 400, 'invalid_request'), /accepts .pdf or any image/)
      assert.equal(text.body.error.field, 'files[0].type')

      // By extension, by type family; at the size bound.
      const { statuses } = await submit(c.app, publicId, {}, [
        { name: 'scan.PDF', type: 'application/octet-stream', content: 'x'.repeat(10) },
        { name: 'image', type: 'image/gif', content: 'GIF89a' },
      ])
      assert.deepEqual(
        statuses.map((s) => s.status),
        ['complete', 'complete'],
      )

      // Declared an image, its bytes a PDF, its name not .pdf: refused once the bytes show it.
      const { statuses: detected } = await submit(c.app, publicId, {}, [
        { name: 'photo.png', type: 'image/png', content: '%PDF-1.4\n' },
      ])
      assert.equal(detected[0]?.status, 'error')
      assert.match(
        String(detected[0]?.error),
        /"photo.png" are of type application\/pdf, which this request does not accept/,
      )
      const request = await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
      assert.equal(request.body.data.submissionCount, 2)
    })

    test('files in all: exact under concurrent preparations; a cancelled upload frees its place', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const publicId = publicIdOf(r)
      await put(r.id, { maxFiles: 3 })
      const one = [{ name: 'a.txt', type: 'text/plain', content: 'a' }]
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => preparePublic(c.app, publicId, {}, one)),
      )
      const statuses = answers.map((res) => res.status).sort()
      assert.deepEqual(statuses, [201, 201, 201, 409, 409, 409, 409, 409])
      const full = answers.find((res) => res.status === 409)
      assert.match(String(full?.body.error.message), /accepts 3 files in all and has received them/)
      const grants = answers.filter((res) => res.status === 201).map((res) => res.body.data.uploads[0])

      // Two arrive; one is cancelled: one place is free again, for one file, not two.
      await sendBytes(grants[0], 'a')
      await sendBytes(grants[1], 'a')
      await settle(c.app, publicId, grants.slice(0, 2))
      await cancelPublic(c.app, publicId, [grants[2]])
      const two = await preparePublic(c.app, publicId, {}, [...one, ...one])
      assert.match(assertError(two, 409, 'conflict'), /1 more can be sent, not 2/)
      assert.equal((await preparePublic(c.app, publicId, {}, one)).status, 201)
      assertError(await preparePublic(c.app, publicId, {}, one), 409, 'conflict')
      const request = await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
      assert.equal(request.body.data.submissionCount, 2)
    })

    test('the deadline closes the request (410); what was prepared before it may finish', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const publicId = publicIdOf(r)
      const deadline = Date.now() + 1500
      await put(r.id, { deadline: new Date(deadline).toISOString() })
      const one = [{ name: 'a.txt', type: 'text/plain', content: 'a' }]
      const prepared = await preparePublic(c.app, publicId, {}, one)
      assert.equal(prepared.status, 201)
      await new Promise((resolve) => setTimeout(resolve, deadline - Date.now() + 10))
      assertError(await call(c.app, 'GET', publicApi(publicId)), 410, 'gone')
      assert.match(
        assertError(await preparePublic(c.app, publicId, {}, one), 410, 'gone'),
        /deadline has passed/,
      )
      await sendBytes(prepared.body.data.uploads[0], 'a')
      assert.equal((await settle(c.app, publicId, prepared.body.data.uploads))[0]?.status, 'complete')
    })

    test('preparations are limited per client address (429 with Retry-After)', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const publicId = publicIdOf(r)
      const one = [{ name: 'a.txt', type: 'text/plain', content: 'a' }]
      // The earlier tests of this file prepared from this address too.
      let refused: Awaited<ReturnType<typeof preparePublic>> | undefined
      for (let i = 0; i < 40 && !refused; i++) {
        const res = await preparePublic(c.app, publicId, {}, one)
        if (res.status === 429) refused = res
        else assert.equal(res.status, 201)
      }
      assert.ok(refused, 'the 31st preparation in ten minutes is refused')
      assert.match(assertError(refused, 429, 'rate_limited'), /at most 30 per 10 minutes/)
      assert.ok(Number(refused.headers['retry-after']) >= 1)
    })
  })
}
