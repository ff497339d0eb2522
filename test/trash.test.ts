// The trash (issue 44, 1): a deleted file is gone from every endpoint of the spec (by id, lists, search, folder
// counts, its link's page, the links' list, top links), waits in the account's trash with its bytes and link,
// comes back as it was, and goes for good when deleted from the trash, when the trash is emptied, or when the
// purge finds its time over (run here with the clock moved on); what its link counted stays in the analytics.
// With TRASH_RETENTION_DAYS=0 there is no trash: a delete is final at once.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createFolder, folderCounts } from './support/files-helpers.ts'
import {
  assertError,
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  ISO_MS,
  type TestAccount,
  type TestContext,
  visitShare,
} from './support/harness.ts'

const DAY_MS = 86_400_000
const quiet = { error: () => {} }

async function shareOf(c: TestContext, a: TestAccount, fileId: string, body: object = {}) {
  const res = await call(c.app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId, ...body } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body.data as { id: string; publicId: string; publicUrl: string }
}

const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((file) => file.id)

describeEachEngine('trash', (ctx) => {
  test('a deleted file is gone from every endpoint, waits in the trash, and comes back with its link as it was', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Reports')
    const file = await createFile(c, a.id, { name: 'Quarterly report.pdf', folderId: folder.id })
    const other = await createFile(c, a.id, { name: 'Quarterly notes.txt', folderId: folder.id })
    const link = await shareOf(c, a, file.id, { expiresAt: new Date(Date.now() + 7 * DAY_MS).toISOString() })
    await visitShare(c.app, link, { views: 3, downloads: 2 })
    const page = new URL(link.publicUrl).pathname
    const asApi = (await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })).body.data
    assert.equal(asApi.share.viewCount, 3)

    const before = Date.now()
    const deleted = await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token })
    assert.deepEqual(deleted.body, { data: { id: file.id } })
    const token = a.token
    assertError(await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token }), 404, 'not_found')
    assertError(await call(c.app, 'GET', `/api/v1/files/${file.id}/download`, { token }), 404, 'not_found')
    assertError(
      await call(c.app, 'PATCH', `/api/v1/files/${file.id}`, { token, body: { name: 'x' } }),
      404,
      'not_found',
    )
    assert.deepEqual(ids(await call(c.app, 'GET', '/api/v1/files', { token })), [other.id])
    assert.deepEqual(ids(await call(c.app, 'GET', '/api/v1/files?sort=name', { token })), [other.id])
    assert.deepEqual(ids(await call(c.app, 'GET', '/api/v1/files?query=quarterly', { token })), [other.id])
    assert.deepEqual(ids(await call(c.app, 'GET', `/api/v1/files?folderId=${folder.id}`, { token })), [
      other.id,
    ])
    assert.equal(await folderCounts(c.app, a, folder.id), 1)
    assertError(await call(c.app, 'GET', `/api/v1/shares/${link.id}`, { token }), 404, 'not_found')
    assert.deepEqual(ids(await call(c.app, 'GET', '/api/v1/shares', { token })), [])
    assert.equal((await c.app.inject({ method: 'GET', url: page })).statusCode, 404)
    assert.equal((await c.app.inject({ method: 'GET', url: `${page}/download` })).statusCode, 404)
    const analytics = (await call(c.app, 'GET', '/api/v1/analytics', { token })).body.data
    assert.deepEqual([analytics.shares, analytics.views, analytics.downloads], [0, 3, 2])

    // The trash holds it as it was, with when it was deleted and when it goes for good.
    const trash = await call(c.app, 'GET', '/api/v1/trash', { token })
    assert.equal(trash.status, 200)
    assert.equal(trash.body.data.length, 1)
    const [inTrash] = trash.body.data
    const { deletedAt, purgeAt, ...rest } = inTrash
    // As it was, in the folder as it is now.
    assert.deepEqual(rest, { ...asApi, folder: { ...asApi.folder, fileCount: 1 } })
    assert.match(deletedAt, ISO_MS)
    assert.ok(Date.parse(deletedAt) >= before && Date.parse(deletedAt) <= Date.now())
    assert.equal(Date.parse(purgeAt) - Date.parse(deletedAt), 30 * DAY_MS)
    assert.deepEqual(trash.body.pagination, { nextCursor: null })
    assert.deepEqual(await c.app.services.trash.size(a.id), { files: 1, bytes: file.size })

    // Restored: in its folder, with the same link, counts and settings; its page opens again.
    const restored = await call(c.app, 'POST', `/api/v1/trash/${file.id}/restore`, { token })
    assert.equal(restored.status, 200)
    assert.deepEqual(restored.body.data, { ...asApi, folder: { ...asApi.folder, fileCount: 2 } })
    assert.equal(await folderCounts(c.app, a, folder.id), 2)
    assert.equal((await c.app.inject({ method: 'GET', url: page })).statusCode, 200)
    const share = (await call(c.app, 'GET', `/api/v1/shares/${link.id}`, { token })).body.data
    assert.deepEqual([share.publicUrl, share.viewCount, share.downloadCount], [link.publicUrl, 4, 2])
    assert.deepEqual(ids(await call(c.app, 'GET', '/api/v1/files?query=report', { token })), [file.id])
    assert.deepEqual((await call(c.app, 'GET', '/api/v1/trash', { token })).body.data, [])
    assertError(await call(c.app, 'POST', `/api/v1/trash/${file.id}/restore`, { token }), 404, 'not_found')
  })

  test('a file whose folder was deleted meanwhile comes back to the root', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Gone soon')
    const file = await createFile(c, a.id, { folderId: folder.id })
    await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token })
    assert.equal(
      (await call(c.app, 'DELETE', `/api/v1/folders/${folder.id}`, { token: a.token })).status,
      200,
    )
    const restored = await call(c.app, 'POST', `/api/v1/trash/${file.id}/restore`, { token: a.token })
    assert.equal(restored.status, 200)
    assert.deepEqual([restored.body.data.folderId, restored.body.data.folder], [null, null])
    assert.deepEqual(ids(await call(c.app, 'GET', '/api/v1/files', { token: a.token })), [file.id])
  })

  test('the trash pages newest deleted first; deleted for good one by one or all at once, bytes and all', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const files = []
    for (let i = 0; i < 5; i++) {
      const file = await createFile(c, a.id, { name: `f${i}.txt` })
      files.push(file)
      await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token })
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : '?limit=2'
      const res = await call(c.app, 'GET', `/api/v1/trash${query}`, { token: a.token })
      assert.equal(res.status, 200)
      seen.push(...ids(res))
      cursor = res.body.pagination.nextCursor
    } while (cursor)
    assert.deepEqual(seen, files.map((file) => file.id).reverse())
    assertError(
      await call(c.app, 'GET', '/api/v1/trash?cursor=nonsense', { token: a.token }),
      400,
      'invalid_request',
    )
    assertError(await call(c.app, 'GET', '/api/v1/trash?limit=0', { token: a.token }), 400, 'invalid_request')

    const [first, ...others] = files
    assert.ok(first)
    const one = await call(c.app, 'DELETE', `/api/v1/trash/${first.id}`, { token: a.token })
    assert.deepEqual(one.body, { data: { id: first.id } })
    assert.equal(await c.blobs.stat(first.blobKey), undefined)
    assertError(
      await call(c.app, 'DELETE', `/api/v1/trash/${first.id}`, { token: a.token }),
      404,
      'not_found',
    )
    for (const file of others) assert.deepEqual(await c.blobs.stat(file.blobKey), { size: file.size })
    const emptied = await call(c.app, 'DELETE', '/api/v1/trash', { token: a.token })
    assert.deepEqual(emptied.body, { data: { deletedCount: 4 } })
    for (const file of others) assert.equal(await c.blobs.stat(file.blobKey), undefined)
    assert.deepEqual((await call(c.app, 'DELETE', '/api/v1/trash', { token: a.token })).body, {
      data: { deletedCount: 0 },
    })
    assert.deepEqual(await c.app.services.trash.size(a.id), { files: 0, bytes: 0 })
  })

  test('only the trash answers for a trashed file, and only for its account, with the scopes of files', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const inUse = await createFile(c, a.id)
    const trashed = await createFile(c, a.id)
    await call(c.app, 'DELETE', `/api/v1/files/${trashed.id}`, { token: a.token })
    // A file never trashed is not the trash's; a trashed one is not the files endpoints' (nor deleted twice).
    assertError(
      await call(c.app, 'POST', `/api/v1/trash/${inUse.id}/restore`, { token: a.token }),
      404,
      'not_found',
    )
    assertError(
      await call(c.app, 'DELETE', `/api/v1/trash/${inUse.id}`, { token: a.token }),
      404,
      'not_found',
    )
    const again = await call(c.app, 'DELETE', '/api/v1/files', {
      token: a.token,
      body: { fileIds: [trashed.id] },
    })
    assert.deepEqual(again.body, { data: { deletedIds: [] } })
    // Another account sees none of it.
    assert.deepEqual((await call(c.app, 'GET', '/api/v1/trash', { token: b.token })).body.data, [])
    for (const [method, path] of [
      ['POST', `/api/v1/trash/${trashed.id}/restore`],
      ['DELETE', `/api/v1/trash/${trashed.id}`],
    ] as const) {
      assertError(await call(c.app, method, path, { token: b.token }), 404, 'not_found')
    }
    assert.deepEqual((await call(c.app, 'DELETE', '/api/v1/trash', { token: b.token })).body.data, {
      deletedCount: 0,
    })
    assert.deepEqual(await c.app.services.trash.size(a.id), { files: 1, bytes: trashed.size })
    assertError(
      await call(c.app, 'DELETE', `/api/v1/trash/${chars(129)}`, { token: a.token }),
      400,
      'invalid_request',
    )
    // files:read lists the trash; restoring and deleting need files:write.
    const reader = await a.key(['files:read'])
    const writer = await a.key(['files:write'])
    const other = await a.key(['shares:read'])
    assert.equal((await call(c.app, 'GET', '/api/v1/trash', { token: reader })).status, 200)
    assertError(await call(c.app, 'GET', '/api/v1/trash', { token: other }), 403, 'insufficient_scope')
    for (const [method, path] of [
      ['POST', `/api/v1/trash/${trashed.id}/restore`],
      ['DELETE', `/api/v1/trash/${trashed.id}`],
      ['DELETE', '/api/v1/trash'],
    ] as const) {
      assertError(await call(c.app, method, path, { token: reader }), 403, 'insufficient_scope')
    }
    assert.equal(
      (await call(c.app, 'POST', `/api/v1/trash/${trashed.id}/restore`, { token: writer })).status,
      200,
    )
    assertError(await call(c.app, 'GET', '/api/v1/trash'), 401, 'unauthorized')
  })

  test('a restore and a delete for good at the same moment: one wins, and a file never loses its bytes', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const outcomes = new Set<string>()
    for (let i = 0; i < 20; i++) {
      const file = await createFile(c, a.id)
      const link = await shareOf(c, a, file.id)
      await visitShare(c.app, link, { views: 1 })
      await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token })
      const totals = (await call(c.app, 'GET', '/api/v1/analytics', { token: a.token })).body.data
      const [restored, forGood] = await Promise.all([
        call(c.app, 'POST', `/api/v1/trash/${file.id}/restore`, { token: a.token }),
        call(c.app, 'DELETE', `/api/v1/trash/${file.id}`, { token: a.token }),
      ])
      outcomes.add(`${restored.status} ${forGood.status}`)
      if (restored.status === 200) {
        assert.equal(forGood.status, 404)
        assert.deepEqual(await c.blobs.stat(file.blobKey), { size: file.size })
        assert.equal((await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })).status, 200)
      } else {
        assert.deepEqual([restored.status, forGood.status], [404, 200])
        assert.equal(await c.blobs.stat(file.blobKey), undefined)
      }
      // What the link counted is counted once, whichever won.
      const after = (await call(c.app, 'GET', '/api/v1/analytics', { token: a.token })).body.data
      assert.deepEqual([after.views, after.downloads], [totals.views, totals.downloads])
    }
    assert.ok(outcomes.size >= 1)
  })

  test('the purge takes what passed its time, for good, keeping what its links counted', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const old = await createFile(c, a.id, { name: 'old.txt' })
    const link = await shareOf(c, a, old.id)
    await visitShare(c.app, link, { views: 2, downloads: 1 })
    await call(c.app, 'DELETE', `/api/v1/files/${old.id}`, { token: a.token })
    const later = Date.now() + 10 * DAY_MS
    const recent = await createFile(c, a.id, { name: 'recent.txt' })
    await call(c.app, 'DELETE', `/api/v1/files/${recent.id}`, { token: a.token })
    const totals = (await call(c.app, 'GET', '/api/v1/analytics', { token: a.token })).body.data

    // Ten days on, nothing is due; thirty days and a minute on, both are.
    assert.equal(await c.app.services.trash.purge(quiet, later), 0)
    assert.equal((await call(c.app, 'GET', '/api/v1/trash', { token: a.token })).body.data.length, 2)
    // (Other tests' accounts have nothing left in the trash to purge.)
    assert.equal(await c.app.services.trash.purge(quiet, Date.now() + 30 * DAY_MS + 60_000), 2)
    assert.deepEqual((await call(c.app, 'GET', '/api/v1/trash', { token: a.token })).body.data, [])
    for (const file of [old, recent]) assert.equal(await c.blobs.stat(file.blobKey), undefined)
    const shares = await c.db.kysely.selectFrom('shares').select('id').where('id', '=', link.id).execute()
    assert.deepEqual(shares, [])
    const after = (await call(c.app, 'GET', '/api/v1/analytics', { token: a.token })).body.data
    assert.deepEqual(after, totals)
    assert.deepEqual([after.views, after.downloads], [2, 1])
  })
})

describeEachEngine(
  'without a trash (TRASH_RETENTION_DAYS=0)',
  (ctx) => {
    test('a delete is final at once, and the trash stays empty', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id)
      const index = (await call(c.app, 'GET', '/api/v1/')).body
      assert.deepEqual(index.trash, { retentionDays: 0 })
      assert.equal((await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token })).status, 200)
      assert.equal(await c.blobs.stat(file.blobKey), undefined)
      assert.deepEqual((await call(c.app, 'GET', '/api/v1/trash', { token: a.token })).body.data, [])
      assertError(
        await call(c.app, 'POST', `/api/v1/trash/${file.id}/restore`, { token: a.token }),
        404,
        'not_found',
      )
    })
  },
  { env: { TRASH_RETENTION_DAYS: '0' } },
)
