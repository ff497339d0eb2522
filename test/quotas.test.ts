// Quotas (issue 45, 2): an account's usage is kept exact by the triggers of migration 0035 through every change of
// its files (uploads, trash, restore, delete for good, the purge, a folder's delete, the account's delete); a
// preparation that would pass the quota, or a file larger than the largest file, is refused before a byte is sent
// (413 quota_exceeded) on the owner's API and on a file request's public API (in the submitter's words), and
// preparations reserve what they declared, at once or one after another; a transfer cannot pass its declared
// size, so nothing is stored beyond the quota; GET /usage says it all. On each engine.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BlobFileTooLargeError } from '@vercel/blob'
import type { Db } from '../src/platform/db/database.ts'
import { NO_ROOM_MESSAGES } from '../src/resources/requests/public-requests.service.ts'
import { assertError, call, createAccount, createFile, ENGINES, type TestAccount } from './support/harness.ts'
import { newFolder, newRequest, publicIdOf } from './support/requests-helpers.ts'
import { preparePublic, sendBytes, settle } from './support/submissions.ts'
import { expectRejection, stagedKeys } from './support/upload-helpers.ts'
import {
  type FileToPrepare,
  type ListeningContext,
  seededStream,
  startListening,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

/** Every account's usage as the triggers kept it, and as a real sum of its files finds it. */
async function usageRowsAndSums(db: Db) {
  const kept = await db.kysely
    .selectFrom('account_usage')
    .select(['account_id', 'files', 'bytes', 'trash_files', 'trash_bytes'])
    .orderBy('account_id')
    .execute()
  const summed = await db.kysely
    .selectFrom('files')
    .select((eb) => [
      'account_id',
      eb.fn.countAll<number>().as('files'),
      eb.fn.sum<number>('size').as('bytes'),
      eb.fn.sum<number>(eb.case().when('trashed_at', 'is not', null).then(1).else(0).end()).as('trash_files'),
      eb.fn
        .sum<number>(eb.case().when('trashed_at', 'is not', null).then(eb.ref('size')).else(0).end())
        .as('trash_bytes'),
    ])
    .groupBy('account_id')
    .orderBy('account_id')
    .execute()
  const norm = (rows: Record<string, unknown>[]) =>
    rows
      .map((r) => ({
        account: String(r.account_id),
        files: Number(r.files),
        bytes: Number(r.bytes),
        trashFiles: Number(r.trash_files),
        trashBytes: Number(r.trash_bytes),
      }))
      // A row of zeros is an account whose files all went: the sum has no row for it.
      .filter((r) => r.files !== 0 || r.bytes !== 0)
  return { kept: norm(kept), summed: norm(summed) }
}

async function assertExact(db: Db, where: string) {
  const { kept, summed } = await usageRowsAndSums(db)
  assert.deepEqual(kept, summed, `usage kept by the triggers = a real sum, ${where}`)
}

for (const engine of ENGINES) {
  describe(`quotas [${engine}]`, () => {
    let c: ListeningContext
    before(async () => {
      c = await startListening(engine, { env: { DEFAULT_QUOTA_BYTES: '1000' } })
      process.env.VERCEL_BLOB_API_URL = `${c.base}/blob`
      process.env.VERCEL_BLOB_RETRIES = '1'
    })
    after(async () => c?.stop())

    const prepare = (account: TestAccount, files: FileToPrepare[]) =>
      call(c.app, 'POST', '/api/v1/files', { token: account.token, body: { files } })
    const usage = async (account: TestAccount) => {
      const res = await call(c.app, 'GET', '/api/v1/usage', { token: account.token })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return res.body.data
    }
    const file = (size: number, name = 'f.bin'): FileToPrepare => ({
      name,
      type: 'application/octet-stream',
      size,
    })

    test("the session's quota (the menu's bar) is the quota the service applies: its own, unlimited, the default", async () => {
      const a = await createAccount(c.app)
      const account = await c.app.services.accounts.getByEmail(
        (await c.app.services.admin.account(a.id)).email,
      )
      const { secret } = await c.app.services.sessions.start(account)
      const sessionQuota = async () =>
        (await c.app.services.sessions.resume(secret))?.account.usage?.quotaBytes
      for (const change of [{ quotaBytes: 5000 }, { quotaBytes: null }, { quotaBytes: 'default' as const }]) {
        const applied = await c.app.services.quotas.set(a.id, change)
        assert.equal(await sessionQuota(), applied.quotaBytes, JSON.stringify(change))
      }
      assert.equal(await sessionQuota(), 1000, 'DEFAULT_QUOTA_BYTES')
    })

    test('GET /usage: nothing stored, the default quota; an admin sets a quota, unlimited, the default again, a largest file', async () => {
      const a = await createAccount(c.app)
      assert.deepEqual(await usage(a), {
        files: 0,
        bytes: 0,
        trashFiles: 0,
        trashBytes: 0,
        quotaBytes: 1000,
        maxFileBytes: null,
        available: 1000,
      })
      await createFile(c, a.id, { content: 'x'.repeat(300) })
      const quotas = c.app.services.quotas
      await quotas.set(a.id, { quotaBytes: 5000, maxFileBytes: 2000 })
      assert.deepEqual(await usage(a), {
        files: 1,
        bytes: 300,
        trashFiles: 0,
        trashBytes: 0,
        quotaBytes: 5000,
        maxFileBytes: 2000,
        available: 4700,
      })
      await quotas.set(a.id, { quotaBytes: null })
      assert.deepEqual(
        { ...(await usage(a)) },
        {
          files: 1,
          bytes: 300,
          trashFiles: 0,
          trashBytes: 0,
          quotaBytes: null,
          maxFileBytes: 2000,
          available: null,
        },
      )
      await quotas.set(a.id, { quotaBytes: 'default', maxFileBytes: null })
      const back = await usage(a)
      assert.equal(back.quotaBytes, 1000)
      assert.equal(back.maxFileBytes, null)
      // Under the quota's bytes: the available room is never negative.
      await quotas.set(a.id, { quotaBytes: 100 })
      assert.equal((await usage(a)).available, 0)
      // Batched: one read for many accounts; an unknown id is left out.
      const b = await createAccount(c.app)
      const many = await quotas.usageOf([a.id, b.id, 'acc_unknown'])
      assert.deepEqual([...many.keys()].sort(), [a.id, b.id].sort())
      assert.deepEqual(many.get(b.id), {
        files: 0,
        bytes: 0,
        trashFiles: 0,
        trashBytes: 0,
        quotaSetting: 'default',
        quotaBytes: 1000,
        maxFileBytes: null,
      })
      assert.equal((await quotas.usage(a.id)).quotaSetting, 'own')
      await assert.rejects(quotas.set(a.id, { quotaBytes: -1 }), /whole number/)
      await assert.rejects(quotas.set('acc_unknown', { quotaBytes: 1 }), /not found/)
      // The capability index names the address and the default.
      const index = await call(c.app, 'GET', '/api/v1/')
      assert.deepEqual(index.body.quotas, { usageUrl: `${c.base}/api/v1/usage`, defaultQuotaBytes: 1000 })
      // files:read is the scope.
      const writeOnly = await a.key(['files:write'])
      assertError(await call(c.app, 'GET', '/api/v1/usage', { token: writeOnly }), 403, 'insufficient_scope')
    })

    test('the owner API refuses a preparation that would pass the quota, and a file larger than the largest file, with 413 and nothing prepared', async () => {
      const a = await createAccount(c.app)
      await createFile(c, a.id, { content: 'x'.repeat(400) })
      const refused = await prepare(a, [file(300, 'a'), file(301, 'b')])
      const message = assertError(refused, 413, 'quota_exceeded')
      assert.match(message, /601 bytes/)
      assert.match(message, /400 bytes \(400 bytes\) are used of 1000/)
      assert.equal(
        refused.body.error.hint,
        'Delete files and empty the trash, or ask an admin for a larger quota.',
      )
      const intents = await c.db.kysely
        .selectFrom('upload_intents')
        .select('id')
        .where('account_id', '=', a.id)
        .execute()
      assert.deepEqual(intents, [])
      // Exactly up to the quota is fine.
      assert.equal((await prepare(a, [file(600)])).status, 201)
      // The largest file: its own refusal, naming the file.
      await c.app.services.quotas.set(a.id, { quotaBytes: null, maxFileBytes: 50 })
      const big = await prepare(a, [file(10, 'ok'), file(51, 'big')])
      assert.match(assertError(big, 413, 'quota_exceeded'), /"big" has 51 bytes.*largest file.*50 bytes/)
      assert.equal(big.body.error.field, 'files[1].size')
      assert.equal((await prepare(a, [file(50)])).status, 201)
    })

    test('preparations reserve what they declared: one after another, and twenty at once, never pass the quota', async () => {
      const a = await createAccount(c.app)
      const first = await prepare(a, [file(600)])
      assert.equal(first.status, 201)
      assertError(await prepare(a, [file(401)]), 413, 'quota_exceeded')
      // Cancelling gives the reservation back.
      const [grant] = first.body.data.uploads
      const cancelled = await c.app.services.uploads.cancel(a.id, [grant.intentId])
      assert.equal(cancelled, undefined)
      assert.equal((await prepare(a, [file(1000)])).status, 201)
      assertError(await prepare(a, [file(1)]), 413, 'quota_exceeded')

      const b = await createAccount(c.app)
      const results = await Promise.all(Array.from({ length: 20 }, () => prepare(b, [file(100)])))
      const granted = results.filter((r) => r.status === 201)
      for (const r of results) if (r.status !== 201) assertError(r, 413, 'quota_exceeded')
      assert.equal(granted.length, 10, 'ten of a hundred bytes fill a quota of a thousand')
    })

    test('a transfer cannot pass its declared size (the reservation): cut, nothing stored, usage unchanged', async () => {
      const a = await createAccount(c.app)
      const res = await prepare(a, [file(1000, 'all.bin')])
      assert.equal(res.status, 201)
      const [grant] = res.body.data.uploads
      await expectRejection(
        uploadWithGrant(grant, seededStream(1001)),
        BlobFileTooLargeError,
        /cannot be greater than 1000 bytes/,
      )
      await expectRejection(
        uploadWithGrant(grant, Buffer.alloc(5000)),
        BlobFileTooLargeError,
        /cannot be greater than 1000 bytes/,
      )
      assert.deepEqual(await stagedKeys(c, grant.intentId), [])
      assert.equal((await usage(a)).bytes, 0)
      // The declared bytes go through, and fill the quota exactly.
      await uploadWithGrant(grant, Buffer.alloc(1000, 1))
      assert.equal((await waitForUpload(grant, a.token)).status, 'complete')
      const after = await usage(a)
      assert.equal(after.bytes, 1000)
      assert.equal(after.available, 0)
      assertError(await prepare(a, [file(1)]), 413, 'quota_exceeded')
    })

    test("a file request's submission counts toward its owner's quota; the submitter is told in plain words, and nothing of the owner", async () => {
      const a = await createAccount(c.app)
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const publicId = publicIdOf(r)
      await createFile(c, a.id, { content: 'x'.repeat(900) })
      const fields = { submitterName: 'Sam' }
      const refused = await preparePublic(c.app, publicId, fields, [
        { name: 'a.txt', type: 'text/plain', content: 'y'.repeat(60) },
        { name: 'b.txt', type: 'text/plain', content: 'y'.repeat(60) },
      ])
      assert.equal(assertError(refused, 413, 'quota_exceeded'), NO_ROOM_MESSAGES.quota)
      assert.equal(
        refused.body.error.message,
        'This file request cannot take these files: there is not enough room left for them.',
      )
      const { message, hint } = refused.body.error
      assert.doesNotMatch(`${message} ${hint}`, /900|1000|1 kB|bytes|quota|account|@/)
      // What fits goes through, and counts.
      const ok = await preparePublic(c.app, publicId, fields, [
        { name: 'a.txt', type: 'text/plain', content: 'y'.repeat(100) },
      ])
      assert.equal(ok.status, 201, JSON.stringify(ok.body))
      const [grant] = ok.body.data.uploads
      await sendBytes(grant, 'y'.repeat(100))
      assert.equal((await settle(c.app, publicId, [grant]))[0]?.status, 'complete')
      assert.equal((await usage(a)).bytes, 1000)
      // The owner's largest file is the request's largest file: its page and its API say it, and a larger file
      // is refused as any file over the request's limit is, before anything is prepared.
      await c.app.services.quotas.set(a.id, { quotaBytes: null, maxFileBytes: 10 })
      const shown = await call(c.app, 'GET', `/api/v1/public/requests/${publicId}`)
      assert.equal(shown.body.data.maxFileSize, 10)
      const page = await c.app.inject({ method: 'GET', url: `/r/${publicId}` })
      assert.match(page.body, /data-max-file-size="10"/)
      const big = await preparePublic(c.app, publicId, fields, [
        { name: 'big.txt', type: 'text/plain', content: 'z'.repeat(11) },
      ])
      assert.match(assertError(big, 400, 'invalid_request'), /this request accepts files of at most 10 bytes/)
      assert.equal(big.body.error.field, 'files[0].size')
      await c.app.services.quotas.set(a.id, { maxFileBytes: null })
      assert.equal(
        (await call(c.app, 'GET', `/api/v1/public/requests/${publicId}`)).body.data.maxFileSize,
        c.config.maxFileSize,
      )
    })

    test('usage stays exact through uploads, trash, restore, delete for good, emptying, the purge, a folder delete and the account delete', async () => {
      const a = await createAccount(c.app)
      const b = await createAccount(c.app)
      for (const account of [a, b]) await c.app.services.quotas.set(account.id, { quotaBytes: null })
      const folder = await newFolder(c.app, a.token)
      const files = []
      for (let i = 0; i < 6; i++) {
        files.push(
          await createFile(c, a.id, { content: 'a'.repeat(10 + i), folderId: i < 3 ? folder.id : null }),
        )
      }
      const other = await createFile(c, b.id, { content: 'b'.repeat(77) })
      // An upload, through the whole protocol.
      const up = await prepare(a, [file(123, 'up.bin')])
      const [grant] = up.body.data.uploads
      await uploadWithGrant(grant, Buffer.alloc(123, 2))
      assert.equal((await waitForUpload(grant, a.token)).status, 'complete')
      await assertExact(c.db, 'after creating and uploading')
      const u = await usage(a)
      assert.deepEqual(
        { files: u.files, bytes: u.bytes, trashBytes: u.trashBytes },
        { files: 7, bytes: 10 + 11 + 12 + 13 + 14 + 15 + 123, trashBytes: 0 },
      )

      const [f0, f1, f2, f3, f4, f5] = files
      assert.ok(f0 && f1 && f2 && f3 && f4 && f5)
      const del = (id: string) => call(c.app, 'DELETE', `/api/v1/files/${id}`, { token: a.token })
      for (const f of [f0, f1, f3, f4]) assert.equal((await del(f.id)).status, 200)
      await assertExact(c.db, 'after moving files to the trash')
      const trashed = await usage(a)
      assert.equal(trashed.trashFiles, 4)
      assert.equal(trashed.trashBytes, 10 + 11 + 13 + 14)
      assert.equal(trashed.bytes, u.bytes, 'the trash counts')

      assert.equal(
        (await call(c.app, 'POST', `/api/v1/trash/${f0.id}/restore`, { token: a.token })).status,
        200,
      )
      await assertExact(c.db, 'after a restore')
      assert.equal((await call(c.app, 'DELETE', `/api/v1/trash/${f1.id}`, { token: a.token })).status, 200)
      await assertExact(c.db, 'after a delete for good')
      assert.equal((await usage(a)).bytes, u.bytes - 11)

      // A folder's delete: its files (in use and in the trash) move to the root, and still count.
      assert.equal(
        (await call(c.app, 'DELETE', `/api/v1/folders/${folder.id}`, { token: a.token })).status,
        200,
      )
      await assertExact(c.db, "after a folder's delete")

      // The purge, when their time is up.
      await c.app.services.trash.purge({ error() {}, warn() {} } as never, Date.now() + 365 * 86_400_000)
      await assertExact(c.db, 'after the purge')
      assert.equal((await usage(a)).trashBytes, 0)
      assert.equal((await usage(a)).bytes, u.bytes - 11 - 13 - 14)

      await del(f5.id)
      assert.equal((await call(c.app, 'DELETE', '/api/v1/trash', { token: a.token })).status, 200)
      await assertExact(c.db, 'after emptying the trash')

      // The account's delete takes its row of usage with its files; the other account's stays.
      await c.db.kysely.deleteFrom('accounts').where('id', '=', a.id).execute()
      await assertExact(c.db, "after the account's delete")
      const left = await c.db.kysely
        .selectFrom('account_usage')
        .select('account_id')
        .where('account_id', '=', a.id)
        .execute()
      assert.deepEqual(left, [])
      assert.equal((await usage(b)).bytes, other.size)
    })
  })
}
