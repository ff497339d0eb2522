// Reading files through the API: GET /files/{fileId} and GET /files in full (folder and share embedded), the
// list's bounds, and pagination that neither repeats nor skips while files come and go; then what another
// account and keys without the right scope are refused. Search, changes and the read path's machinery have
// test files of their own (files-search, files-changes and files-read-path).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Scope } from '../src/platform/auth/scopes.ts'
import type { StoredFile } from '../src/resources/files/files.repository.ts'
import {
  createFolder,
  fileJson,
  folderCounts,
  insertShare,
  iso,
  newestFirst,
  walk,
} from './support/files-helpers.ts'
import { assertError, call, chars, createAccount, createFile, describeEachEngine } from './support/harness.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describeEachEngine('files', (ctx) => {
  test('get and list files with full shapes: folder embedded, share null', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Invoices')
    const inFolder = await createFile(c, a.id, {
      name: 'march.pdf',
      contentType: 'application/pdf',
      folderId: folder.id,
    })
    await sleep(2)
    const atRoot = await createFile(c, a.id, { name: 'notes.txt', content: 'hello' })
    const folderJson = { ...folder, fileCount: 1 }

    const got = await call(c.app, 'GET', `/api/v1/files/${inFolder.id}`, { token: a.token })
    assert.equal(got.status, 200)
    assert.deepEqual(got.body, { data: fileJson(inFolder, folderJson) })
    assert.equal(got.body.data.size, inFolder.content.length)

    const root = await call(c.app, 'GET', `/api/v1/files/${atRoot.id}`, { token: a.token })
    assert.deepEqual(root.body, {
      data: {
        id: atRoot.id,
        name: 'notes.txt',
        contentType: 'text/plain',
        size: 5,
        createdAt: iso(atRoot.createdAt),
        share: null,
        folderId: null,
        folder: null,
        previewUrl: null,
      },
    })

    const list = await call(c.app, 'GET', '/api/v1/files', { token: a.token })
    assert.equal(list.status, 200)
    assert.deepEqual(list.body, {
      data: [fileJson(atRoot), fileJson(inFolder, folderJson)],
      pagination: { nextCursor: null },
    })

    const filtered = await call(c.app, 'GET', `/api/v1/files?folderId=${folder.id}`, { token: a.token })
    assert.deepEqual(filtered.body, {
      data: [fileJson(inFolder, folderJson)],
      pagination: { nextCursor: null },
    })

    const empty = await createFolder(c.app, a, 'Empty')
    const none = await call(c.app, 'GET', `/api/v1/files?folderId=${empty.id}`, { token: a.token })
    assert.deepEqual(none.body, { data: [], pagination: { nextCursor: null } })
  })

  test('a share is summarised with its public URL and its effective state', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const active = await createFile(c, a.id, { name: 'shared.txt' })
    const expired = await createFile(c, a.id, { name: 'expired.txt' })
    const disabled = await createFile(c, a.id, { name: 'disabled.txt' })
    const future = Date.now() + 3_600_000
    const s1 = await insertShare(c, a.id, active.id, {
      isActive: true,
      expiresAt: future,
      viewCount: 7,
      downloadCount: 3,
    })
    const s2 = await insertShare(c, a.id, expired.id, {
      isActive: true,
      expiresAt: Date.now() - 1000,
      viewCount: 0,
      downloadCount: 0,
    })
    const s3 = await insertShare(c, a.id, disabled.id, {
      isActive: false,
      expiresAt: null,
      viewCount: 1,
      downloadCount: 0,
    })
    const summary = (s: typeof s1) => ({
      id: s.id,
      publicId: s.public_id,
      publicUrl: `http://coffer.test/s/${s.public_id}`,
      isActive: s === s1,
      state: s === s1 ? 'active' : s === s2 ? 'expired' : 'disabled',
      expiresAt: s.expires_at === null ? null : iso(s.expires_at),
      viewCount: s.view_count,
      downloadCount: s.download_count,
    })
    const got = await call(c.app, 'GET', `/api/v1/files/${active.id}`, { token: a.token })
    assert.deepEqual(got.body, { data: fileJson(active, null, summary(s1)) })
    const list = await call(c.app, 'GET', '/api/v1/files', { token: a.token })
    assert.deepEqual(
      list.body.data,
      newestFirst([
        { ...active, json: fileJson(active, null, summary(s1)) },
        { ...expired, json: fileJson(expired, null, summary(s2)) },
        { ...disabled, json: fileJson(disabled, null, summary(s3)) },
      ]).map((f) => f.json),
    )
  })

  test('list bounds: limit, cursor, query, folderId and unknown parameters', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const files = []
    for (let i = 0; i < 101; i++) files.push(await createFile(c, a.id, { name: `bulk-${i}.txt` }))
    const ordered = newestFirst(files).map((f) => f.id)
    const list = (query: string) => call(c.app, 'GET', `/api/v1/files${query}`, { token: a.token })

    const byDefault = await list('')
    assert.deepEqual(
      byDefault.body.data.map((f: { id: string }) => f.id),
      ordered.slice(0, 50),
    )
    assert.equal(typeof byDefault.body.pagination.nextCursor, 'string')
    assert.ok(byDefault.body.pagination.nextCursor.length <= 128)

    const one = await list('?limit=1')
    assert.deepEqual(
      one.body.data.map((f: { id: string }) => f.id),
      ordered.slice(0, 1),
    )
    const hundred = await list('?limit=100')
    assert.deepEqual(
      hundred.body.data.map((f: { id: string }) => f.id),
      ordered.slice(0, 100),
    )
    const rest = await list(`?limit=100&cursor=${hundred.body.pagination.nextCursor}`)
    assert.deepEqual(rest.body, {
      data: [fileJson(files[0] as StoredFile)],
      pagination: { nextCursor: null },
    })

    for (const [query, pattern] of [
      ['?limit=0', /limit.*at least 1/],
      ['?limit=101', /limit.*at most 100/],
      ['?limit=1.5', /limit.*integer/],
      ['?limit=ten', /limit.*integer/],
      [`?cursor=${chars(129)}`, /cursor.*at most 128/],
      [`?cursor=${chars(128)}`, /cursor.*malformed/],
      ['?cursor=bm90LWEtY3Vyc29y', /cursor.*malformed/],
      ['?query=bulk&cursor=bm90LWEtY3Vyc29y', /cursor.*malformed/],
      ['?query=', /query.*at least 1/],
      [`?query=${chars(201)}`, /query.*at most 200/],
      ['?folderId=', /folderId.*at least 1/],
      [`?folderId=${chars(101)}`, /folderId.*at most 100/],
      ['?sort=random', /sort/],
      ['?sort=name&query=bulk', /newest first/],
    ] as const) {
      assert.match(assertError(await list(query), 400, 'invalid_request'), pattern, query)
    }
    assert.deepEqual((await list(`?query=${chars(200)}`)).body, {
      data: [],
      pagination: { nextCursor: null },
    })
    assert.deepEqual((await list('?query=bulk-100')).body.data, [fileJson(files[100] as StoredFile)])
    assertError(await list(`?folderId=${chars(100)}`), 404, 'not_found')
    assertError(await list('?folderId=fld_absent'), 404, 'not_found')
  })

  test('pagination walks neither repeat nor skip while files are added and deleted', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const files = []
    // Several files share a millisecond here, so the id breaks ties.
    for (let i = 0; i < 20; i++) files.push(await createFile(c, a.id, { name: `walk-${i}` }))
    const expected = newestFirst(files).map((f) => f.id)
    assert.deepEqual(await walk(c.app, a.token, '', 3), expected)
    await sleep(2)

    const seen: string[] = []
    const page = async (cursor: string | null) => {
      const res = await call(c.app, 'GET', `/api/v1/files?limit=3${cursor ? `&cursor=${cursor}` : ''}`, {
        token: a.token,
      })
      assert.equal(res.status, 200)
      seen.push(...res.body.data.map((f: { id: string }) => f.id))
      return res.body.pagination.nextCursor as string | null
    }
    const del = async (id: string) =>
      assert.equal((await call(c.app, 'DELETE', `/api/v1/files/${id}`, { token: a.token })).status, 200)

    let cursor = await page(null)
    assert.deepEqual(seen, expected.slice(0, 3))
    // Newer files than the walk began with, a file ahead of the walk, and the file the cursor names.
    const added = [
      await createFile(c, a.id, { name: 'late-1' }),
      await createFile(c, a.id, { name: 'late-2' }),
    ]
    await del(expected[6] as string)
    await del(expected[2] as string)
    cursor = await page(cursor)
    assert.deepEqual(seen.slice(3), expected.slice(3, 6))
    // A file already seen, and the next file of the walk.
    await del(expected[0] as string)
    await del(expected[7] as string)
    while (cursor) cursor = await page(cursor)
    assert.deepEqual(
      seen,
      expected.filter((id) => id !== expected[6] && id !== expected[7]),
    )

    const remaining = expected.filter((id) => ![0, 2, 6, 7].includes(expected.indexOf(id)))
    assert.deepEqual(await walk(c.app, a.token, '', 3), [
      ...newestFirst(added).map((f) => f.id),
      ...remaining,
    ])
  })

  test('another account sees 404 for every file operation and never its files', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Private')
    const file = await createFile(c, a.id, { name: 'secret-plans.txt', folderId: folder.id })
    const own = await createFile(c, b.id, { name: 'mine.txt' })
    const bFolder = await createFolder(c.app, b, 'B folder')
    const as = (method: string, url: string, body?: unknown) =>
      call(c.app, method, url, { token: b.token, ...(body === undefined ? {} : { body }) })

    assertError(await as('GET', `/api/v1/files/${file.id}`), 404, 'not_found')
    assertError(await as('PATCH', `/api/v1/files/${file.id}`, { name: 'stolen' }), 404, 'not_found')
    assertError(await as('PATCH', `/api/v1/files/${file.id}`, { folderId: bFolder.id }), 404, 'not_found')
    assertError(await as('DELETE', `/api/v1/files/${file.id}`), 404, 'not_found')
    assertError(await as('GET', `/api/v1/files/${file.id}/download`), 404, 'not_found')
    const head = await c.app.inject({
      method: 'HEAD',
      url: `/api/v1/files/${file.id}/download`,
      headers: { authorization: `Bearer ${b.token}` },
    })
    assert.equal(head.statusCode, 404)
    assert.deepEqual((await as('DELETE', '/api/v1/files', { fileIds: [file.id] })).body, {
      data: { deletedIds: [] },
    })
    assertError(await as('GET', `/api/v1/files?folderId=${folder.id}`), 404, 'not_found')
    assertError(await as('GET', `/api/v1/files?folderId=${folder.id}&query=secret`), 404, 'not_found')
    assert.deepEqual((await as('GET', '/api/v1/files')).body, {
      data: [fileJson(own)],
      pagination: { nextCursor: null },
    })
    assert.deepEqual((await as('GET', '/api/v1/files?query=secret')).body.data, [])
    assert.deepEqual((await as('GET', '/api/v1/files?query=se')).body.data, [])
    // Nor may the owner move a file into another account's folder.
    assertError(
      await call(c.app, 'PATCH', `/api/v1/files/${file.id}`, {
        token: a.token,
        body: { folderId: bFolder.id },
      }),
      404,
      'not_found',
    )
    assertError(
      await call(c.app, 'PATCH', `/api/v1/files/${own.id}`, {
        token: b.token,
        body: { folderId: folder.id },
      }),
      404,
      'not_found',
    )

    const still = await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })
    assert.deepEqual(still.body, { data: fileJson(file, { ...folder, fileCount: 1 }) })
    assert.deepEqual(await c.blobs.stat(file.blobKey), { size: file.content.length })
    assert.equal(await folderCounts(c.app, b, bFolder.id), 0)
  })

  test('scopes: files:read reads, files:write writes, anything else is 403; bad credentials are 401', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const spare = await createFile(c, a.id)
    const reads: [string, string][] = [
      ['GET', '/api/v1/files'],
      ['GET', `/api/v1/files/${file.id}`],
      ['GET', `/api/v1/files/${file.id}/download`],
    ]
    const writes: [string, string, unknown][] = [
      ['PATCH', `/api/v1/files/${file.id}`, { name: 'renamed.txt' }],
      ['DELETE', '/api/v1/files', { fileIds: ['fil_absent'] }],
      ['DELETE', `/api/v1/files/${spare.id}`, undefined],
    ]
    const readKey = await a.key(['files:read'])
    const writeKey = await a.key(['files:write'])
    const others = await a.key([
      'folders:read',
      'folders:write',
      'shares:read',
      'shares:write',
      'requests:read',
    ] as Scope[])
    for (const [method, url] of reads) {
      assert.equal((await call(c.app, method, url, { token: readKey })).status, 200, `${method} ${url}`)
      for (const token of [writeKey, others]) {
        assert.match(
          assertError(await call(c.app, method, url, { token }), 403, 'insufficient_scope'),
          /files:read/,
        )
      }
    }
    for (const [method, url, body] of writes) {
      for (const token of [readKey, others]) {
        assert.match(
          assertError(await call(c.app, method, url, { token, body }), 403, 'insufficient_scope'),
          /files:write/,
        )
      }
      assert.equal(
        (await call(c.app, method, url, { token: writeKey, body })).status,
        200,
        `${method} ${url}`,
      )
    }

    const revoked = await c.app.services.apiKeys.create({
      accountId: a.id,
      name: 'old',
      scopes: ['files:read'],
    })
    await c.app.services.apiKeys.revoke(revoked.key.id)
    for (const [method, url, body] of [...reads.map(([m, u]) => [m, u, undefined] as const), ...writes]) {
      const credentials: (Record<string, string> | undefined)[] = [
        undefined,
        { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
        { authorization: 'Bearer' },
        { authorization: `Bearer coffer_${chars(40, 'z')}` },
        { authorization: `Bearer ${revoked.secret}` },
      ]
      for (const headers of credentials) {
        const res = await call(c.app, method, url, { body, ...(headers ? { headers } : {}) })
        assertError(res, 401, 'unauthorized')
        assert.match(String(res.headers['www-authenticate']), /^Bearer/)
      }
    }
  })
})
