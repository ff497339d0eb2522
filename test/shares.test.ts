import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { encodeCursor } from '../src/platform/db/pagination.ts'
import {
  assertError,
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  ISO_MS,
  type TestContext,
  visitShare,
} from './support/harness.ts'

const SHARE_ID = /^shr_[0-9a-z]{26}$/
// 160 random bits in base32 are 32 characters.
const PUBLIC_URL = /^http:\/\/coffer\.test\/s\/([0-9a-z]{32})$/
const FUTURE = '2099-01-02T03:04:05.678Z'
const FUTURE_2 = '2098-06-07T08:09:10.000Z'

const post = (app: App, token: string, body: unknown) => call(app, 'POST', '/api/v1/shares', { token, body })
const patch = (app: App, token: string, id: string, body: unknown) =>
  call(app, 'PATCH', `/api/v1/shares/${id}`, { token, body })
const get = (app: App, token: string, id: string) => call(app, 'GET', `/api/v1/shares/${id}`, { token })

/** Moves a share's stored expiry into the past, as if time had passed. */
async function expire(c: TestContext, shareId: string, msAgo = 60_000): Promise<string> {
  const at = Date.now() - msAgo
  await c.db.kysely.updateTable('shares').set({ expires_at: at }).where('id', '=', shareId).execute()
  return new Date(at).toISOString()
}

const publicIdOf = (share: { publicUrl: string }) => PUBLIC_URL.exec(share.publicUrl)?.[1] as string

describeEachEngine('shares', (ctx) => {
  test('create, re-create (idempotent) and get a share with full shapes', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id, { name: 'report.pdf', contentType: 'application/pdf' })
    const before = Date.now()
    const created = await post(c.app, a.token, { fileId: file.id })
    assert.equal(created.status, 201)
    const share = created.body.data
    assert.match(share.id, SHARE_ID)
    assert.match(share.publicUrl, PUBLIC_URL)
    assert.match(share.createdAt, ISO_MS)
    assert.ok(Date.parse(share.createdAt) >= before - 1 && Date.parse(share.createdAt) <= Date.now())
    assert.deepEqual(created.body, {
      data: {
        id: share.id,
        isActive: true,
        state: 'active',
        expiresAt: null,
        viewCount: 0,
        downloadCount: 0,
        createdAt: share.createdAt,
        publicUrl: share.publicUrl,
        hasPassword: false,
        maxDownloads: null,
      },
    })

    // An active share is returned unchanged, whatever expiry the repeated call asks for.
    for (const body of [{ fileId: file.id }, { fileId: file.id, expiresAt: FUTURE }]) {
      const again = await post(c.app, a.token, body)
      assert.equal(again.status, 201)
      assert.deepEqual(again.body, created.body)
    }
    const rows = await c.db.kysely.selectFrom('shares').select('id').where('file_id', '=', file.id).execute()
    assert.deepEqual(
      rows.map((r) => r.id),
      [share.id],
    )

    const got = await get(c.app, a.token, share.id)
    assert.equal(got.status, 200)
    assert.deepEqual(got.body, {
      data: { ...share, file: { name: 'report.pdf', contentType: 'application/pdf', size: file.size } },
    })

    const withExpiry = await createFile(c, a.id)
    const expiring = await post(c.app, a.token, { fileId: withExpiry.id, expiresAt: '2099-01-02T03:04:05Z' })
    assert.equal(expiring.status, 201)
    assert.deepEqual(expiring.body, {
      data: {
        id: expiring.body.data.id,
        isActive: true,
        state: 'active',
        expiresAt: '2099-01-02T03:04:05.000Z',
        viewCount: 0,
        downloadCount: 0,
        createdAt: expiring.body.data.createdAt,
        publicUrl: expiring.body.data.publicUrl,
        hasPassword: false,
        maxDownloads: null,
      },
    })
    assert.notEqual(expiring.body.data.publicUrl, share.publicUrl)
    // Offsets are accepted and stored as the same instant.
    const offset = await createFile(c, a.id)
    const withOffset = await post(c.app, a.token, {
      fileId: offset.id,
      expiresAt: '2099-01-02T05:04:05+02:00',
    })
    assert.equal(withOffset.body.data.expiresAt, '2099-01-02T03:04:05.000Z')
    const explicitNull = await createFile(c, a.id)
    const withNull = await post(c.app, a.token, { fileId: explicitNull.id, expiresAt: null })
    assert.equal(withNull.status, 201)
    assert.equal(withNull.body.data.expiresAt, null)
    assert.equal(withNull.body.data.isActive, true)
  })

  test("the file's share summary follows the share", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    assert.equal((await c.app.services.files.get(a.id, file.id)).share, null)
    const share = (await post(c.app, a.token, { fileId: file.id, expiresAt: FUTURE })).body.data
    await visitShare(c.app, share, { views: 1, downloads: 1 })
    assert.deepEqual((await c.app.services.files.get(a.id, file.id)).share, {
      id: share.id,
      publicId: publicIdOf(share),
      isActive: true,
      state: 'active',
      expiresAt: Date.parse(FUTURE),
      viewCount: 1,
      downloadCount: 1,
    })
    await patch(c.app, a.token, share.id, { isActive: false })
    assert.equal((await c.app.services.files.get(a.id, file.id)).share?.isActive, false)
  })

  test('POST reactivates a disabled share, keeping its link and counts, with the expiry of the body', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const share = (await post(c.app, a.token, { fileId: file.id })).body.data
    await visitShare(c.app, share, { views: 2, downloads: 1 })
    const counted = { ...share, viewCount: 2, downloadCount: 1 }

    const disabled = await patch(c.app, a.token, share.id, { isActive: false })
    assert.equal(disabled.status, 200)
    assert.deepEqual(disabled.body, { data: { ...counted, isActive: false, state: 'disabled' } })

    const reactivated = await post(c.app, a.token, { fileId: file.id, expiresAt: FUTURE })
    assert.equal(reactivated.status, 201)
    assert.deepEqual(reactivated.body, { data: { ...counted, isActive: true, expiresAt: FUTURE } })

    // Without expiresAt, reactivation removes the old expiry.
    await patch(c.app, a.token, share.id, { isActive: false })
    const again = await post(c.app, a.token, { fileId: file.id })
    assert.equal(again.status, 201)
    assert.deepEqual(again.body, { data: { ...counted, isActive: true, expiresAt: null } })
  })

  test('POST reactivates an expired share (whatever its stored flag) with the expiry of the body', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const share = (await post(c.app, a.token, { fileId: file.id, expiresAt: FUTURE })).body.data

    const expiredAt = await expire(c, share.id)
    const expired = await get(c.app, a.token, share.id)
    assert.equal(expired.body.data.isActive, false)
    assert.equal(expired.body.data.expiresAt, expiredAt)

    const renewed = await post(c.app, a.token, { fileId: file.id, expiresAt: FUTURE_2 })
    assert.equal(renewed.status, 201)
    assert.deepEqual(renewed.body, { data: { ...share, isActive: true, expiresAt: FUTURE_2 } })

    await expire(c, share.id)
    const forever = await post(c.app, a.token, { fileId: file.id })
    assert.deepEqual(forever.body, { data: { ...share, isActive: true, expiresAt: null } })

    // Disabled and expired at once.
    await patch(c.app, a.token, share.id, { isActive: false })
    await expire(c, share.id)
    const both = await post(c.app, a.token, { fileId: file.id })
    assert.deepEqual(both.body, { data: { ...share, isActive: true, expiresAt: null } })
  })

  test('PATCH sets and clears each field', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id, { name: 'a.txt' })
    const share = (await post(c.app, a.token, { fileId: file.id })).body.data
    const steps: [object, object][] = [
      [{ expiresAt: FUTURE }, { isActive: true, state: 'active', expiresAt: FUTURE }],
      [{ isActive: false }, { isActive: false, state: 'disabled', expiresAt: FUTURE }],
      [{ expiresAt: null }, { isActive: false, state: 'disabled', expiresAt: null }],
      [{ isActive: true }, { isActive: true, state: 'active', expiresAt: null }],
      [
        { isActive: false, expiresAt: FUTURE_2 },
        { isActive: false, state: 'disabled', expiresAt: FUTURE_2 },
      ],
      [
        { isActive: true, expiresAt: null },
        { isActive: true, state: 'active', expiresAt: null },
      ],
      [{ isActive: true }, { isActive: true, state: 'active', expiresAt: null }],
    ]
    for (const [body, expected] of steps) {
      const res = await patch(c.app, a.token, share.id, body)
      assert.equal(res.status, 200, JSON.stringify(body))
      assert.deepEqual(res.body, { data: { ...share, ...expected } }, JSON.stringify(body))
      const got = await get(c.app, a.token, share.id)
      assert.deepEqual(got.body, {
        data: { ...share, ...expected, file: { name: 'a.txt', contentType: 'text/plain', size: file.size } },
      })
    }
  })

  test('an expired share is inactive everywhere, and enabling it without a new expiry is a 409', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const share = (await post(c.app, a.token, { fileId: file.id, expiresAt: FUTURE })).body.data
    const expiredAt = await expire(c, share.id)
    const effective = { ...share, isActive: false, state: 'expired', expiresAt: expiredAt }

    assert.deepEqual((await get(c.app, a.token, share.id)).body.data, {
      ...effective,
      file: { name: file.name, contentType: 'text/plain', size: file.size },
    })
    const list = await call(c.app, 'GET', '/api/v1/shares', { token: a.token })
    assert.equal(list.body.data[0].isActive, false)
    assert.equal((await c.app.services.files.get(a.id, file.id)).share?.isActive, false)

    const message = assertError(await patch(c.app, a.token, share.id, { isActive: true }), 409, 'conflict')
    assert.match(message, new RegExp(`expiry ${expiredAt.replace('.', '\\.')} has passed`))
    // Disabling and leaving it alone are fine; the 409 changed nothing.
    const disabled = await patch(c.app, a.token, share.id, { isActive: false })
    // Disabled comes first of the reasons a link does not open.
    assert.deepEqual(disabled.body, { data: { ...effective, state: 'disabled' } })
    assertError(await patch(c.app, a.token, share.id, { isActive: true }), 409, 'conflict')
    assert.deepEqual((await get(c.app, a.token, share.id)).body.data.expiresAt, expiredAt)

    // Enabling together with a new expiry, or with none, works.
    const renewed = await patch(c.app, a.token, share.id, { isActive: true, expiresAt: FUTURE_2 })
    assert.deepEqual(renewed.body, { data: { ...share, isActive: true, expiresAt: FUTURE_2 } })
    await expire(c, share.id)
    const cleared = await patch(c.app, a.token, share.id, { isActive: true, expiresAt: null })
    assert.deepEqual(cleared.body, { data: { ...share, isActive: true, expiresAt: null } })
    // A stored-active but expired share comes back with a new expiry alone.
    await patch(c.app, a.token, share.id, { expiresAt: FUTURE })
    await expire(c, share.id)
    const extended = await patch(c.app, a.token, share.id, { expiresAt: FUTURE_2 })
    assert.deepEqual(extended.body, { data: { ...share, isActive: true, expiresAt: FUTURE_2 } })
  })

  test('an expiry that is not in the future is a 400 on POST and PATCH, and changes nothing', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    for (const expiresAt of ['2000-01-01T00:00:00.000Z', new Date().toISOString()]) {
      const message = assertError(
        await post(c.app, a.token, { fileId: file.id, expiresAt }),
        400,
        'invalid_request',
      )
      assert.equal(message, 'The request body "expiresAt" must be in the future.')
    }
    assert.equal((await c.app.services.files.get(a.id, file.id)).share, null)

    const share = (await post(c.app, a.token, { fileId: file.id, expiresAt: FUTURE })).body.data
    for (const body of [
      { expiresAt: '2000-01-01T00:00:00Z' },
      { isActive: true, expiresAt: '2001-01-01T00:00:00Z' },
    ]) {
      const message = assertError(await patch(c.app, a.token, share.id, body), 400, 'invalid_request')
      assert.equal(message, 'The request body "expiresAt" must be in the future.')
    }
    assert.equal((await get(c.app, a.token, share.id)).body.data.expiresAt, FUTURE)
    // A past expiry is refused even for an active share that POST would otherwise return unchanged.
    assertError(
      await post(c.app, a.token, { fileId: file.id, expiresAt: '2000-01-01T00:00:00Z' }),
      400,
      'invalid_request',
    )
  })

  test('an expiry past the year 9999 is a 400: it could not be written back as an ISO 8601 date', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const last = '9999-12-31T23:59:59.999Z'
    // The offset carries it into the year 10000.
    const message = assertError(
      await post(c.app, a.token, { fileId: file.id, expiresAt: '9999-12-31T23:59:59-23:59' }),
      400,
      'invalid_request',
    )
    assert.equal(message, `The request body "expiresAt" must be no later than ${last}.`)
    const share = (await post(c.app, a.token, { fileId: file.id, expiresAt: last })).body.data
    assert.equal(share.expiresAt, last)
    assertError(
      await patch(c.app, a.token, share.id, { expiresAt: '9999-12-31T23:59:59-00:01' }),
      400,
      'invalid_request',
    )
    // Analytics serialize the stored expiry too.
    const analytics = await call(c.app, 'GET', `/api/v1/analytics?shareId=${share.id}`, { token: a.token })
    assert.equal(analytics.status, 200)
  })

  test('request bounds and types', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const share = (await post(c.app, a.token, { fileId: file.id })).body.data

    // fileId: 1..128 characters; in bounds but unknown is a 404.
    assertError(await post(c.app, a.token, { fileId: chars(128) }), 404, 'not_found')
    assert.match(
      assertError(await post(c.app, a.token, { fileId: chars(129) }), 400, 'invalid_request'),
      /"fileId" must be at most 128/,
    )
    assert.match(
      assertError(await post(c.app, a.token, { fileId: '' }), 400, 'invalid_request'),
      /"fileId" must be at least 1/,
    )
    // shareId: 1..128 characters.
    assertError(await get(c.app, a.token, chars(128)), 404, 'not_found')
    assertError(await patch(c.app, a.token, chars(128), { isActive: false }), 404, 'not_found')
    assert.match(
      assertError(await get(c.app, a.token, chars(129)), 400, 'invalid_request'),
      /"shareId" must be at most 128/,
    )
    assertError(await patch(c.app, a.token, chars(129), { isActive: false }), 400, 'invalid_request')

    const badBodies: [string, unknown, RegExp][] = [
      ['POST', {}, /missing the required field "fileId"/],
      ['POST', { fileId: 5 }, /"fileId" must be a string/],
      ['POST', { fileId: file.id, public: true }, /Unknown field "public"/],
      ['POST', { fileId: file.id, expiresAt: 'tomorrow' }, /"expiresAt" must be a valid ISO 8601 date-time/],
      [
        'POST',
        { fileId: file.id, expiresAt: '2099-01-01' },
        /"expiresAt" must be a valid ISO 8601 date-time/,
      ],
      [
        'POST',
        { fileId: file.id, expiresAt: '2099-13-01T00:00:00Z' },
        /"expiresAt" must be a valid ISO 8601 date-time/,
      ],
      [
        'POST',
        { fileId: file.id, expiresAt: '2099-06-30T23:59:60Z' },
        /"expiresAt" must be a valid ISO 8601 date-time/,
      ],
      ['POST', { fileId: file.id, expiresAt: 4102444800000 }, /"expiresAt"/],
      ['PATCH', {}, /at least one field/],
      ['PATCH', { name: 'x' }, /Unknown field "name"/],
      ['PATCH', { isActive: 'true' }, /"isActive" must be true or false/],
      ['PATCH', { isActive: null }, /"isActive" must be true or false/],
      ['PATCH', { isActive: false, viewCount: 0 }, /Unknown field "viewCount"/],
      ['PATCH', { expiresAt: 'soon' }, /"expiresAt" must be a valid ISO 8601 date-time/],
      ['PATCH', { expiresAt: '2099-06-30T23:59:60Z' }, /"expiresAt" must be a valid ISO 8601 date-time/],
    ]
    for (const [method, body, pattern] of badBodies) {
      const res =
        method === 'POST' ? await post(c.app, a.token, body) : await patch(c.app, a.token, share.id, body)
      assert.match(assertError(res, 400, 'invalid_request'), pattern, `${method} ${JSON.stringify(body)}`)
    }
    assertError(
      await call(c.app, 'POST', '/api/v1/shares', {
        token: a.token,
        rawBody: '{"fileId":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    )
    // None of the refused PATCHes changed the share.
    assert.deepEqual((await get(c.app, a.token, share.id)).body.data.isActive, true)
    assert.deepEqual((await get(c.app, a.token, share.id)).body.data.expiresAt, null)
  })

  test('list bounds: limit 1..100, cursor up to 128 characters, no unknown parameters', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    await post(c.app, a.token, { fileId: (await createFile(c, a.id)).id })
    const list = (query: string) => call(c.app, 'GET', `/api/v1/shares?${query}`, { token: a.token })
    for (const limit of [1, 100]) assert.equal((await list(`limit=${limit}`)).status, 200, `limit ${limit}`)
    assert.match(assertError(await list('limit=0'), 400, 'invalid_request'), /"limit" must be at least 1/)
    assert.match(assertError(await list('limit=101'), 400, 'invalid_request'), /"limit" must be at most 100/)
    assertError(await list('limit=two'), 400, 'invalid_request')
    assertError(await list('limit=1.5'), 400, 'invalid_request')

    // A well-formed cursor of exactly 128 characters passes; one more character is refused.
    const cursor128 = encodeCursor({ createdAt: 9_999_999_999_999, id: chars(82, 'z') })
    assert.equal(cursor128.length, 128)
    const page = await list(`cursor=${cursor128}`)
    assert.equal(page.status, 200)
    assert.equal(page.body.data.length, 1)
    assert.match(
      assertError(await list(`cursor=${cursor128}A`), 400, 'invalid_request'),
      /"cursor" must be at most 128/,
    )
    assert.match(assertError(await list('cursor=nonsense'), 400, 'invalid_request'), /cursor.*malformed/)
    assert.match(assertError(await list('sort=asc'), 400, 'invalid_request'), /sort/)
  })

  test('the list pages newest first, with no repeats or gaps while shares come and go', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    await post(c.app, b.token, { fileId: (await createFile(c, b.id)).id })
    const files: { size: number }[] = []
    const shares: { id: string; createdAt: string }[] = []
    for (let i = 0; i < 7; i++) {
      const file = await createFile(c, a.id, { name: `f${i}.txt` })
      files.push(file)
      shares.push((await post(c.app, a.token, { fileId: file.id })).body.data)
    }
    const byNewest = (x: { createdAt: string; id: string }, y: { createdAt: string; id: string }) =>
      x.createdAt === y.createdAt ? (x.id < y.id ? 1 : -1) : x.createdAt < y.createdAt ? 1 : -1
    const expected = shares
      .map((share, i) => ({
        ...share,
        file: { name: `f${i}.txt`, contentType: 'text/plain', size: files[i]?.size },
      }))
      .sort(byNewest)

    const all = await call(c.app, 'GET', '/api/v1/shares', { token: a.token })
    assert.deepEqual(all.body, { data: expected, pagination: { nextCursor: null } })

    const first = await call(c.app, 'GET', '/api/v1/shares?limit=2', { token: a.token })
    assert.deepEqual(first.body.data, expected.slice(0, 2))
    assert.equal(typeof first.body.pagination.nextCursor, 'string')
    assert.ok(first.body.pagination.nextCursor.length <= 128)

    // Mid-walk: a new share (newer than every cursor) and the deletion of one not yet seen.
    await post(c.app, a.token, { fileId: (await createFile(c, a.id)).id })
    const removed = expected[4]
    assert.ok(removed)
    await c.db.kysely.deleteFrom('shares').where('id', '=', removed.id).execute()

    const seen = [...first.body.data]
    let cursor: string | null = first.body.pagination.nextCursor
    let pages = 1
    while (cursor !== null) {
      const page = await call(c.app, 'GET', `/api/v1/shares?limit=2&cursor=${cursor}`, { token: a.token })
      assert.equal(page.status, 200)
      assert.ok(page.body.data.length <= 2)
      seen.push(...page.body.data)
      cursor = page.body.pagination.nextCursor
      pages++
    }
    assert.deepEqual(
      seen,
      expected.filter((s) => s.id !== removed.id),
    )
    assert.equal(pages, 3)
  })

  test('concurrent POSTs for one file all answer 201 with the same share', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const results = await Promise.all(
      Array.from({ length: 8 }, () => post(c.app, a.token, { fileId: file.id })),
    )
    for (const res of results) {
      assert.equal(res.status, 201)
      assert.deepEqual(res.body, results[0]?.body)
    }
    const count = await c.db.kysely
      .selectFrom('shares')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('file_id', '=', file.id)
      .executeTakeFirstOrThrow()
    assert.equal(Number(count.n), 1)
  })

  test('scopes: shares:read reads, shares:write writes, others are refused; credentials are required', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const file = await createFile(ctx(), a.id)
    const read = await a.key(['shares:read'])
    const write = await a.key(['shares:write'])
    const other = await a.key(['files:read', 'files:write', 'analytics:read'])

    const created = await post(app, write, { fileId: file.id })
    assert.equal(created.status, 201)
    const id = created.body.data.id
    assert.equal((await patch(app, write, id, { isActive: false })).status, 200)
    assert.equal((await call(app, 'GET', '/api/v1/shares', { token: read })).status, 200)
    assert.equal((await get(app, read, id)).status, 200)

    const denied: [string, string, string, unknown?][] = [
      ['GET', '/api/v1/shares', 'shares:read'],
      ['GET', `/api/v1/shares/${id}`, 'shares:read'],
      ['POST', '/api/v1/shares', 'shares:write', { fileId: file.id }],
      ['PATCH', `/api/v1/shares/${id}`, 'shares:write', { isActive: true }],
    ]
    for (const [method, url, scope, body] of denied) {
      const wrong = scope === 'shares:read' ? write : read
      for (const token of [wrong, other]) {
        const message = assertError(await call(app, method, url, { token, body }), 403, 'insufficient_scope')
        assert.match(message, new RegExp(scope))
      }
      assertError(await call(app, method, url, { body }), 401, 'unauthorized')
      assertError(await call(app, method, url, { token: 'coffer_unknown', body }), 401, 'unauthorized')
    }
    // The refused PATCH did not run.
    assert.equal((await get(app, read, id)).body.data.isActive, false)
  })

  test('another account gets 404 for every share operation and sees none of the shares', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const share = (await post(c.app, a.token, { fileId: file.id })).body.data

    assert.match(
      assertError(await post(c.app, b.token, { fileId: file.id }), 404, 'not_found'),
      new RegExp(file.id),
    )
    assertError(await get(c.app, b.token, share.id), 404, 'not_found')
    assertError(await patch(c.app, b.token, share.id, { isActive: false }), 404, 'not_found')
    assertError(await patch(c.app, b.token, share.id, { expiresAt: FUTURE }), 404, 'not_found')
    assert.deepEqual((await call(c.app, 'GET', '/api/v1/shares', { token: b.token })).body, {
      data: [],
      pagination: { nextCursor: null },
    })
    // A's share is untouched.
    assert.deepEqual((await get(c.app, a.token, share.id)).body.data, {
      ...share,
      file: { name: file.name, contentType: 'text/plain', size: file.size },
    })
    // B's own file is shared separately.
    const own = await post(c.app, b.token, { fileId: (await createFile(c, b.id)).id })
    assert.equal(own.status, 201)
    assert.notEqual(own.body.data.id, share.id)
  })

  test('deleting the file removes its share', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const kept = await createFile(c, a.id)
    const share = (await post(c.app, a.token, { fileId: file.id })).body.data
    const keptShare = (await post(c.app, a.token, { fileId: kept.id })).body.data

    await c.db.kysely.deleteFrom('files').where('id', '=', file.id).execute()
    assertError(await get(c.app, a.token, share.id), 404, 'not_found')
    assertError(await patch(c.app, a.token, share.id, { isActive: false }), 404, 'not_found')
    assertError(await post(c.app, a.token, { fileId: file.id }), 404, 'not_found')
    const list = await call(c.app, 'GET', '/api/v1/shares', { token: a.token })
    assert.deepEqual(
      list.body.data.map((s: { id: string }) => s.id),
      [keptShare.id],
    )
    const rows = await c.db.kysely.selectFrom('shares').select('id').where('id', '=', share.id).execute()
    assert.equal(rows.length, 0)
    // The link is gone with its file.
    assert.equal((await c.app.inject({ method: 'GET', url: `/s/${publicIdOf(share)}` })).statusCode, 404)
  })

  test('the public link opens while the share works: 404 unknown, 410 disabled or expired', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id, { name: 'pic.png', contentType: 'image/png' })
    const share = (await post(c.app, a.token, { fileId: file.id, expiresAt: FUTURE })).body.data
    const page = `/s/${publicIdOf(share)}`
    const status = async (url: string) => (await c.app.inject({ method: 'GET', url })).statusCode

    assert.equal(await status(page), 200)
    assert.equal(await status(`/s/${chars(32, 'x')}`), 404)
    await patch(c.app, a.token, share.id, { isActive: false })
    assert.equal(await status(page), 410)
    await patch(c.app, a.token, share.id, { isActive: true })
    assert.equal(await status(page), 200)
    await expire(c, share.id, 1)
    assert.equal(await status(page), 410)
    assert.equal(await status(`${page}/download`), 410)
  })

  test('views and downloads count exactly under concurrency', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const share = (await post(c.app, a.token, { fileId: file.id })).body.data
    const other = (await post(c.app, a.token, { fileId: (await createFile(c, a.id)).id })).body.data
    await visitShare(c.app, share, { views: 25, downloads: 10 })
    assert.deepEqual((await get(c.app, a.token, share.id)).body.data, {
      ...share,
      viewCount: 25,
      downloadCount: 10,
      file: { name: file.name, contentType: 'text/plain', size: file.size },
    })
    assert.equal((await get(c.app, a.token, other.id)).body.data.viewCount, 0)
  })
})
