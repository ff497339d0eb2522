import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  assertError,
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  ISO_MS,
} from './support/harness.ts'

describeEachEngine('folders', (ctx) => {
  test('create, get, rename and list a folder with full shapes', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const created = await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 'Invoices' } })
    assert.equal(created.status, 201)
    const folder = created.body.data
    assert.match(folder.id, /^fld_[0-9a-z]{26}$/)
    assert.match(folder.createdAt, ISO_MS)
    assert.deepEqual(created.body, {
      data: { id: folder.id, name: 'Invoices', createdAt: folder.createdAt, fileCount: 0, requestCount: 0 },
    })

    const got = await call(app, 'GET', `/api/v1/folders/${folder.id}`, { token: a.token })
    assert.equal(got.status, 200)
    assert.deepEqual(got.body, created.body)

    const renamed = await call(app, 'PATCH', `/api/v1/folders/${folder.id}`, {
      token: a.token,
      body: { name: 'Bills' },
    })
    assert.equal(renamed.status, 200)
    assert.deepEqual(renamed.body, { data: { ...folder, name: 'Bills' } })

    const list = await call(app, 'GET', '/api/v1/folders', { token: a.token })
    assert.equal(list.status, 200)
    assert.deepEqual(list.body, { data: [{ ...folder, name: 'Bills' }], pagination: { nextCursor: null } })
  })

  test('folder names are unique per account ignoring case, and free across accounts', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const b = await createAccount(app)
    assert.equal(
      (await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 'Photos' } })).status,
      201,
    )
    assertError(
      await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 'photos' } }),
      409,
      'conflict',
    )
    assert.equal(
      (await call(app, 'POST', '/api/v1/folders', { token: b.token, body: { name: 'Photos' } })).status,
      201,
    )
    const other = await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 'Other' } })
    assertError(
      await call(app, 'PATCH', `/api/v1/folders/${other.body.data.id}`, {
        token: a.token,
        body: { name: 'PHOTOS' },
      }),
      409,
      'conflict',
    )
  })

  test('name bounds: 1 and 80 characters accepted, 0 and 81 refused, unknown fields refused', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    for (const name of ['x', chars(80, 'y')]) {
      const res = await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name } })
      assert.equal(res.status, 201, name)
      assert.equal(res.body.data.name, name)
    }
    assert.match(
      assertError(
        await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: '' } }),
        400,
        'invalid_request',
      ),
      /name.*at least 1/,
    )
    assert.match(
      assertError(
        await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: chars(81) } }),
        400,
        'invalid_request',
      ),
      /name.*at most 80/,
    )
    assert.match(
      assertError(
        await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 'ok', color: 'red' } }),
        400,
        'invalid_request',
      ),
      /color/,
    )
    assertError(
      await call(app, 'POST', '/api/v1/folders', { token: a.token, body: {} }),
      400,
      'invalid_request',
    )
    assertError(
      await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 5 } }),
      400,
      'invalid_request',
    )
    assertError(
      await call(app, 'POST', '/api/v1/folders', {
        token: a.token,
        rawBody: '{"name":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    )
    assertError(
      await call(app, 'GET', `/api/v1/folders/${chars(101)}`, { token: a.token }),
      400,
      'invalid_request',
    )
  })

  test('another account sees 404 for every folder operation', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const b = await createAccount(app)
    const folder = (await call(app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 'Mine' } }))
      .body.data
    assertError(await call(app, 'GET', `/api/v1/folders/${folder.id}`, { token: b.token }), 404, 'not_found')
    assertError(
      await call(app, 'PATCH', `/api/v1/folders/${folder.id}`, { token: b.token, body: { name: 'x' } }),
      404,
      'not_found',
    )
    assertError(
      await call(app, 'DELETE', `/api/v1/folders/${folder.id}`, { token: b.token }),
      404,
      'not_found',
    )
    const list = await call(app, 'GET', '/api/v1/folders', { token: b.token })
    assert.deepEqual(list.body.data, [])
    assert.equal((await call(app, 'GET', `/api/v1/folders/${folder.id}`, { token: a.token })).status, 200)
  })

  test('deleting a folder moves its files to root and keeps them', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = (await call(c.app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 'Tmp' } }))
      .body.data
    const file = await createFile(c, a.id, { folderId: folder.id })
    const before = await call(c.app, 'GET', `/api/v1/folders/${folder.id}`, { token: a.token })
    assert.equal(before.body.data.fileCount, 1)
    const deleted = await call(c.app, 'DELETE', `/api/v1/folders/${folder.id}`, { token: a.token })
    assert.deepEqual(deleted.body, { data: { id: folder.id, deleted: true } })
    assertError(
      await call(c.app, 'GET', `/api/v1/folders/${folder.id}`, { token: a.token }),
      404,
      'not_found',
    )
    const stored = await c.app.services.files.get(a.id, file.id)
    assert.equal(stored.folderId, null)
    assert.equal(stored.folder, null)
  })

  test('scopes: folders:* and files:* both allowed, others refused with 403', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    for (const scope of ['folders:read', 'files:read'] as const) {
      assert.equal(
        (await call(app, 'GET', '/api/v1/folders', { token: await a.key([scope]) })).status,
        200,
        scope,
      )
    }
    for (const scope of ['folders:write', 'files:write'] as const) {
      const res = await call(app, 'POST', '/api/v1/folders', {
        token: await a.key([scope]),
        body: { name: scope },
      })
      assert.equal(res.status, 201, scope)
    }
    const readOnly = await a.key(['folders:read'])
    assert.match(
      assertError(
        await call(app, 'POST', '/api/v1/folders', { token: readOnly, body: { name: 'n' } }),
        403,
        'insufficient_scope',
      ),
      /folders:write/,
    )
    const shares = await a.key(['shares:read'])
    assertError(await call(app, 'GET', '/api/v1/folders', { token: shares }), 403, 'insufficient_scope')
    assertError(await call(app, 'GET', '/api/v1/folders'), 401, 'unauthorized')
  })
})
