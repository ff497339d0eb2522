// File requests as their owner sees them: creation, reading and changes with their full shapes, moves
// between folders with the folder counts kept exact, the email settings, every bound of bodies, paths and
// queries, scopes and other accounts, and pagination that neither repeats nor skips while requests come and
// go. What is submitted through a request is in requests-submissions.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import type { Scope } from '../src/platform/auth/scopes.ts'
import {
  ALL,
  assertError,
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  ISO_MS,
} from './support/harness.ts'
import { newFolder, newRequest, publicIdOf, REQUESTS, tick } from './support/requests-helpers.ts'
import { publicApi } from './support/submissions.ts'

async function requestCountOf(app: App, token: string, folderId: string): Promise<number> {
  const res = await call(app, 'GET', `/api/v1/folders/${folderId}`, { token })
  assert.equal(res.status, 200)
  return res.body.data.requestCount
}

/** Walks a list of requests to its end, `limit` items a page, calling `between` after each page but the last. */
async function walk(
  app: App,
  token: string,
  url: string,
  limit: number,
  between: (page: number) => Promise<void> = async () => {},
): Promise<string[][]> {
  const pages: string[][] = []
  let cursor: string | null = null
  do {
    const query: string = cursor === null ? `limit=${limit}` : `limit=${limit}&cursor=${cursor}`
    const res = await call(app, 'GET', `${url}${url.includes('?') ? '&' : '?'}${query}`, { token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.ok(res.body.data.length <= limit)
    pages.push(res.body.data.map((item: { id: string }) => item.id))
    cursor = res.body.pagination.nextCursor
    if (cursor !== null) {
      assert.ok(cursor.length <= 128)
      await between(pages.length)
    }
  } while (cursor !== null)
  return pages
}

describeEachEngine('file requests', (ctx) => {
  test('create with defaults, get and list: full shapes', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const created = await call(app, 'POST', REQUESTS, { token: a.token, body: { title: 'Tax documents' } })
    assert.equal(created.status, 201)
    const r = created.body.data
    assert.match(r.id, /^req_[0-9a-z]{26}$/)
    assert.match(r.createdAt, ISO_MS)
    publicIdOf(r)
    assert.deepEqual(created.body, {
      data: {
        id: r.id,
        title: 'Tax documents',
        description: null,
        collectEmail: true,
        emailRequired: true,
        isActive: true,
        state: 'open',
        createdAt: r.createdAt,
        publicUrl: r.publicUrl,
        folderId: null,
        folder: null,
      },
    })

    const got = await call(app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
    assert.equal(got.status, 200)
    assert.deepEqual(got.body, { data: { ...r, submissionCount: 0 } })

    const list = await call(app, 'GET', REQUESTS, { token: a.token })
    assert.equal(list.status, 200)
    assert.deepEqual(list.body, { data: [{ ...r, submissionCount: 0 }], pagination: { nextCursor: null } })

    // Public links are unguessable and distinct.
    const other = await newRequest(app, a.token)
    assert.notEqual(publicIdOf(other), publicIdOf(r))
  })

  test('create with every field: the folder is embedded with its counts', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await newFolder(c.app, a.token, 'Inbox')
    await createFile(c, a.id, { folderId: folder.id })
    const created = await call(c.app, 'POST', REQUESTS, {
      token: a.token,
      body: {
        title: 'Photos from the trip',
        description: 'Everything you took',
        collectEmail: true,
        emailRequired: false,
        folderId: folder.id,
      },
    })
    assert.equal(created.status, 201)
    const r = created.body.data
    assert.deepEqual(created.body, {
      data: {
        id: r.id,
        title: 'Photos from the trip',
        description: 'Everything you took',
        collectEmail: true,
        emailRequired: false,
        isActive: true,
        state: 'open',
        createdAt: r.createdAt,
        publicUrl: r.publicUrl,
        folderId: folder.id,
        folder: { ...folder, fileCount: 1, requestCount: 1 },
      },
    })
    assert.equal(await requestCountOf(c.app, a.token, folder.id), 1)
    const got = await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
    assert.deepEqual(got.body, { data: { ...r, submissionCount: 0 } })

    const explicitRoot = await newRequest(c.app, a.token, { folderId: null })
    assert.equal(explicitRoot.folderId, null)
    assert.equal(explicitRoot.folder, null)
  })

  test('PATCH changes each field and answers the whole FileRequest', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    let r = await newRequest(app, a.token, { description: 'old' })
    const patch = async (body: Record<string, unknown>) => {
      const res = await call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return res.body
    }
    const steps: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ title: 'New title' }, { title: 'New title' }],
      [{ description: 'Fresh words' }, { description: 'Fresh words' }],
      [{ description: null }, { description: null }],
      [{ emailRequired: false }, { emailRequired: false }],
      [{ emailRequired: true }, { emailRequired: true }],
      [{ isActive: false }, { isActive: false, state: 'disabled' }],
      [{ isActive: true }, { isActive: true, state: 'open' }],
      [{ collectEmail: false }, { collectEmail: false, emailRequired: false }],
      [{ collectEmail: true }, { collectEmail: true }],
      [
        { title: 'Both', description: 'd', isActive: false },
        { title: 'Both', description: 'd', isActive: false, state: 'disabled' },
      ],
    ]
    for (const [body, change] of steps) {
      const expected = { ...r, ...change }
      assert.deepEqual(await patch(body), { data: expected }, JSON.stringify(body))
      r = expected
      const got = await call(app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
      assert.deepEqual(got.body, { data: { ...r, submissionCount: 0 } }, JSON.stringify(body))
    }
  })

  test('descriptions are stored with \\n for each line break, as sent by a form (\\r\\n) or an old file (\\r)', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const created = await call(c.app, 'POST', REQUESTS, {
      token: a.token,
      body: { title: 'Receipts', description: 'Line one\r\nLine two\rLine three\n' },
    })
    assert.equal(created.status, 201)
    assert.equal(created.body.data.description, 'Line one\nLine two\nLine three\n')
    const patched = await call(c.app, 'PATCH', `${REQUESTS}/${created.body.data.id}`, {
      token: a.token,
      body: { description: 'One\r\n\r\nTwo' },
    })
    assert.equal(patched.body.data.description, 'One\n\nTwo')
    const page = await call(c.app, 'GET', publicApi(publicIdOf(created.body.data)))
    assert.equal(page.body.data.description, 'One\n\nTwo')
  })

  test('PATCH folderId moves in, between and out of folders, keeping both counts exact', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const f1 = await newFolder(app, a.token, 'One')
    const f2 = await newFolder(app, a.token, 'Two')
    const r = await newRequest(app, a.token)
    const move = async (folderId: string | null) => {
      const res = await call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { folderId } })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return res.body
    }
    const counts = async () => [
      await requestCountOf(app, a.token, f1.id),
      await requestCountOf(app, a.token, f2.id),
    ]
    assert.deepEqual(await counts(), [0, 0])

    assert.deepEqual(await move(f1.id), {
      data: { ...r, folderId: f1.id, folder: { ...f1, requestCount: 1 } },
    })
    assert.deepEqual(await counts(), [1, 0])

    // Moving to the folder it is already in changes nothing.
    assert.deepEqual(await move(f1.id), {
      data: { ...r, folderId: f1.id, folder: { ...f1, requestCount: 1 } },
    })
    assert.deepEqual(await counts(), [1, 0])

    assert.deepEqual(await move(f2.id), {
      data: { ...r, folderId: f2.id, folder: { ...f2, requestCount: 1 } },
    })
    assert.deepEqual(await counts(), [0, 1])

    assert.deepEqual(await move(null), { data: { ...r, folderId: null, folder: null } })
    assert.deepEqual(await counts(), [0, 0])

    // An absent folder is a 404 and changes nothing.
    await move(f1.id)
    assertError(
      await call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { folderId: 'fld_nope' } }),
      404,
      'not_found',
    )
    assert.deepEqual(await counts(), [1, 0])
    const got = await call(app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
    assert.equal(got.body.data.folderId, f1.id)
  })

  test('concurrent moves of one request keep the folder counts exact', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const folders = [
      await newFolder(app, a.token),
      await newFolder(app, a.token),
      await newFolder(app, a.token),
    ]
    const r = await newRequest(app, a.token, { folderId: folders[0].id })
    const targets = Array.from({ length: 12 }, (_, i) => (i % 4 === 3 ? null : folders[i % 3].id))
    const results = await Promise.all(
      targets.map((folderId) =>
        call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body: { folderId } }),
      ),
    )
    for (const res of results) assert.equal(res.status, 200, JSON.stringify(res.body))
    const final = (await call(app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })).body.data.folderId
    const counts = await Promise.all(folders.map((f) => requestCountOf(app, a.token, f.id)))
    assert.deepEqual(
      counts,
      folders.map((f) => (f.id === final ? 1 : 0)),
    )
  })

  test('deleting its folder moves a request to root', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const folder = await newFolder(app, a.token)
    const r = await newRequest(app, a.token, { folderId: folder.id })
    assert.equal((await call(app, 'DELETE', `/api/v1/folders/${folder.id}`, { token: a.token })).status, 200)
    const got = await call(app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
    assert.deepEqual(got.body, { data: { ...r, folderId: null, folder: null, submissionCount: 0 } })
  })

  test('collectEmail and emailRequired: an email that is not collected is never required', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const pair = (r: { collectEmail: boolean; emailRequired: boolean }) => [r.collectEmail, r.emailRequired]

    // Creation: defaults, the implied false, and the contradictory pair.
    assert.deepEqual(pair(await newRequest(app, a.token)), [true, true])
    assert.deepEqual(pair(await newRequest(app, a.token, { emailRequired: false })), [true, false])
    assert.deepEqual(pair(await newRequest(app, a.token, { collectEmail: true })), [true, true])
    assert.deepEqual(pair(await newRequest(app, a.token, { collectEmail: false })), [false, false])
    assert.deepEqual(pair(await newRequest(app, a.token, { collectEmail: false, emailRequired: false })), [
      false,
      false,
    ])
    assert.match(
      assertError(
        await call(app, 'POST', REQUESTS, {
          token: a.token,
          body: { title: 'Contradiction', collectEmail: false, emailRequired: true },
        }),
        400,
        'invalid_request',
      ),
      /emailRequired.*collectEmail/,
    )

    // Updates.
    const r = await newRequest(app, a.token)
    const patch = (body: Record<string, unknown>) =>
      call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body })
    assertError(await patch({ collectEmail: false, emailRequired: true }), 400, 'invalid_request')
    assert.deepEqual(pair((await patch({ collectEmail: false })).body.data), [false, false])
    assert.match(
      assertError(await patch({ emailRequired: true }), 409, 'conflict'),
      /collectEmail.*emailRequired/,
    )
    assert.deepEqual(pair((await patch({ emailRequired: false })).body.data), [false, false])
    assert.deepEqual(pair((await patch({ collectEmail: true })).body.data), [true, false])
    assert.deepEqual(pair((await patch({ collectEmail: false })).body.data), [false, false])
    assert.deepEqual(pair((await patch({ collectEmail: true, emailRequired: true })).body.data), [true, true])
    const got = await call(app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
    assert.deepEqual(pair(got.body.data), [true, true])
  })

  test('POST body bounds, types and strictness', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const post = (body: unknown) => call(app, 'POST', REQUESTS, { token: a.token, body })
    const refused = async (body: unknown, message: RegExp) =>
      assert.match(assertError(await post(body), 400, 'invalid_request'), message, JSON.stringify(body))

    for (const title of [chars(3, 't'), chars(100, 'u')]) {
      const res = await post({ title })
      assert.equal(res.status, 201)
      assert.equal(res.body.data.title, title)
    }
    await refused({ title: chars(2) }, /title.*at least 3/)
    await refused({ title: chars(101) }, /title.*at most 100/)
    // Outer spaces do not count towards the title.
    assert.equal((await post({ title: '  Hey  ' })).body.data.title, 'Hey')
    await refused({ title: '  ab  ' }, /title.*at least 3/)

    assert.equal(
      (await post({ title: 'Desc', description: chars(500, 'd') })).body.data.description.length,
      500,
    )
    assert.equal((await post({ title: 'Desc', description: '' })).body.data.description, '')
    await refused({ title: 'Desc', description: chars(501) }, /description.*at most 500/)

    await refused({ title: 'Folder', folderId: '' }, /folderId.*at least 1/)
    await refused({ title: 'Folder', folderId: chars(101) }, /folderId.*at most 100/)
    // 1 and 100 characters pass validation and are then looked up: absent, so 404.
    assertError(await post({ title: 'Folder', folderId: 'x' }), 404, 'not_found')
    assertError(await post({ title: 'Folder', folderId: chars(100) }), 404, 'not_found')

    await refused({}, /title/)
    await refused({ description: 'no title' }, /title/)
    await refused({ title: 'Strict', color: 'red' }, /color/)
    await refused({ title: 5 }, /title.*string/)
    await refused({ title: 'Types', description: 5 }, /description.*string/)
    await refused({ title: 'Types', description: null }, /description/)
    await refused({ title: 'Types', collectEmail: 'true' }, /collectEmail.*true or false/)
    await refused({ title: 'Types', emailRequired: 1 }, /emailRequired.*true or false/)
    await refused({ title: 'Types', folderId: 5 }, /folderId/)
    await refused([], /request body/)
    assertError(
      await call(app, 'POST', REQUESTS, {
        token: a.token,
        rawBody: '{"title":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    )
    // Nothing refused was created.
    const list = await call(app, 'GET', `${REQUESTS}?limit=100`, { token: a.token })
    assert.equal(list.body.data.length, 5)
  })

  test('PATCH body bounds, types and strictness', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const r = await newRequest(app, a.token, { description: 'keep' })
    const patch = (body: unknown) => call(app, 'PATCH', `${REQUESTS}/${r.id}`, { token: a.token, body })
    const refused = async (body: unknown, message: RegExp) =>
      assert.match(assertError(await patch(body), 400, 'invalid_request'), message, JSON.stringify(body))

    await refused({}, /at least one/)
    await refused({ colour: 'red' }, /colour/)
    await refused({ title: 'Fine', colour: 'red' }, /colour/)
    await refused({ title: chars(2) }, /title.*at least 3/)
    await refused({ title: chars(101) }, /title.*at most 100/)
    await refused({ title: '   ' }, /title.*at least 3/)
    await refused({ title: null }, /title/)
    await refused({ description: chars(501) }, /description.*at most 500/)
    await refused({ description: 5 }, /description/)
    await refused({ folderId: '' }, /folderId.*at least 1/)
    await refused({ folderId: chars(101) }, /folderId.*at most 100/)
    await refused({ isActive: 'false' }, /isActive.*true or false/)
    await refused({ isActive: null }, /isActive.*true or false/)
    await refused({ collectEmail: 0 }, /collectEmail.*true or false/)
    await refused({ emailRequired: 'yes' }, /emailRequired.*true or false/)
    assertError(await patch({ folderId: 'x' }), 404, 'not_found')
    assertError(await patch({ folderId: chars(100) }), 404, 'not_found')
    // Nothing refused was applied.
    const got = await call(app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
    assert.deepEqual(got.body, { data: { ...r, submissionCount: 0 } })

    for (const title of [chars(3, 'p'), chars(100, 'q')]) {
      assert.equal((await patch({ title })).body.data.title, title)
    }
    assert.equal((await patch({ description: chars(500, 'e') })).body.data.description.length, 500)
  })

  test('path and query bounds: requestId, limit, cursor, folderId', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const r = await newRequest(app, a.token)

    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { title: 'Anything' }],
      ['GET', '/submissions', undefined],
    ] as const) {
      assertError(
        await call(app, method, `${REQUESTS}/${chars(128)}${suffix}`, { token: a.token, body }),
        404,
        'not_found',
      )
      assert.match(
        assertError(
          await call(app, method, `${REQUESTS}/${chars(129)}${suffix}`, { token: a.token, body }),
          400,
          'invalid_request',
        ),
        /requestId.*at most 128/,
      )
    }

    // A well-formed cursor of exactly 128 characters, placed after every real item: an empty page.
    const cursor128 = Buffer.from(`1.${chars(94, 'z')}`).toString('base64url')
    assert.equal(cursor128.length, 128)
    const cursorFirst = Buffer.from(`999999999999999.${chars(80, 'z')}`).toString('base64url')
    assert.equal(cursorFirst.length, 128)

    for (const url of [REQUESTS, `${REQUESTS}/${r.id}/submissions`]) {
      const get = (query: string) => call(app, 'GET', `${url}?${query}`, { token: a.token })
      for (const limit of [1, 100]) assert.equal((await get(`limit=${limit}`)).status, 200, `${url} ${limit}`)
      assert.match(assertError(await get('limit=0'), 400, 'invalid_request'), /limit.*at least 1/)
      assert.match(assertError(await get('limit=101'), 400, 'invalid_request'), /limit.*at most 100/)
      assert.match(assertError(await get('limit=ten'), 400, 'invalid_request'), /limit.*integer/)
      assert.match(assertError(await get('limit=1.5'), 400, 'invalid_request'), /limit.*integer/)
      assert.deepEqual((await get(`cursor=${cursor128}`)).body, {
        data: [],
        pagination: { nextCursor: null },
      })
      assert.equal((await get(`cursor=${cursorFirst}`)).status, 200)
      assert.match(
        assertError(await get(`cursor=${cursor128}A`), 400, 'invalid_request'),
        /cursor.*at most 128/,
      )
      assert.match(assertError(await get('cursor=%21%21%21'), 400, 'invalid_request'), /cursor.*malformed/)
      assert.match(assertError(await get('sort=asc'), 400, 'invalid_request'), /sort/)
    }
    const list = await call(app, 'GET', `${REQUESTS}?cursor=${cursorFirst}`, { token: a.token })
    assert.deepEqual(
      list.body.data.map((x: { id: string }) => x.id),
      [r.id],
    )

    const filter = (folderId: string) =>
      call(app, 'GET', `${REQUESTS}?folderId=${folderId}`, { token: a.token })
    assert.match(assertError(await filter(''), 400, 'invalid_request'), /folderId.*at least 1/)
    assert.match(assertError(await filter(chars(101)), 400, 'invalid_request'), /folderId.*at most 100/)
    assertError(await filter('x'), 404, 'not_found')
    assertError(await filter(chars(100)), 404, 'not_found')
  })

  test('folderId filters the list to one folder', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const f1 = await newFolder(app, a.token)
    const f2 = await newFolder(app, a.token)
    const inF1 = await newRequest(app, a.token, { folderId: f1.id })
    await tick()
    const atRoot = await newRequest(app, a.token)
    await tick()
    const alsoInF1 = await newRequest(app, a.token, { folderId: f1.id })
    await tick()
    const inF2 = await newRequest(app, a.token, { folderId: f2.id })

    const f1Now = { ...f1, requestCount: 2 }
    const list = await call(app, 'GET', `${REQUESTS}?folderId=${f1.id}`, { token: a.token })
    assert.deepEqual(list.body, {
      data: [
        { ...alsoInF1, folder: f1Now, submissionCount: 0 },
        { ...inF1, folder: f1Now, submissionCount: 0 },
      ],
      pagination: { nextCursor: null },
    })
    const empty = await newFolder(app, a.token)
    assert.deepEqual((await call(app, 'GET', `${REQUESTS}?folderId=${empty.id}`, { token: a.token })).body, {
      data: [],
      pagination: { nextCursor: null },
    })
    const all = await call(app, 'GET', REQUESTS, { token: a.token })
    assert.deepEqual(
      all.body.data.map((x: { id: string }) => x.id),
      [inF2.id, alsoInF1.id, atRoot.id, inF1.id],
    )
    // The filter pages like the full list.
    const pages = await walk(app, a.token, `${REQUESTS}?folderId=${f1.id}`, 1)
    assert.deepEqual(pages, [[alsoInF1.id], [inF1.id]])
  })

  test('scopes: each operation needs its scope (403 names it), and a credential (401)', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const r = await newRequest(app, a.token)
    const operations: [string, string, unknown, Scope][] = [
      ['GET', REQUESTS, undefined, 'requests:read'],
      ['POST', REQUESTS, { title: 'Scoped' }, 'requests:write'],
      ['GET', `${REQUESTS}/${r.id}`, undefined, 'requests:read'],
      ['PATCH', `${REQUESTS}/${r.id}`, { title: 'Scoped too' }, 'requests:write'],
      ['GET', `${REQUESTS}/${r.id}/submissions`, undefined, 'requests:read'],
    ]
    for (const [method, url, body, scope] of operations) {
      const what = `${method} ${url}`
      const allowed = await call(app, method, url, { token: await a.key([scope]), body })
      assert.ok(allowed.status === 200 || allowed.status === 201, `${what}: ${allowed.status}`)
      const others = await a.key(ALL.filter((s) => s !== scope))
      const denied = await call(app, method, url, { token: others, body })
      assert.ok(assertError(denied, 403, 'insufficient_scope').includes(scope), what)
      assertError(await call(app, method, url, { body }), 401, 'unauthorized')
      const bogus = await call(app, method, url, { token: 'coffer_not-a-real-key', body })
      assertError(bogus, 401, 'unauthorized')
      assert.match(String(bogus.headers['www-authenticate']), /^Bearer/)
    }
    // Moving a request needs only requests:write.
    const folder = await newFolder(app, a.token)
    const moved = await call(app, 'PATCH', `${REQUESTS}/${r.id}`, {
      token: await a.key(['requests:write']),
      body: { folderId: folder.id },
    })
    assert.equal(moved.status, 200)
    assert.equal(moved.body.data.folderId, folder.id)
  })

  test("another account's requests and folders are 404 everywhere", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const aFolder = await newFolder(c.app, a.token)
    const r = await newRequest(c.app, a.token, { folderId: aFolder.id })

    assertError(await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: b.token }), 404, 'not_found')
    assertError(
      await call(c.app, 'PATCH', `${REQUESTS}/${r.id}`, { token: b.token, body: { isActive: false } }),
      404,
      'not_found',
    )
    assertError(
      await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: b.token }),
      404,
      'not_found',
    )
    assert.deepEqual((await call(c.app, 'GET', REQUESTS, { token: b.token })).body, {
      data: [],
      pagination: { nextCursor: null },
    })

    // A's folder, named by B: in a new request, a move and a list filter.
    assertError(
      await call(c.app, 'POST', REQUESTS, {
        token: b.token,
        body: { title: 'Sneaky', folderId: aFolder.id },
      }),
      404,
      'not_found',
    )
    const bRequest = await newRequest(c.app, b.token)
    assertError(
      await call(c.app, 'PATCH', `${REQUESTS}/${bRequest.id}`, {
        token: b.token,
        body: { folderId: aFolder.id },
      }),
      404,
      'not_found',
    )
    assertError(
      await call(c.app, 'GET', `${REQUESTS}?folderId=${aFolder.id}`, { token: b.token }),
      404,
      'not_found',
    )
    assert.equal(await requestCountOf(c.app, a.token, aFolder.id), 1)
    assert.deepEqual((await call(c.app, 'GET', REQUESTS, { token: b.token })).body.data, [
      { ...bRequest, submissionCount: 0 },
    ])

    // Untouched for its owner.
    const got = await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
    assert.deepEqual(got.body, { data: { ...r, submissionCount: 0 } })
  })

  test('request pagination stays correct while requests are added and removed mid-walk', async () => {
    const { app, db } = ctx()
    const a = await createAccount(app)
    const made: string[] = []
    for (let i = 0; i < 7; i++) {
      made.push((await newRequest(app, a.token, { title: `Request ${i}` })).id)
      await tick()
    }
    const newestFirst = [...made].reverse()
    let added = ''
    let lateOld = ''
    const pages = await walk(app, a.token, REQUESTS, 2, async (page) => {
      if (page !== 1) return
      // A newer request lands before the cursor: not in this walk.
      added = (await newRequest(app, a.token, { title: 'Added mid-walk' })).id
      // An old one lands after it: met at the end.
      lateOld = (await newRequest(app, a.token, { title: 'Backdated' })).id
      await db.kysely.updateTable('file_requests').set({ created_at: 1 }).where('id', '=', lateOld).execute()
      // One not yet seen, and the row the cursor names, both disappear.
      await db.kysely
        .deleteFrom('file_requests')
        .where('id', 'in', [newestFirst[3] as string, newestFirst[1] as string])
        .execute()
    })
    assert.deepEqual(pages, [
      [newestFirst[0], newestFirst[1]],
      [newestFirst[2], newestFirst[4]],
      [newestFirst[5], newestFirst[6]],
      [lateOld],
    ])
    const seen = pages.flat()
    assert.ok(!seen.includes(added))
    assert.equal(new Set(seen).size, seen.length)
  })

  test('requests made in the same millisecond page by id, without repeats or gaps', async () => {
    const { app, db } = ctx()
    const a = await createAccount(app)
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.push((await newRequest(app, a.token)).id)
    await db.kysely
      .updateTable('file_requests')
      .set({ created_at: 1_700_000_000_000 })
      .where('id', 'in', ids)
      .execute()
    const pages = await walk(app, a.token, REQUESTS, 2)
    assert.deepEqual(pages.flat(), [...ids].sort().reverse())
    assert.deepEqual(
      pages.map((p) => p.length),
      [2, 2, 1],
    )
  })
})
