// Folder links through the API (issue 44, 2): POST /folder-shares makes, reactivates (with the body's settings) or
// returns a folder's one link; GET lists and reads them, PATCH changes each setting with a file link's rules; the
// scopes, the paging, another account's folders and links, the separation of the two kinds of link by id, a
// folder deleted with its link (what the link counted stays in the analytics) and the webhook events recorded.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { createFolder } from './support/files-helpers.ts'
import {
  assertError,
  call,
  createAccount,
  createFile,
  describeEachEngine,
  ISO_MS,
  type TestAccount,
  type TestContext,
} from './support/harness.ts'
import { checkEventAgainstOpenApi } from './support/openapi-check.ts'

const SHARE_ID = /^shr_[0-9a-z]{26}$/
const PUBLIC_URL = /^http:\/\/coffer\.test\/sf\/([0-9a-z]{32})$/
const FUTURE = '2099-01-02T03:04:05.678Z'
const FUTURE_2 = '2098-06-07T08:09:10.000Z'

const post = (app: App, token: string, body: unknown) =>
  call(app, 'POST', '/api/v1/folder-shares', { token, body })
const patch = (app: App, token: string, id: string, body: unknown) =>
  call(app, 'PATCH', `/api/v1/folder-shares/${id}`, { token, body })
const get = (app: App, token: string, id: string) =>
  call(app, 'GET', `/api/v1/folder-shares/${id}`, { token })
const list = (app: App, token: string, query = '') =>
  call(app, 'GET', `/api/v1/folder-shares${query}`, { token })

/** Moves a link's stored expiry into the past, as if time had passed. */
async function expire(c: TestContext, shareId: string, msAgo = 60_000): Promise<string> {
  const at = Date.now() - msAgo
  await c.db.kysely.updateTable('shares').set({ expires_at: at }).where('id', '=', shareId).execute()
  return new Date(at).toISOString()
}

/** A folder with a file in it, and its new link. */
async function sharedFolder(c: TestContext, a: TestAccount, name = 'Shared', extra: object = {}) {
  const folder = await createFolder(c.app, a, name)
  const file = await createFile(c, a.id, { folderId: folder.id, content: 'in the folder' })
  const res = await post(c.app, a.token, { folderId: folder.id, ...extra })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  const share = res.body.data
  return { folder, file, share, page: new URL(share.publicUrl).pathname }
}

/** The folder link's counts, as GET /folder-shares/{id} says. */
async function counts(c: TestContext, a: TestAccount, shareId: string) {
  const res = await get(c.app, a.token, shareId)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return { views: res.body.data.viewCount as number, downloads: res.body.data.downloadCount as number }
}

describeEachEngine(
  'folder shares',
  (ctx) => {
    test('create, re-create (idempotent) and get a folder link with its full shape', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const folder = await createFolder(c.app, a, 'Holiday photos')
      const before = Date.now()
      const created = await post(c.app, a.token, { folderId: folder.id })
      assert.equal(created.status, 201)
      const share = created.body.data
      assert.match(share.id, SHARE_ID)
      assert.match(share.publicUrl, PUBLIC_URL)
      assert.match(share.createdAt, ISO_MS)
      assert.ok(Date.parse(share.createdAt) >= before - 1 && Date.parse(share.createdAt) <= Date.now())
      assert.deepEqual(created.body, {
        data: {
          id: share.id,
          folderId: folder.id,
          folder: { id: folder.id, name: 'Holiday photos' },
          isActive: true,
          state: 'active',
          expiresAt: null,
          hasPassword: false,
          maxDownloads: null,
          viewCount: 0,
          downloadCount: 0,
          createdAt: share.createdAt,
          publicUrl: share.publicUrl,
        },
      })
      // An active link is returned as it is, whatever the body says (PATCH changes it).
      const again = await post(c.app, a.token, {
        folderId: folder.id,
        maxDownloads: 3,
        password: 'a password',
      })
      assert.equal(again.status, 201)
      assert.deepEqual(again.body, created.body)
      assert.deepEqual((await get(c.app, a.token, share.id)).body, created.body)
      // The folder's name is read as it is now.
      await call(c.app, 'PATCH', `/api/v1/folders/${folder.id}`, {
        token: a.token,
        body: { name: 'Renamed' },
      })
      assert.deepEqual((await get(c.app, a.token, share.id)).body.data.folder, {
        id: folder.id,
        name: 'Renamed',
      })
      // One link per folder: concurrent POSTs all answer the same one.
      const other = await createFolder(c.app, a, 'Raced')
      const raced = await Promise.all(
        Array.from({ length: 8 }, () => post(c.app, a.token, { folderId: other.id })),
      )
      for (const res of raced) assert.equal(res.status, 201)
      assert.equal(new Set(raced.map((res) => res.body.data.id)).size, 1)
      const rows = await c.db.kysely
        .selectFrom('shares')
        .select('id')
        .where('folder_id', '=', other.id)
        .execute()
      assert.equal(rows.length, 1)
    })

    test('create with settings; POST reactivates a disabled or expired link with the settings of its body', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const { folder, share } = await sharedFolder(c, a, 'Settings', {
        expiresAt: FUTURE,
        password: 'correct horse',
        maxDownloads: 5,
      })
      assert.deepEqual(
        [share.expiresAt, share.hasPassword, share.maxDownloads, share.isActive],
        [FUTURE, true, 5, true],
      )
      assert.ok(!JSON.stringify(share).includes('correct horse'))
      const stored = await c.db.kysely
        .selectFrom('shares')
        .select(['password_hash', 'file_id', 'folder_id'])
        .where('id', '=', share.id)
        .executeTakeFirstOrThrow()
      assert.match(String(stored.password_hash), /^scrypt\$/)
      assert.deepEqual([stored.file_id, stored.folder_id], [null, folder.id])

      // Counts are kept through a reactivation.
      await c.db.kysely
        .updateTable('shares')
        .set({ view_count: 4, download_count: 2 })
        .where('id', '=', share.id)
        .execute()
      const counted = { ...share, viewCount: 4, downloadCount: 2 }
      const disabled = await patch(c.app, a.token, share.id, { isActive: false })
      assert.deepEqual(disabled.body, { data: { ...counted, isActive: false, state: 'disabled' } })
      // The body's expiry (none when omitted), its maxDownloads; the password omitted stays.
      const reactivated = await post(c.app, a.token, { folderId: folder.id, maxDownloads: 9 })
      assert.equal(reactivated.status, 201)
      assert.deepEqual(reactivated.body, { data: { ...counted, expiresAt: null, maxDownloads: 9 } })

      await expire(c, share.id)
      const expired = (await get(c.app, a.token, share.id)).body.data
      assert.deepEqual([expired.isActive, expired.state], [false, 'expired'])
      const renewed = await post(c.app, a.token, {
        folderId: folder.id,
        expiresAt: FUTURE_2,
        password: 'new one',
      })
      assert.deepEqual(renewed.body, { data: { ...counted, expiresAt: FUTURE_2, maxDownloads: 9 } })
      // The new password is the one the page takes.
      const page = new URL(share.publicUrl).pathname
      const form = (password: string) =>
        c.app.inject({
          method: 'POST',
          url: page,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ password }).toString(),
        })
      assert.equal((await form('correct horse')).statusCode, 403)
      assert.equal((await form('new one')).statusCode, 303)
      // Disabled and expired at once, and settings cleared by the body.
      await patch(c.app, a.token, share.id, { isActive: false })
      await expire(c, share.id)
      const both = await post(c.app, a.token, { folderId: folder.id })
      assert.deepEqual(both.body, { data: { ...counted, expiresAt: null, maxDownloads: 9 } })
      assert.equal(new URL(both.body.data.publicUrl).pathname, page, 'the same public URL')
    })

    test('PATCH sets and clears each field', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const { share } = await sharedFolder(c, a, 'Patched')
      const steps: [object, object][] = [
        [{ expiresAt: FUTURE }, { isActive: true, state: 'active', expiresAt: FUTURE }],
        [{ isActive: false }, { isActive: false, state: 'disabled', expiresAt: FUTURE }],
        [{ expiresAt: null }, { isActive: false, state: 'disabled', expiresAt: null }],
        [{ isActive: true }, { isActive: true, state: 'active', expiresAt: null }],
        [{ password: 'a secret' }, { hasPassword: true }],
        [{ maxDownloads: 3 }, { hasPassword: true, maxDownloads: 3 }],
        [{ password: null }, { hasPassword: false, maxDownloads: 3 }],
        [{ maxDownloads: null }, { hasPassword: false, maxDownloads: null }],
        [
          { isActive: false, expiresAt: FUTURE_2, password: 'both', maxDownloads: 1 },
          { isActive: false, state: 'disabled', expiresAt: FUTURE_2, hasPassword: true, maxDownloads: 1 },
        ],
        [
          { isActive: true, expiresAt: null, password: null, maxDownloads: null },
          { isActive: true, state: 'active', expiresAt: null, hasPassword: false, maxDownloads: null },
        ],
      ]
      for (const [body, expected] of steps) {
        const res = await patch(c.app, a.token, share.id, body)
        assert.equal(res.status, 200, JSON.stringify(res.body))
        assert.deepEqual(res.body, { data: { ...share, ...expected } }, JSON.stringify(body))
        assert.deepEqual((await get(c.app, a.token, share.id)).body, res.body, JSON.stringify(body))
      }
      // Bad values are the same 400s as a file link's, on PATCH and POST.
      for (const [body, message] of [
        [{ password: 'abc' }, /"password" must be at least 4 characters long/],
        [{ maxDownloads: 0 }, /"maxDownloads" must be at least 1\./],
        [{ maxDownloads: 1.5 }, /"maxDownloads" must be an integer/],
        [{ expiresAt: 'tomorrow' }, /expiresAt/],
        [{ isActive: 'yes' }, /isActive/],
        [{ unknown: true }, /unknown/],
        [{}, /must set at least one field/],
      ] as const) {
        assert.match(
          assertError(await patch(c.app, a.token, share.id, body), 400, 'invalid_request'),
          message,
        )
      }
      const folder = await createFolder(c.app, a, 'Refused')
      for (const [body, message] of [
        [{ folderId: folder.id, password: 'abc' }, /"password" must be at least 4 characters long/],
        [{ folderId: folder.id, maxDownloads: 0 }, /"maxDownloads" must be at least 1\./],
        [{ folderId: folder.id, isActive: true }, /isActive/],
        [{}, /folderId/],
        [{ folderId: '' }, /folderId/],
      ] as const) {
        assert.match(assertError(await post(c.app, a.token, body), 400, 'invalid_request'), message)
      }
      assert.deepEqual(
        (await list(c.app, a.token)).body.data.map((s: { id: string }) => s.id),
        [share.id],
      )
    })

    test('enabling an expired link without a new expiry is a 409; a past expiry is a 400; neither changes anything', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const { folder, share } = await sharedFolder(c, a, 'Expiring', { expiresAt: FUTURE })
      const expiredAt = await expire(c, share.id)
      const effective = { ...share, isActive: false, state: 'expired', expiresAt: expiredAt }
      assert.deepEqual((await get(c.app, a.token, share.id)).body.data, effective)
      assert.deepEqual((await list(c.app, a.token)).body.data, [effective])

      const message = assertError(await patch(c.app, a.token, share.id, { isActive: true }), 409, 'conflict')
      assert.match(message, new RegExp(`expiry ${expiredAt.replace('.', '\\.')} has passed`))
      assertError(
        await patch(c.app, a.token, share.id, { isActive: true, password: 'not applied' }),
        409,
        'conflict',
      )
      assert.deepEqual((await get(c.app, a.token, share.id)).body.data, effective)
      const renewed = await patch(c.app, a.token, share.id, { isActive: true, expiresAt: FUTURE_2 })
      assert.deepEqual(renewed.body, { data: { ...share, expiresAt: FUTURE_2 } })

      for (const expiresAt of ['2000-01-01T00:00:00.000Z', new Date().toISOString()]) {
        for (const res of [
          await post(c.app, a.token, { folderId: folder.id, expiresAt }),
          await patch(c.app, a.token, share.id, { expiresAt }),
          await patch(c.app, a.token, share.id, { isActive: true, expiresAt }),
        ]) {
          const refused = assertError(res, 400, 'invalid_request')
          assert.equal(refused, 'The request body "expiresAt" must be in the future.')
        }
      }
      assert.equal((await get(c.app, a.token, share.id)).body.data.expiresAt, FUTURE_2)
      // No link is made for a folder by a refused POST.
      const fresh = await createFolder(c.app, a, 'Never shared')
      assertError(
        await post(c.app, a.token, { folderId: fresh.id, expiresAt: '2000-01-01T00:00:00Z' }),
        400,
        'invalid_request',
      )
      const rows = await c.db.kysely
        .selectFrom('shares')
        .select('id')
        .where('folder_id', '=', fresh.id)
        .execute()
      assert.equal(rows.length, 0)
    })

    test("another account's folder and link are 404s, and its lists show none of them", async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const b = await createAccount(c.app)
      const { folder, share } = await sharedFolder(c, a, 'Private')

      assert.match(
        assertError(await post(c.app, b.token, { folderId: folder.id }), 404, 'not_found'),
        new RegExp(folder.id),
      )
      assertError(await post(c.app, a.token, { folderId: 'fld_nosuchfolder' }), 404, 'not_found')
      assertError(await get(c.app, b.token, share.id), 404, 'not_found')
      assertError(await patch(c.app, b.token, share.id, { isActive: false }), 404, 'not_found')
      assertError(await patch(c.app, b.token, share.id, { password: 'taken over' }), 404, 'not_found')
      assertError(await get(c.app, a.token, 'shr_nosuchshare'), 404, 'not_found')
      assert.deepEqual((await list(c.app, b.token)).body, { data: [], pagination: { nextCursor: null } })
      assert.deepEqual((await get(c.app, a.token, share.id)).body.data, share)

      // B's own folder link lists alone on B's side; A's alone on A's.
      const own = await sharedFolder(c, b, 'Of B')
      assert.deepEqual((await list(c.app, b.token)).body.data, [own.share])
      assert.deepEqual((await list(c.app, a.token)).body.data, [share])
      // The file links' list has no folder link, and the folder links' list no file link.
      const file = await createFile(c, a.id)
      const fileShare = await call(c.app, 'POST', '/api/v1/shares', {
        token: a.token,
        body: { fileId: file.id },
      })
      assert.deepEqual(
        (await call(c.app, 'GET', '/api/v1/shares', { token: a.token })).body.data.map(
          (s: { id: string }) => s.id,
        ),
        [fileShare.body.data.id],
      )
      assert.deepEqual((await list(c.app, a.token)).body.data, [share])
      // ?folderId= answers the folder's link alone, and nothing of another account's folder.
      const unshared = await createFolder(c.app, a, 'Not shared')
      const only = (await list(c.app, a.token, `?folderId=${folder.id}`)).body
      assert.deepEqual(only, { data: [share], pagination: { nextCursor: null } })
      assert.deepEqual((await list(c.app, a.token, `?folderId=${unshared.id}`)).body.data, [])
      assert.deepEqual((await list(c.app, b.token, `?folderId=${folder.id}`)).body.data, [])
    })

    test("a folder link's id is a 404 on /shares/{id}, and a file link's on /folder-shares/{id}", async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const { share } = await sharedFolder(c, a, 'Kinds')
      const file = await createFile(c, a.id)
      const fileShare = (
        await call(c.app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId: file.id } })
      ).body.data
      const token = a.token
      assertError(await call(c.app, 'GET', `/api/v1/shares/${share.id}`, { token }), 404, 'not_found')
      for (const body of [
        { isActive: false },
        { password: 'a password' },
        { maxDownloads: 1 },
        { expiresAt: FUTURE },
      ]) {
        assertError(
          await call(c.app, 'PATCH', `/api/v1/shares/${share.id}`, { token, body }),
          404,
          'not_found',
        )
        assertError(await patch(c.app, token, fileShare.id, body), 404, 'not_found')
      }
      assertError(await get(c.app, token, fileShare.id), 404, 'not_found')
      // Neither refused PATCH changed anything.
      assert.deepEqual((await get(c.app, token, share.id)).body.data, share)
      const fileNow = await call(c.app, 'GET', `/api/v1/shares/${fileShare.id}`, { token })
      assert.deepEqual(
        [fileNow.body.data.isActive, fileNow.body.data.hasPassword, fileNow.body.data.maxDownloads],
        [true, false, null],
      )
      // A folder's public id is no file link's page, and a file's no folder link's page.
      const folderPublicId = new URL(share.publicUrl).pathname.split('/').at(-1)
      const filePublicId = new URL(fileShare.publicUrl).pathname.split('/').at(-1)
      assert.equal((await c.app.inject({ method: 'GET', url: `/s/${folderPublicId}` })).statusCode, 404)
      assert.equal(
        (await c.app.inject({ method: 'GET', url: `/s/${folderPublicId}/download` })).statusCode,
        404,
      )
      assert.equal((await c.app.inject({ method: 'GET', url: `/sf/${filePublicId}` })).statusCode, 404)
      assert.equal((await c.app.inject({ method: 'GET', url: `/sf/${filePublicId}/zip` })).statusCode, 404)
      assert.equal(
        (await c.app.inject({ method: 'GET', url: `/sf/${filePublicId}/files/${file.id}/download` }))
          .statusCode,
        404,
      )
    })

    test('scopes: shares:read reads, shares:write writes, others are refused; credentials are required', async () => {
      const { app } = ctx()
      const a = await createAccount(app)
      const folder = await createFolder(app, a, 'Scoped')
      const read = await a.key(['shares:read'])
      const write = await a.key(['shares:write'])
      const other = await a.key([
        'files:read',
        'files:write',
        'folders:read',
        'folders:write',
        'analytics:read',
      ])

      const created = await post(app, write, { folderId: folder.id })
      assert.equal(created.status, 201)
      const id = created.body.data.id
      assert.equal((await patch(app, write, id, { isActive: false })).status, 200)
      assert.equal((await list(app, read)).status, 200)
      assert.equal((await get(app, read, id)).status, 200)

      const denied: [string, string, string, unknown?][] = [
        ['GET', '/api/v1/folder-shares', 'shares:read'],
        ['GET', `/api/v1/folder-shares/${id}`, 'shares:read'],
        ['POST', '/api/v1/folder-shares', 'shares:write', { folderId: folder.id }],
        ['PATCH', `/api/v1/folder-shares/${id}`, 'shares:write', { isActive: true }],
      ]
      for (const [method, url, scope, body] of denied) {
        const wrong = scope === 'shares:read' ? write : read
        for (const token of [wrong, other]) {
          const message = assertError(
            await call(app, method, url, { token, body }),
            403,
            'insufficient_scope',
          )
          assert.match(message, new RegExp(scope))
        }
        assertError(await call(app, method, url, { body }), 401, 'unauthorized')
        assertError(await call(app, method, url, { token: 'coffer_unknown', body }), 401, 'unauthorized')
      }
      // Neither refused POST nor PATCH ran: the link is still disabled.
      assert.equal((await get(app, read, id)).body.data.isActive, false)
    })

    test('the list pages newest first with its limit and cursor, with no repeats or gaps', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const b = await createAccount(c.app)
      await sharedFolder(c, b, 'Of B')
      const shares: { id: string; createdAt: string }[] = []
      for (let i = 0; i < 7; i++) shares.push((await sharedFolder(c, a, `Folder ${i}`)).share)
      const byNewest = (x: { createdAt: string; id: string }, y: { createdAt: string; id: string }) =>
        x.createdAt === y.createdAt ? (x.id < y.id ? 1 : -1) : x.createdAt < y.createdAt ? 1 : -1
      const expected = [...shares].sort(byNewest)
      assert.deepEqual((await list(c.app, a.token)).body, {
        data: expected,
        pagination: { nextCursor: null },
      })

      const first = await list(c.app, a.token, '?limit=3')
      assert.deepEqual(first.body.data, expected.slice(0, 3))
      assert.equal(typeof first.body.pagination.nextCursor, 'string')
      // Mid-walk: a new link (newer than every cursor) and the folder of one not yet seen deleted.
      await sharedFolder(c, a, 'Newer')
      const removed = expected[4] as { id: string; folderId?: string }
      const removedFolder = (await get(c.app, a.token, removed.id)).body.data.folderId
      assert.equal(
        (await call(c.app, 'DELETE', `/api/v1/folders/${removedFolder}`, { token: a.token })).status,
        200,
      )
      const seen = [...first.body.data]
      let cursor: string | null = first.body.pagination.nextCursor
      let pages = 1
      while (cursor !== null) {
        const page = await list(c.app, a.token, `?limit=3&cursor=${cursor}`)
        assert.equal(page.status, 200)
        assert.ok(page.body.data.length <= 3)
        seen.push(...page.body.data)
        cursor = page.body.pagination.nextCursor
        pages++
      }
      assert.deepEqual(
        seen,
        expected.filter((s) => s.id !== removed.id),
      )
      assert.equal(pages, 2)
      for (const [query, message] of [
        ['?limit=0', /"limit" must be at least 1/],
        ['?limit=101', /"limit" must be at most 100/],
        ['?cursor=nonsense', /cursor.*malformed/],
        ['?sort=asc', /sort/],
      ] as const) {
        assert.match(assertError(await list(c.app, a.token, query), 400, 'invalid_request'), message)
      }
    })

    test("deleting the folder deletes its link; what it counted stays in the analytics' totals", async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const { folder, file, share, page } = await sharedFolder(c, a, 'Counted')
      const kept = await sharedFolder(c, a, 'Kept')
      for (const url of [page, page, `${page}/files/${file.id}/download`, `${page}/zip`]) {
        assert.equal((await c.app.inject({ method: 'GET', url })).statusCode, 200, url)
      }
      assert.deepEqual(await counts(c, a, share.id), { views: 2, downloads: 2 })
      const analytics = async () =>
        (await call(c.app, 'GET', '/api/v1/analytics', { token: a.token })).body.data
      const before = await analytics()
      assert.deepEqual([before.views, before.downloads], [2, 2])

      const deleted = await call(c.app, 'DELETE', `/api/v1/folders/${folder.id}`, { token: a.token })
      assert.equal(deleted.status, 200)
      assertError(await get(c.app, a.token, share.id), 404, 'not_found')
      assertError(await patch(c.app, a.token, share.id, { isActive: false }), 404, 'not_found')
      assertError(await post(c.app, a.token, { folderId: folder.id }), 404, 'not_found')
      assert.deepEqual((await list(c.app, a.token)).body.data, [kept.share])
      const rows = await c.db.kysely.selectFrom('shares').select('id').where('id', '=', share.id).execute()
      assert.equal(rows.length, 0)
      // Its pages are gone with it; its file was moved to the root, not deleted.
      for (const url of [
        page,
        `${page}/zip`,
        `${page}/files/${file.id}`,
        `${page}/files/${file.id}/download`,
      ]) {
        assert.equal((await c.app.inject({ method: 'GET', url })).statusCode, 404, url)
      }
      const moved = await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })
      assert.equal(moved.body.data.folderId, null)
      const after = await analytics()
      assert.deepEqual([after.views, after.downloads], [2, 2], 'what the link counted is kept')
      const days = await call(c.app, 'GET', '/api/v1/analytics/daily', { token: a.token })
      assert.equal(days.status, 200)
      assert.deepEqual(days.body.data.days.at(-1), { date: days.body.data.to, views: 2, downloads: 2 })
    })

    test('events: folder_share.created once per link made or reactivated, viewed and downloaded per count', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      // Nothing listens at this address (the discard port): the events are read where they are recorded.
      const hook = await call(c.app, 'POST', '/api/v1/webhooks', {
        token: a.token,
        body: {
          url: 'http://127.0.0.1:9/coffer',
          events: ['folder_share.created', 'folder_share.viewed', 'folder_share.downloaded'],
        },
      })
      assert.equal(hook.status, 201, JSON.stringify(hook.body))
      const events = async () => {
        const rows = await c.db.kysely
          .selectFrom('events')
          .select(['type', 'payload'])
          .where('account_id', '=', a.id)
          .orderBy('created_at')
          .orderBy('id')
          .execute()
        return rows.map((row) => {
          const event = JSON.parse(row.payload)
          checkEventAgainstOpenApi(c.app, event)
          assert.equal(event.type, row.type)
          return event as { type: string; data: Record<string, unknown> }
        })
      }
      const { folder, file, share, page } = await sharedFolder(c, a, 'Heard')
      await post(c.app, a.token, { folderId: folder.id })
      let seen = await events()
      assert.deepEqual(
        seen.map((event) => event.type),
        ['folder_share.created'],
      )
      assert.deepEqual(seen[0]?.data, share)

      // A view (HEAD, a prefetch and a later page are none), a file download and a zip.
      assert.equal((await c.app.inject({ method: 'GET', url: page })).statusCode, 200)
      assert.equal((await c.app.inject({ method: 'HEAD', url: page })).statusCode, 200)
      assert.equal(
        (await c.app.inject({ method: 'GET', url: page, headers: { 'sec-purpose': 'prefetch' } })).statusCode,
        200,
      )
      assert.equal(
        (await c.app.inject({ method: 'GET', url: `${page}/files/${file.id}/download` })).statusCode,
        200,
      )
      assert.equal((await c.app.inject({ method: 'GET', url: `${page}/zip` })).statusCode, 200)
      seen = await events()
      assert.deepEqual(
        seen.map((event) => event.type),
        ['folder_share.created', 'folder_share.viewed', 'folder_share.downloaded', 'folder_share.downloaded'],
      )
      assert.deepEqual(seen[1]?.data, { ...share, viewCount: 1 })
      assert.deepEqual(
        seen.slice(2).map((event) => event.data.downloadCount),
        [1, 2],
      )
      assert.deepEqual(seen[3]?.data, (await get(c.app, a.token, share.id)).body.data)

      // Reactivation is a folder_share.created again; a PATCH records nothing.
      await patch(c.app, a.token, share.id, { isActive: false })
      await post(c.app, a.token, { folderId: folder.id })
      seen = await events()
      assert.equal(seen.length, 5)
      assert.equal(seen[4]?.type, 'folder_share.created')
      assert.deepEqual(seen[4]?.data, (await get(c.app, a.token, share.id)).body.data)
      // A file link's visits are share.* events, not these.
      const other = await createFile(c, a.id)
      const fileShare = await call(c.app, 'POST', '/api/v1/shares', {
        token: a.token,
        body: { fileId: other.id },
      })
      await c.app.inject({ method: 'GET', url: new URL(fileShare.body.data.publicUrl).pathname })
      assert.equal((await events()).length, 5)
      // A download the limit refuses, and the page of a used-up link, record nothing.
      await patch(c.app, a.token, share.id, { maxDownloads: 3 })
      assert.equal((await c.app.inject({ method: 'GET', url: `${page}/zip` })).statusCode, 200)
      for (const url of [`${page}/zip`, `${page}/files/${file.id}/download`, page]) {
        assert.equal((await c.app.inject({ method: 'GET', url })).statusCode, 410, url)
      }
      seen = await events()
      assert.deepEqual(
        seen.slice(5).map((event) => [event.type, event.data.downloadCount]),
        [['folder_share.downloaded', 3]],
      )
    })
  },
  { env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } },
)
