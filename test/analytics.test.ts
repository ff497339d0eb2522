import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { newId, newPublicId } from '../src/platform/ids.ts'
import {
  assertError,
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  type TestAccount,
  type TestContext,
  visitShare,
} from './support/harness.ts'

const FUTURE = '2099-01-02T03:04:05.678Z'

const analytics = (app: App, token: string, shareId?: string) =>
  call(app, 'GET', `/api/v1/analytics${shareId === undefined ? '' : `?shareId=${shareId}`}`, { token })

async function share(c: TestContext, account: TestAccount, expiresAt?: string) {
  const file = await createFile(c, account.id)
  const res = await call(c.app, 'POST', '/api/v1/shares', {
    token: account.token,
    body: expiresAt === undefined ? { fileId: file.id } : { fileId: file.id, expiresAt },
  })
  assert.equal(res.status, 201)
  return { ...res.body.data, fileId: file.id } as { id: string; fileId: string; publicUrl: string }
}

/** Views and downloads through the share's public page, as its recipients make them. */
async function record(c: TestContext, share: { publicUrl: string }, views: number, downloads: number) {
  await visitShare(c.app, share, { views, downloads })
}

async function expire(c: TestContext, shareId: string): Promise<string> {
  const at = Date.now() - 60_000
  await c.db.kysely.updateTable('shares').set({ expires_at: at }).where('id', '=', shareId).execute()
  return new Date(at).toISOString()
}

/** File requests are written directly: only their account and `is_active` matter here. */
async function insertRequest(c: TestContext, accountId: string, isActive: boolean): Promise<void> {
  const now = Date.now()
  await c.db.kysely
    .insertInto('file_requests')
    .values({
      id: newId('req', now),
      account_id: accountId,
      folder_id: null,
      public_id: newPublicId(),
      title: 'Send me files',
      description: null,
      collect_email: true,
      email_required: true,
      is_active: isActive,
      created_at: now,
      updated_at: now,
    })
    .execute()
}

const ZERO = { shares: 0, activeShares: 0, activeRequests: 0, views: 0, downloads: 0 }

describeEachEngine('analytics', (ctx) => {
  test('per share: exact counts, effective state and expiry', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const s = await share(c, a)
    const fresh = await analytics(c.app, a.token, s.id)
    assert.equal(fresh.status, 200)
    assert.deepEqual(fresh.body, {
      data: { shareId: s.id, views: 0, downloads: 0, isActive: true, state: 'active', expiresAt: null },
    })

    await record(c, s, 7, 3)
    assert.deepEqual((await analytics(c.app, a.token, s.id)).body, {
      data: { shareId: s.id, views: 7, downloads: 3, isActive: true, state: 'active', expiresAt: null },
    })

    await call(c.app, 'PATCH', `/api/v1/shares/${s.id}`, { token: a.token, body: { expiresAt: FUTURE } })
    assert.deepEqual((await analytics(c.app, a.token, s.id)).body, {
      data: { shareId: s.id, views: 7, downloads: 3, isActive: true, state: 'active', expiresAt: FUTURE },
    })

    const expiredAt = await expire(c, s.id)
    assert.deepEqual((await analytics(c.app, a.token, s.id)).body, {
      data: {
        shareId: s.id,
        views: 7,
        downloads: 3,
        isActive: false,
        state: 'expired',
        expiresAt: expiredAt,
      },
    })

    await call(c.app, 'PATCH', `/api/v1/shares/${s.id}`, {
      token: a.token,
      body: { isActive: false, expiresAt: null },
    })
    // A disabled link answers 410 and counts nothing.
    const page = new URL(s.publicUrl).pathname
    assert.equal((await c.app.inject({ method: 'GET', url: page })).statusCode, 410)
    assert.equal((await c.app.inject({ method: 'GET', url: `${page}/download` })).statusCode, 410)
    assert.deepEqual((await analytics(c.app, a.token, s.id)).body, {
      data: { shareId: s.id, views: 7, downloads: 3, isActive: false, state: 'disabled', expiresAt: null },
    })
  })

  test('aggregate: zeros for a new account, then totals of effective states', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const empty = await analytics(c.app, a.token)
    assert.equal(empty.status, 200)
    assert.deepEqual(empty.body, { data: ZERO })

    const open = await share(c, a)
    const expiring = await share(c, a, FUTURE)
    const disabled = await share(c, a)
    const expired = await share(c, a, FUTURE)
    // Counted while the links work; a disabled or expired link counts nothing more.
    await record(c, open, 5, 2)
    await record(c, expiring, 1, 0)
    await record(c, disabled, 3, 4)
    await record(c, expired, 2, 1)
    await call(c.app, 'PATCH', `/api/v1/shares/${disabled.id}`, { token: a.token, body: { isActive: false } })
    await expire(c, expired.id)
    await insertRequest(c, a.id, true)
    await insertRequest(c, a.id, true)
    await insertRequest(c, a.id, false)

    const totals = { shares: 4, activeShares: 2, activeRequests: 2, views: 11, downloads: 7 }
    assert.deepEqual((await analytics(c.app, a.token)).body, { data: totals })

    // Reactivating the expired link and disabling the open one move activeShares, not the counts.
    await call(c.app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId: expired.fileId } })
    await call(c.app, 'PATCH', `/api/v1/shares/${open.id}`, { token: a.token, body: { isActive: false } })
    assert.deepEqual((await analytics(c.app, a.token)).body, { data: totals })
    await call(c.app, 'PATCH', `/api/v1/shares/${disabled.id}`, { token: a.token, body: { isActive: true } })
    assert.deepEqual((await analytics(c.app, a.token)).body, { data: { ...totals, activeShares: 3 } })

    // Deleting a file takes its share, and its counts, out of the totals.
    await c.db.kysely.deleteFrom('files').where('id', '=', disabled.fileId).execute()
    assert.deepEqual((await analytics(c.app, a.token)).body, {
      data: { shares: 3, activeShares: 2, activeRequests: 2, views: 8, downloads: 3 },
    })
    assertError(await analytics(c.app, a.token, disabled.id), 404, 'not_found')
  })

  test('aggregates are per account', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const sa = await share(c, a)
    await record(c, sa, 4, 1)
    await insertRequest(c, a.id, true)
    const expectedA = { shares: 1, activeShares: 1, activeRequests: 1, views: 4, downloads: 1 }
    assert.deepEqual((await analytics(c.app, a.token)).body, { data: expectedA })
    assert.deepEqual((await analytics(c.app, b.token)).body, { data: ZERO })

    const sb1 = await share(c, b)
    const sb2 = await share(c, b)
    await record(c, sb1, 10, 6)
    await record(c, sb2, 1, 1)
    await insertRequest(c, b.id, true)
    await insertRequest(c, b.id, true)
    await insertRequest(c, b.id, true)
    assert.deepEqual((await analytics(c.app, b.token)).body, {
      data: { shares: 2, activeShares: 2, activeRequests: 3, views: 11, downloads: 7 },
    })
    assert.deepEqual((await analytics(c.app, a.token)).body, { data: expectedA })
  })

  test("another account's share, or none, is a 404", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const s = await share(c, a)
    assert.match(assertError(await analytics(c.app, b.token, s.id), 404, 'not_found'), new RegExp(s.id))
    assertError(await analytics(c.app, a.token, 'shr_absent'), 404, 'not_found')
    assert.equal((await analytics(c.app, a.token, s.id)).status, 200)
  })

  test('query bounds: shareId 1..128 characters, no unknown parameters', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    assertError(await analytics(c.app, a.token, chars(128)), 404, 'not_found')
    assert.match(
      assertError(await analytics(c.app, a.token, chars(129)), 400, 'invalid_request'),
      /"shareId" must be at most 128/,
    )
    assert.match(
      assertError(await analytics(c.app, a.token, ''), 400, 'invalid_request'),
      /"shareId" must be at least 1/,
    )
    assert.match(
      assertError(
        await call(c.app, 'GET', '/api/v1/analytics?fileId=x', { token: a.token }),
        400,
        'invalid_request',
      ),
      /fileId/,
    )
  })

  test('scopes: analytics:read only; credentials are required', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const s = await share(c, a)
    const allowed = await a.key(['analytics:read'])
    assert.equal((await analytics(c.app, allowed)).status, 200)
    assert.equal((await analytics(c.app, allowed, s.id)).status, 200)
    const denied = await a.key(['shares:read', 'shares:write', 'files:read'])
    for (const shareId of [undefined, s.id]) {
      assert.match(
        assertError(await analytics(c.app, denied, shareId), 403, 'insufficient_scope'),
        /analytics:read/,
      )
      assertError(await analytics(c.app, 'coffer_unknown', shareId), 401, 'unauthorized')
    }
    assertError(await call(c.app, 'GET', '/api/v1/analytics'), 401, 'unauthorized')
    assertError(await call(c.app, 'GET', `/api/v1/analytics?shareId=${s.id}`), 401, 'unauthorized')
  })
})
