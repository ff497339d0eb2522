// The audit log of what an account's content goes through (issue 45, 4): its share and folder links made,
// changed and turned off, its files moved to the trash, restored and deleted for good, its file requests made,
// changed and closed (by the owner, by a submitter filling one, by the deadline), and its webhooks. Each entry
// is checked as the API's calls leave it: the right account, actor (the key's name; a visitor or the system
// where no one signed in acts), address, subject and details; refused changes and visits leave none, another
// account's actions never appear under the account's id, and no password, secret or grant is ever written.
// The app's forms and MCP's tools reach the same services, and record the same kinds by who signed them in.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { assertNoSecretIn, auditEntries, lastEntry, type RecordedEntry } from './support/audit.ts'
import { connectMcp } from './support/coffer-command.ts'
import { createFolder } from './support/files-helpers.ts'
import {
  assertError,
  call,
  createAccount,
  createFile,
  describeEachEngine,
  ENGINES,
  type TestAccount,
  type TestContext,
  visitShare,
} from './support/harness.ts'
import { newRequest, publicIdOf, REQUESTS } from './support/requests-helpers.ts'
import { submit } from './support/submissions.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, WebClient } from './support/web-client.ts'

const DAY_MS = 86_400_000
const quiet = { error: () => {} }
/** Where the API's calls of these tests come from, as the log must say. */
const ADDRESS = '203.0.113.45'
const KEY = { type: 'key', name: 'test' }

/** Every entry of the account, newest first. */
const entriesOf = (c: TestContext, account: TestAccount) => auditEntries(c.db, { accountId: account.id })

/** The account's newest entry of `kind`, made by its key from ADDRESS about `subjectId`. */
async function byKey(c: TestContext, account: TestAccount, kind: string, subjectId: string) {
  const entry = await lastEntry(c.db, account.id, kind)
  assert.equal(entry.accountId, account.id)
  assert.deepEqual({ type: entry.actor.type, name: entry.actor.name }, KEY)
  assert.ok(entry.actor.id, 'the key is named by its id too')
  assert.equal(entry.address, ADDRESS)
  assert.equal(entry.subjectId, subjectId)
  return entry
}

describeEachEngine(
  'audit log of content',
  (ctx) => {
    const api = (account: TestAccount, method: string, url: string, body?: unknown) =>
      call(ctx().app, method, `/api/v1${url}`, { token: account.token, ip: ADDRESS, body })

    test('share links: made, changed, turned off and on, with settings but never the password', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id, { name: 'report.pdf' })
      const password = 'correct horse battery staple'
      const made = await api(a, 'POST', '/shares', { fileId: file.id, password, maxDownloads: 5 })
      assert.equal(made.status, 201)
      const shareId = made.body.data.id
      const created = await byKey(c, a, 'share.created', shareId)
      assert.deepEqual(created.details, {
        fileId: file.id,
        name: 'report.pdf',
        expiresAt: null,
        maxDownloads: 5,
        hasPassword: true,
      })

      const newPassword = 'another long passphrase'
      const expiresAt = new Date(Date.now() + 7 * DAY_MS).toISOString()
      assert.equal(
        (await api(a, 'PATCH', `/shares/${shareId}`, { password: newPassword, maxDownloads: 10, expiresAt }))
          .status,
        200,
      )
      const changed = await byKey(c, a, 'share.changed', shareId)
      assert.deepEqual(changed.details, {
        changed: ['expiresAt', 'password', 'maxDownloads'],
        fileId: file.id,
        name: 'report.pdf',
        expiresAt,
        maxDownloads: 10,
        hasPassword: true,
      })

      // The same values again change nothing, and say nothing.
      const count = (await entriesOf(c, a)).length
      assert.equal((await api(a, 'PATCH', `/shares/${shareId}`, { maxDownloads: 10 })).status, 200)
      assert.equal((await entriesOf(c, a)).length, count)

      assert.equal((await api(a, 'PATCH', `/shares/${shareId}`, { isActive: false })).status, 200)
      const deleted = await byKey(c, a, 'share.deleted', shareId)
      assert.deepEqual(deleted.details.changed, ['isActive'])

      // Turned on again, by PATCH or by POST: made again (reactivated).
      assert.equal((await api(a, 'PATCH', `/shares/${shareId}`, { isActive: true })).status, 200)
      assert.equal((await entriesOf(c, a)).filter((e) => e.kind === 'share.created').length, 2)
      assert.equal(
        (await api(a, 'PATCH', `/shares/${shareId}`, { isActive: false, password: null })).status,
        200,
      )
      assert.deepEqual((await byKey(c, a, 'share.deleted', shareId)).details.changed, [
        'isActive',
        'password',
      ])
      assert.equal((await api(a, 'POST', '/shares', { fileId: file.id })).status, 201)
      const reactivated = await byKey(c, a, 'share.created', shareId)
      assert.equal(reactivated.details.hasPassword, false)
      assert.equal((await entriesOf(c, a)).filter((e) => e.kind === 'share.created').length, 3)

      const hashes = await c.db.kysely.selectFrom('shares').select('password_hash').execute()
      await assertNoSecretIn(c.db, [
        password,
        newPassword,
        ...hashes.flatMap((row) => (row.password_hash ? [row.password_hash] : [])),
      ])
    })

    test('views and downloads of a link are not recorded', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id)
      const made = await api(a, 'POST', '/shares', { fileId: file.id })
      const count = (await entriesOf(c, a)).length
      await visitShare(c.app, made.body.data, { views: 3, downloads: 2 })
      assert.equal((await entriesOf(c, a)).length, count)
    })

    test('folder links: made, changed and turned off', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const folder = await createFolder(c.app, a, 'Holiday photos')
      const expiresAt = new Date(Date.now() + 3 * DAY_MS).toISOString()
      const made = await api(a, 'POST', '/folder-shares', { folderId: folder.id, expiresAt })
      assert.equal(made.status, 201)
      const shareId = made.body.data.id
      const created = await byKey(c, a, 'folder_share.created', shareId)
      assert.deepEqual(created.details, {
        folderId: folder.id,
        name: 'Holiday photos',
        expiresAt,
        maxDownloads: null,
        hasPassword: false,
      })
      const password = 'folder link password'
      assert.equal(
        (await api(a, 'PATCH', `/folder-shares/${shareId}`, { expiresAt: null, password })).status,
        200,
      )
      const changed = await byKey(c, a, 'folder_share.changed', shareId)
      assert.deepEqual(changed.details.changed, ['expiresAt', 'password'])
      assert.equal(changed.details.expiresAt, null)
      assert.equal(changed.details.hasPassword, true)
      assert.equal((await api(a, 'PATCH', `/folder-shares/${shareId}`, { isActive: false })).status, 200)
      await byKey(c, a, 'folder_share.deleted', shareId)
      await assertNoSecretIn(c.db, [password])
    })

    test('a folder deleted ends its working link, recorded; a link its owner had turned off is not again', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const deletions = async () => (await entriesOf(c, a)).filter((e) => e.kind === 'folder_share.deleted')
      const linked = await createFolder(c.app, a, 'Shared drafts')
      const made = await api(a, 'POST', '/folder-shares', { folderId: linked.id, maxDownloads: 5 })
      assert.equal(made.status, 201)
      assert.equal((await api(a, 'DELETE', `/folders/${linked.id}`)).status, 200)
      const ended = await byKey(c, a, 'folder_share.deleted', made.body.data.id)
      assert.deepEqual(ended.details, {
        folderId: linked.id,
        name: 'Shared drafts',
        expiresAt: null,
        maxDownloads: 5,
        hasPassword: false,
        reason: 'folder_deleted',
      })

      const off = await createFolder(c.app, a, 'Old drafts')
      const offLink = await api(a, 'POST', '/folder-shares', { folderId: off.id })
      assert.equal(
        (await api(a, 'PATCH', `/folder-shares/${offLink.body.data.id}`, { isActive: false })).status,
        200,
      )
      assert.equal((await deletions()).length, 2)
      assert.equal((await api(a, 'DELETE', `/folders/${off.id}`)).status, 200)
      assert.equal((await deletions()).length, 2, 'turned off once, recorded once')
      // A folder without a link records nothing of links.
      const plain = await createFolder(c.app, a, 'Plain')
      assert.equal((await api(a, 'DELETE', `/folders/${plain.id}`)).status, 200)
      assert.equal((await deletions()).length, 2)
    })

    test('files: moved to the trash, restored, deleted for good by the key, purged by the system', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const [one, two, three] = await Promise.all(
        ['one.txt', 'two.txt', 'three.txt'].map((name) => createFile(c, a.id, { name })),
      )
      assert.ok(one && two && three)
      assert.equal((await api(a, 'DELETE', `/files/${one.id}`)).status, 200)
      assert.deepEqual((await byKey(c, a, 'file.trashed', one.id)).details, { name: 'one.txt' })
      assert.equal((await api(a, 'POST', `/trash/${one.id}/restore`)).status, 200)
      assert.deepEqual((await byKey(c, a, 'file.restored', one.id)).details, { name: 'one.txt' })

      for (const file of [one, two, three]) {
        assert.equal((await api(a, 'DELETE', `/files/${file.id}`)).status, 200)
      }
      assert.equal((await api(a, 'DELETE', `/trash/${one.id}`)).status, 200)
      assert.deepEqual((await byKey(c, a, 'file.deleted', one.id)).details, { name: 'one.txt' })

      // The purge, the service's own doing: one statement for the batch, outside any request.
      await c.app.services.trash.purge(quiet, Date.now() + 31 * DAY_MS)
      const purged = (await entriesOf(c, a)).filter(
        (e) => e.kind === 'file.deleted' && e.subjectId !== one.id,
      )
      assert.deepEqual(purged.map((e) => e.subjectId).sort(), [two.id, three.id].sort())
      for (const entry of purged) {
        assert.deepEqual(entry.actor, { type: 'system', id: null, name: null })
        assert.equal(entry.address, null)
        assert.equal(entry.accountId, a.id)
      }
      assert.equal(new Set(purged.map((e) => e.at)).size, 1, 'the batch was recorded at once')
    })

    test('emptying the trash records each file deleted for good, by the key', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const files = await Promise.all([1, 2, 3].map((i) => createFile(c, a.id, { name: `e${i}.txt` })))
      for (const file of files) assert.equal((await api(a, 'DELETE', `/files/${file.id}`)).status, 200)
      assert.equal((await api(a, 'DELETE', '/trash')).status, 200)
      const deleted = (await entriesOf(c, a)).filter((e) => e.kind === 'file.deleted')
      assert.deepEqual(
        deleted.map((e) => [e.subjectId, e.details.name, e.actor.name, e.address]).sort(),
        files.map((f) => [f.id, f.name, 'test', ADDRESS]).sort(),
      )
    })

    test('file requests: made, changed, closed by the owner, and closed at the deadline by the system', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const made = await call(c.app, 'POST', REQUESTS, {
        token: a.token,
        ip: ADDRESS,
        body: { title: 'Tax papers' },
      })
      assert.equal(made.status, 201, JSON.stringify(made.body))
      const id = made.body.data.id
      const created = await byKey(c, a, 'request.created', id)
      assert.equal(created.details.title, 'Tax papers')
      assert.equal(created.details.isActive, true)

      assert.equal(
        (await api(a, 'PATCH', `/requests/${id}`, { title: 'Tax papers 2026', description: 'All of them' }))
          .status,
        200,
      )
      const changed = await byKey(c, a, 'request.changed', id)
      assert.deepEqual(changed.details.changed, ['title', 'description'])
      assert.equal(changed.details.title, 'Tax papers 2026')

      assert.equal((await api(a, 'PUT', `/requests/${id}/limits`, { maxFiles: 5 })).status, 200)
      const limits = await byKey(c, a, 'request.changed', id)
      assert.deepEqual(limits.details.changed, ['maxFiles'])
      assert.equal(limits.details.maxFiles, 5)

      const count = (await entriesOf(c, a)).length
      assert.equal((await api(a, 'PATCH', `/requests/${id}`, { isActive: false })).status, 200)
      const closed = await byKey(c, a, 'request.closed', id)
      assert.equal(closed.details.reason, 'disabled')
      assert.equal((await entriesOf(c, a)).length, count + 1, 'closed, not changed as well')
      assert.equal((await api(a, 'PATCH', `/requests/${id}`, { isActive: true })).status, 200)
      assert.deepEqual((await byKey(c, a, 'request.changed', id)).details.changed, ['isActive'])

      const deadline = new Date(Date.now() + 60_000).toISOString()
      assert.equal((await api(a, 'PUT', `/requests/${id}/limits`, { deadline })).status, 200)
      await c.app.jobs.requestDeadlines.handlePassed(Date.now() + 90_000)
      const atDeadline = await lastEntry(c.db, a.id, 'request.closed')
      assert.equal(atDeadline.subjectId, id)
      assert.equal(atDeadline.details.reason, 'deadline')
      assert.equal(atDeadline.details.deadline, deadline)
      assert.deepEqual(atDeadline.actor, { type: 'system', id: null, name: null })
      assert.equal(atDeadline.address, null)
    })

    test('webhooks: made, changed, secret rotated, deleted; never the secret nor the URL’s path', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const token = 'T0123ABCD/B0456EFGH/xoxsecretpathtoken'
      const url = `http://127.0.0.1:9/services/${token}`
      const made = await api(a, 'POST', '/webhooks', { url, events: ['file.created'] })
      assert.equal(made.status, 201, JSON.stringify(made.body))
      const id = made.body.data.id
      const created = await byKey(c, a, 'webhook.created', id)
      assert.deepEqual(created.details, {
        origin: 'http://127.0.0.1:9',
        events: ['file.created'],
        isActive: true,
      })

      assert.equal(
        (
          await api(a, 'PATCH', `/webhooks/${id}`, {
            events: ['file.created', 'file.deleted'],
            isActive: false,
          })
        ).status,
        200,
      )
      const changed = await byKey(c, a, 'webhook.changed', id)
      assert.deepEqual(changed.details, {
        changed: ['events', 'isActive'],
        origin: 'http://127.0.0.1:9',
        events: ['file.created', 'file.deleted'],
        isActive: false,
      })

      const rotated = await api(a, 'POST', `/webhooks/${id}/rotate-secret`)
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body))
      const rotation = await byKey(c, a, 'webhook.changed', id)
      assert.deepEqual(rotation.details.changed, ['secret'])

      assert.equal((await api(a, 'DELETE', `/webhooks/${id}`)).status, 200)
      await byKey(c, a, 'webhook.deleted', id)
      await assertNoSecretIn(c.db, [
        made.body.data.secret,
        rotated.body.data.secret,
        token,
        'xoxsecretpathtoken',
      ])
    })

    test('the app’s forms record the same kinds, by the signed-in account', async () => {
      const c = ctx()
      const owner = await newOwner(c.app)
      const web = await WebClient.signedIn(c.app, owner.email)
      const file = await createFile(c, owner.id, { name: 'minutes.txt' })
      const made = await web.post(`/files/${file.id}/share`, {}, `/files/${file.id}`)
      assert.equal(made.statusCode, 303, made.body)
      const created = await lastEntry(c.db, owner.id, 'share.created')
      assert.deepEqual(created.actor, { type: 'account', id: owner.id, name: owner.email })
      const shareId = created.subjectId as string
      const password = 'a form’s link password'
      const settings = `/shares/${shareId}/settings`
      const saved = await web.post(settings, { expires: '', maxDownloads: '3', password })
      assert.equal(saved.statusCode, 303, saved.body)
      const changed = await lastEntry(c.db, owner.id, 'share.changed')
      // The form sends every field; only those that changed are named.
      assert.deepEqual(changed.details.changed, ['password', 'maxDownloads'])
      assert.deepEqual(changed.actor, created.actor)
      assert.equal((await web.post(`/shares/${shareId}/disable`, {}, settings)).statusCode, 303)
      assert.equal((await lastEntry(c.db, owner.id, 'share.deleted')).subjectId, shareId)
      await assertNoSecretIn(c.db, [password])
    })

    test('refused changes leave no entry', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id)
      const shareId = (await api(a, 'POST', '/shares', { fileId: file.id })).body.data.id
      const url = 'http://127.0.0.1:9/hook'
      await api(a, 'POST', '/webhooks', { url, events: ['file.created'] })
      const count = (await entriesOf(c, a)).length
      const past = new Date(Date.now() - DAY_MS).toISOString()
      assertError(await api(a, 'PATCH', `/shares/${shareId}`, { expiresAt: past }), 400, 'invalid_request')
      assertError(await api(a, 'POST', '/webhooks', { url, events: ['file.created'] }), 409, 'conflict')
      assertError(await api(a, 'DELETE', '/files/fil_0000000000000000000000000'), 404, 'not_found')
      assertError(
        await api(a, 'PATCH', `${'/requests'}/req_000000000000000000000000`, { title: 'abc' }),
        404,
        'not_found',
      )
      assert.equal((await entriesOf(c, a)).length, count)
    })

    test('another account’s actions never appear under the account’s id, nor can it change the account’s', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const b = await createAccount(c.app)
      const aFile = await createFile(c, a.id)
      const aShare = (await api(a, 'POST', '/shares', { fileId: aFile.id })).body.data.id
      const before = await entriesOf(c, a)

      const bFile = await createFile(c, b.id)
      const bShare = (await api(b, 'POST', '/shares', { fileId: bFile.id })).body.data.id
      const bRequest = await newRequest(c.app, b.token)
      assert.equal((await api(b, 'DELETE', `/files/${bFile.id}`)).status, 200)
      // B reaching for A's link and file: refused, and nothing recorded under either account.
      assertError(await api(b, 'PATCH', `/shares/${aShare}`, { isActive: false }), 404, 'not_found')
      assert.equal((await api(b, 'DELETE', `/files/${aFile.id}`)).status, 404)

      assert.deepEqual(await entriesOf(c, a), before)
      // Of B's content (its account and key were recorded too, by their own kinds).
      const ofB = (await entriesOf(c, b)).filter((e) => !/^(account|key)\./.test(e.kind))
      assert.deepEqual(ofB.map((e) => e.kind).sort(), ['file.trashed', 'request.created', 'share.created'])
      assert.ok(ofB.every((e: RecordedEntry) => e.accountId === b.id))
      assert.deepEqual(ofB.map((e) => e.subjectId).sort(), [bFile.id, bRequest.id, bShare].sort())
    })
  },
  { env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } },
)

describeEachEngine(
  'audit log of content, without a trash',
  (ctx) => {
    test('a delete with TRASH_RETENTION_DAYS=0 is a file deleted for good, by the key', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id, { name: 'gone.txt' })
      const res = await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token, ip: ADDRESS })
      assert.equal(res.status, 200)
      assert.deepEqual((await byKey(c, a, 'file.deleted', file.id)).details, { name: 'gone.txt' })
      assert.equal((await auditEntries(c.db, { accountId: a.id, kind: 'file.trashed' })).length, 0)
    })
  },
  { env: { TRASH_RETENTION_DAYS: '0' } },
)

for (const engine of ENGINES) {
  describe(`audit log of content, on a listening server: MCP, submissions [${engine}]`, () => {
    let c: ListeningContext
    before(async () => {
      c = await startListening(engine)
    })
    after(async () => c?.stop())

    test('MCP’s tools record the same kinds, by the key it signs in with', async () => {
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id, { name: 'via-mcp.txt' })
      const client = await connectMcp(c.base, a.token)
      try {
        for (const name of ['share_file', 'delete_file']) {
          const result = (await client.callTool({ name, arguments: { fileId: file.id } })) as CallToolResult
          assert.ok(!result.isError, JSON.stringify(result.content))
        }
      } finally {
        await client.close()
      }
      const shared = await lastEntry(c.db, a.id, 'share.created')
      const trashed = await lastEntry(c.db, a.id, 'file.trashed')
      assert.equal(trashed.subjectId, file.id)
      for (const entry of [shared, trashed]) {
        assert.deepEqual({ type: entry.actor.type, name: entry.actor.name }, KEY)
        assert.equal(entry.address, '127.0.0.1')
      }
    })

    test('the request closes by its file limit, and the log says a visitor did it', async () => {
      const a = await createAccount(c.app)
      const request = await newRequest(c.app, a.token)
      const limits = { token: a.token, body: { maxFiles: 1 } }
      assert.equal((await call(c.app, 'PUT', `${REQUESTS}/${request.id}/limits`, limits)).status, 200)
      const { grants, statuses } = await submit(
        c.app,
        publicIdOf(request),
        { submitterName: 'Ada', submitterEmail: 'ada@example.com' },
        [{ name: 'scan.txt', type: 'text/plain', content: 'the scan' }],
      )
      assert.deepEqual(
        statuses.map((s) => s.status),
        ['complete'],
      )
      const closed = await lastEntry(c.db, a.id, 'request.closed')
      assert.equal(closed.subjectId, request.id)
      // The request as every request.closed entry gives it, whoever closed it.
      assert.deepEqual(closed.details, {
        reason: 'maxFiles',
        title: request.title,
        folderId: null,
        isActive: true,
        deadline: null,
        maxFiles: 1,
        maxFileSize: null,
        allowedTypes: [],
      })
      assert.deepEqual(closed.actor, { type: 'visitor', id: null, name: null })
      assert.equal(closed.address, '127.0.0.1', 'the submitter’s address')
      await assertNoSecretIn(
        c.db,
        grants.map((grant) => grant.clientPayload.grant),
      )
    })
  })
}
