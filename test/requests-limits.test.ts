// The limits an owner sets on a file request (a Coffer extension): reading and replacing them with every bound
// checked, and each one enforced on the public API: the largest file, the accepted types (as declared, and
// again as detected from the bytes), the files in all (exactly, under concurrency), the deadline; and the
// limits on what submitters may prepare: files per client address, uploads held per address and per request,
// and the prompt expiry of grants left unused.
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

    const files = (count: number) =>
      Array.from({ length: count }, (_, i) => ({ name: `f${i}.txt`, type: 'text/plain', content: 'a' }))
    const one = files(1)
    const openRequest = async () => publicIdOf(await newRequest(c.app, a.token, { collectEmail: false }))
    const retryAfter = (res: { headers: Record<string, unknown> }) => Number(res.headers['retry-after'])

    test('prepared files are counted per client address, not preparations (429 with Retry-After)', async () => {
      const publicId = await openRequest()
      const ip = '10.23.0.1'
      // A thousand files in ten preparations, each cancelled so that none is held.
      for (let i = 0; i < 10; i++) {
        const res = await preparePublic(c.app, publicId, {}, files(100), ip)
        assert.equal(res.status, 201, JSON.stringify(res.body))
        await cancelPublic(c.app, publicId, res.body.data.uploads)
      }
      // A hundred more files are refused whole: the budget refills by one file every 0.6 s.
      const refused = await preparePublic(c.app, publicId, {}, files(100), ip)
      assert.match(assertError(refused, 429, 'rate_limited'), /files .*: at most 1,000 per 10 minutes/)
      assert.ok(retryAfter(refused) > 40 && retryAfter(refused) <= 60, `${retryAfter(refused)}`)
      // Another address has its own budget.
      assert.equal((await preparePublic(c.app, publicId, {}, one, '10.23.0.2')).status, 201)
    })

    test('an address holds at most 100 of one request’s uploads not yet sent', async () => {
      const publicId = await openRequest()
      const ip = '10.23.3.1'
      const held = await preparePublic(c.app, publicId, {}, files(100), ip)
      assert.equal(held.status, 201, JSON.stringify(held.body))
      const refused = await preparePublic(c.app, publicId, {}, one, ip)
      assert.match(
        assertError(refused, 429, 'rate_limited'),
        /This address has 100 uploads prepared for this file request and not yet sent; it may hold at most 100/,
      )
      assert.ok(retryAfter(refused) > 540 && retryAfter(refused) <= 600, `${retryAfter(refused)}`)
      // Other addresses have shares of their own, and the address may send to another request.
      assert.equal((await preparePublic(c.app, publicId, {}, files(100), '10.23.3.2')).status, 201)
      assert.equal((await preparePublic(c.app, await openRequest(), {}, one, ip)).status, 201)
      // What it cancels, it may prepare again.
      await cancelPublic(c.app, publicId, held.body.data.uploads.slice(0, 10))
      assert.equal((await preparePublic(c.app, publicId, {}, files(10), ip)).status, 201)
    })

    test('an address holds at most 500 uploads not yet sent, across requests', async () => {
      const [r1, r2, r3, r4, r5, r6] = (await Promise.all(
        Array.from({ length: 6 }, () => openRequest()),
      )) as [string, string, string, string, string, string]
      const ip = '10.23.1.1'
      const held = []
      for (const publicId of [r1, r2, r3, r4, r5]) {
        const res = await preparePublic(c.app, publicId, {}, files(100), ip)
        assert.equal(res.status, 201, JSON.stringify(res.body))
        held.push(res.body.data.uploads)
      }
      const refused = await preparePublic(c.app, r6, {}, one, ip)
      assert.match(
        assertError(refused, 429, 'rate_limited'),
        /This address has 500 uploads prepared and not yet sent; it may hold at most 500/,
      )
      // The wait is until the first of them expires, unused, ten minutes after it was prepared.
      assert.ok(retryAfter(refused) > 540 && retryAfter(refused) <= 600, `${retryAfter(refused)}`)
      assert.equal((await preparePublic(c.app, r6, {}, one, '10.23.1.2')).status, 201)

      // Cancelled uploads are not held, and neither are those whose file has arrived.
      await cancelPublic(c.app, r1, held[0])
      const more = await preparePublic(c.app, r6, {}, files(100), ip)
      assert.equal(more.status, 201)
      assertError(await preparePublic(c.app, r1, {}, one, ip), 429, 'rate_limited')
      await sendBytes(more.body.data.uploads[0], 'a')
      assert.equal((await settle(c.app, r6, more.body.data.uploads.slice(0, 1)))[0]?.status, 'complete')
      assert.equal((await preparePublic(c.app, r1, {}, one, ip)).status, 201)
    })

    test('a request has at most 1,000 uploads under way, from all addresses', async () => {
      const publicId = await openRequest()
      for (let i = 0; i < 10; i++) {
        const res = await preparePublic(c.app, publicId, {}, files(100), `10.23.2.${i + 1}`)
        assert.equal(res.status, 201, JSON.stringify(res.body))
      }
      const refused = await preparePublic(c.app, publicId, {}, one, '10.23.2.100')
      assert.match(
        assertError(refused, 429, 'rate_limited'),
        /has 1,000 uploads under way; it takes at most 1,000 at once/,
      )
      assert.equal(retryAfter(refused), 60)
      // The address itself may still send to another request.
      assert.equal((await preparePublic(c.app, await openRequest(), {}, one, '10.23.2.100')).status, 201)
    })

    test('a grant not used within ten minutes expires; one whose upload started lives on', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const publicId = publicIdOf(r)
      await put(r.id, { maxFiles: 2 })
      const before = Date.now()
      const prepared = await preparePublic(c.app, publicId, {}, files(2), '10.23.3.1')
      const after = Date.now()
      assert.equal(prepared.status, 201)
      const [used, unused] = prepared.body.data.uploads
      for (const grant of [used, unused]) {
        const expiresAt = Date.parse(grant.expiresAt)
        assert.ok(expiresAt >= before + 600_000 - 1000 && expiresAt <= after + 600_000, grant.expiresAt)
      }
      // The owner's own uploads keep the whole lifetime of a grant (UPLOAD_GRANT_TTL_SECONDS, an hour).
      const own = await call(c.app, 'POST', '/api/v1/files', {
        token: a.token,
        body: { files: [{ name: 'x.txt', type: 'text/plain', size: 1 }] },
      })
      assert.ok(Date.parse(own.body.data.uploads[0].expiresAt) >= before + 3_600_000 - 1000)
      // Both hold their places.
      assertError(await preparePublic(c.app, publicId, {}, one, '10.23.3.2'), 409, 'conflict')

      const handshake = (grant: typeof used) =>
        call(c.app, 'POST', new URL(grant.handleUploadUrl).pathname, {
          body: {
            type: 'blob.generate-client-token',
            payload: {
              pathname: grant.pathname,
              clientPayload: JSON.stringify(grant.clientPayload),
              multipart: false,
            },
          },
        })
      // Its upload starting gives a grant the whole lifetime, counted from its preparation.
      assert.equal((await handshake(used)).status, 200)
      const intents = c.db.kysely.selectFrom('upload_intents').select(['expires_at', 'created_at'])
      const started = await intents.where('id', '=', used.intentId).executeTakeFirstOrThrow()
      assert.equal(Number(started.expires_at), Number(started.created_at) + 3_600_000)

      // The unused one past its ten minutes (aged here, not waited for): refused, and its place is free.
      await c.db.kysely
        .updateTable('upload_intents')
        .set({ expires_at: Date.now() - 1 })
        .where('id', '=', unused.intentId)
        .execute()
      assert.match(assertError(await handshake(unused), 409, 'conflict'), /grant expired/)
      const again = await preparePublic(c.app, publicId, {}, one, '10.23.3.2')
      assert.equal(again.status, 201)
      // The started one still arrives.
      await sendBytes(used, 'a')
      assert.equal((await settle(c.app, publicId, [used]))[0]?.status, 'complete')
    })
  })
}
