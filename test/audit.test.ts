// The audit log as its readers see it (issue 45, 4): an owner reads their account's entries on the API (scope
// audit:read, newest first, paged, by kind, family and time) and on /account/activity, never another account's;
// an admin reads everyone's on /admin/audit and exports them as JSON Lines; entries older than
// AUDIT_RETENTION_DAYS go. What each change records is held by test/audit-accounts.test.ts and
// test/audit-content.test.ts; here the entries are written by the platform's AuditLog directly.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { App } from '../src/app.ts'
import { type AuditEntry, Coffer } from '../src/clients/sdk/index.ts'
import { AuditEntriesRepository } from '../src/platform/audit/audit-entries.repository.ts'
import type { AuditKind } from '../src/platform/audit/audit-kinds.ts'
import { AuditLog, SYSTEM } from '../src/platform/audit/audit-log.ts'
import type { Db } from '../src/platform/db/database.ts'
import { auditEntries, lastEntry } from './support/audit.ts'
import {
  ALL,
  assertError,
  call,
  createAccount,
  createFile,
  describeEachEngine,
  ENGINES,
  startApp,
} from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, WebClient } from './support/web-client.ts'

const DAY_MS = 86_400_000

/** Writes entries for `accountId` as the server's jobs would (actor: system), `at` ms apart going back. */
async function write(db: Db, accountId: string | null, kinds: AuditKind[], details = {}) {
  const log = new AuditLog({ entries: new AuditEntriesRepository(db), outsideRequests: SYSTEM })
  for (const kind of kinds) await log.record(db.kysely, { accountId, kind, subjectId: 'sub_1', details })
}

async function admin(app: App) {
  const { id, email } = await newOwner(app)
  await app.services.accounts.setRole(email, 'admin')
  return { id, email, web: await WebClient.signedIn(app, email) }
}

describeEachEngine('the audit log, read', (ctx) => {
  test('GET /audit needs audit:read, and answers the account’s own entries only, newest first', async () => {
    const { app, db } = ctx()
    const alice = await createAccount(app)
    const bob = await createAccount(app)
    await write(db, alice.id, ['file.trashed', 'share.created'], { name: 'alice.txt' })
    await write(db, bob.id, ['file.trashed'], { name: 'bob.txt' })

    const without = await call(app, 'GET', '/api/v1/audit', {
      token: await alice.key(ALL.filter((s) => s !== 'audit:read')),
    })
    assertError(without, 403, 'insufficient_scope')
    assertError(await call(app, 'GET', '/api/v1/audit'), 401, 'unauthorized')

    const res = await call(app, 'GET', '/api/v1/audit', { token: await alice.key(['audit:read']) })
    assert.equal(res.status, 200)
    const kinds = res.body.data.map((entry: { kind: string }) => entry.kind)
    // Newest first, after the account's making and its keys' (recorded by the harness's calls).
    assert.deepEqual(
      kinds.filter((kind: string) => !kind.startsWith('account.') && !kind.startsWith('key.')),
      ['share.created', 'file.trashed'],
    )
    const share = res.body.data.find((entry: { kind: string }) => entry.kind === 'share.created')
    assert.deepEqual(share.actor, { type: 'system', id: null, name: null })
    assert.equal(share.address, null)
    assert.equal(share.subjectId, 'sub_1')
    assert.deepEqual(share.details, { name: 'alice.txt' })
    assert.ok(!JSON.stringify(res.body).includes('bob.txt'), 'no entry of another account')
  })

  test('paged by cursor, filtered by kind, by family and by time; bad filters are 400s', async () => {
    const { app, db } = ctx()
    const owner = await createAccount(app)
    const token = await owner.key(['audit:read'])
    const start = Date.now()
    await write(db, owner.id, Array(30).fill('file.trashed'))
    await write(db, owner.id, ['share.created', 'share.changed', 'share.deleted', 'folder_share.created'])

    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const query: string = `kind=file.trashed&limit=7${cursor ? `&cursor=${cursor}` : ''}`
      const res = await call(app, 'GET', `/api/v1/audit?${query}`, { token })
      assert.equal(res.status, 200)
      seen.push(...res.body.data.map((entry: { id: string }) => entry.id))
      cursor = res.body.pagination.nextCursor
      pages++
    } while (cursor)
    assert.equal(seen.length, 30)
    assert.equal(new Set(seen).size, 30, 'nothing repeats')
    assert.equal(pages, 5)

    const family = await call(app, 'GET', '/api/v1/audit?kind=share', { token })
    assert.deepEqual(
      family.body.data.map((entry: { kind: string }) => entry.kind),
      ['share.deleted', 'share.changed', 'share.created'],
      'a family is its kinds, not folder_share',
    )
    const future = new Date(Date.now() + 60_000).toISOString()
    const since = await call(app, 'GET', `/api/v1/audit?since=${future}`, { token })
    assert.deepEqual(since.body.data, [])
    const until = await call(app, 'GET', `/api/v1/audit?until=${new Date(start - 1000).toISOString()}`, {
      token,
    })
    assert.deepEqual(until.body.data, [])

    assertError(await call(app, 'GET', '/api/v1/audit?kind=nothing', { token }), 400, 'invalid_request')
    assertError(await call(app, 'GET', '/api/v1/audit?since=yesterday', { token }), 400, 'invalid_request')
    assertError(await call(app, 'GET', '/api/v1/audit?cursor=bm9wZQ', { token }), 400, 'invalid_request')
  })

  test('/account/activity shows the owner’s entries in words, by family, never another’s', async () => {
    const { app, db } = ctx()
    const { id, email } = await newOwner(app)
    const other = await newOwner(app)
    await write(db, id, ['key.created'], { name: 'laptop backup' })
    await write(db, id, ['share.created'], { name: 'holiday.jpg' })
    await write(db, other.id, ['share.created'], { name: 'secret-plans.pdf' })
    const web = await WebClient.signedIn(app, email)

    const page = await web.get('/account/activity')
    assert.equal(page.statusCode, 200)
    assert.match(page.body, /<a href="\/account\/activity" aria-current="page">Activity<\/a>/)
    assert.match(page.body, /Share link made/)
    assert.match(page.body, /holiday\.jpg/)
    assert.match(page.body, /API key made/)
    assert.match(page.body, /by <bdi>Coffer, on its own<\/bdi>/)
    assert.doesNotMatch(page.body, /secret-plans/)

    const keys = await web.get('/account/activity?kind=key')
    assert.match(keys.body, /laptop backup/)
    assert.doesNotMatch(keys.body, /holiday\.jpg/)
    assert.match(keys.body, /<option value="key" selected>/)
    // An unknown kind shows everything rather than failing.
    assert.equal((await web.get('/account/activity?kind=bogus')).statusCode, 200)
    const signedOut = await new WebClient(app).get('/account/activity')
    assert.equal(signedOut.statusCode, 303)
  })

  test('/admin/audit shows every account’s entries with the account, 404 to a member; the export is JSON Lines', async () => {
    const { app, db } = ctx()
    const boss = await admin(app)
    const alice = await newOwner(app)
    const tag = `t${Date.now().toString(36)}`
    await write(db, alice.id, ['file.trashed'], { name: `${tag}-a.txt` })
    await write(db, null, ['account.sign_in_failed'], {
      email: `${tag}@nowhere.example`,
      reason: 'unknown_email',
    })

    const member = await WebClient.signedIn(app, alice.email)
    assert.equal((await member.get('/admin/audit')).statusCode, 404)
    assert.equal((await member.get('/admin/audit/export')).statusCode, 404)

    const page = await boss.web.get('/admin/audit')
    assert.equal(page.statusCode, 200)
    assert.match(page.body, new RegExp(`${tag}-a\\.txt`))
    assert.match(page.body, new RegExp(`href="/admin/accounts/${alice.id}"`))
    assert.match(page.body, /no account/)
    assert.match(page.body, /aria-current="page">Audit log</)

    const narrowed = await boss.web.get(`/admin/audit?account=${alice.id}`)
    assert.match(narrowed.body, new RegExp(`${tag}-a\\.txt`))
    assert.doesNotMatch(narrowed.body, new RegExp(`${tag}@nowhere`))

    const exported = await boss.web.get(`/admin/audit/export?account=${alice.id}`)
    assert.equal(exported.statusCode, 200)
    assert.match(String(exported.headers['content-type']), /^application\/jsonl/)
    assert.match(
      String(exported.headers['content-disposition']),
      /attachment; filename="coffer-audit-\d{4}-\d{2}-\d{2}\.jsonl"/,
    )
    const lines = exported.body
      .trimEnd()
      .split('\n')
      .map((line: string) => JSON.parse(line))
    const recorded = await auditEntries(db, { accountId: alice.id })
    assert.equal(lines.length, recorded.length)
    assert.deepEqual(
      lines.map((line: { id: string }) => line.id),
      recorded.map((entry) => entry.id),
    )
    assert.equal(lines.at(-1)?.accountEmail ?? lines[0].accountEmail, alice.email)
  })

  test('the export streams a log longer than one batch, in order', async () => {
    const { app, db } = ctx()
    const boss = await admin(app)
    const owner = await newOwner(app)
    const log = new AuditLog({ entries: new AuditEntriesRepository(db), outsideRequests: SYSTEM })
    await db.transaction((trx) =>
      log.recordEach(
        trx,
        Array.from({ length: 1234 }, (_, i) => ({
          accountId: owner.id,
          kind: 'file.deleted' as const,
          details: { n: i },
        })),
      ),
    )
    const exported = await boss.web.get(`/admin/audit/export?account=${owner.id}&kind=file`)
    const lines = exported.body
      .trimEnd()
      .split('\n')
      .map((line: string) => JSON.parse(line))
    assert.equal(lines.length, 1234)
    assert.equal(new Set(lines.map((line: { id: string }) => line.id)).size, 1234)
  })
})

for (const engine of ENGINES) {
  test(`[${engine}] entries older than AUDIT_RETENTION_DAYS go, the rest stay`, async () => {
    const c = await startApp(engine, { env: { AUDIT_RETENTION_DAYS: '30' }, deferReady: true })
    try {
      const owner = await createAccount(c.app)
      const now = Date.now()
      const row = (id: string, ageDays: number) => ({
        id,
        created_at: now - ageDays * DAY_MS,
        account_id: owner.id,
        kind: 'file.trashed',
        actor_type: 'system',
        actor_id: null,
        actor_name: null,
        address: null,
        subject_id: null,
        details: '{}',
      })
      await new AuditEntriesRepository(c.db).insert(c.db.kysely, [row('aud_old', 31), row('aud_recent', 29)])
      // The expired-records job runs when the server starts, then every so often.
      await c.app.ready()
      const deadline = Date.now() + 10_000
      let ids: string[] = []
      do {
        ids = (await auditEntries(c.db, { accountId: owner.id })).map((entry) => entry.id)
        if (!ids.includes('aud_old')) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      } while (Date.now() < deadline)
      assert.ok(!ids.includes('aud_old'), 'the entry past retention went')
      assert.ok(ids.includes('aud_recent'), 'the entry within retention stayed')
    } finally {
      await c.stop()
    }
  })
}

for (const engine of ENGINES) {
  describe(`who and from where, over real HTTP [${engine}]`, () => {
    let c: ListeningContext
    before(async () => {
      c = await startListening(engine, { env: { TRUST_PROXY: '1' } })
    })
    after(async () => {
      await c?.stop()
    })

    test('a key behind a trusted proxy is named with the client’s address; an MCP tool’s call with its client’s', async () => {
      const owner = await createAccount(c.app)
      const { secret } = await c.app.services.apiKeys.create({
        accountId: owner.id,
        name: 'deploy bot',
        scopes: ALL,
      })
      const file = await createFile(c, owner.id, { name: 'proxied.txt' })
      const deleted = await fetch(`${c.base}/api/v1/files/${file.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${secret}`, 'x-forwarded-for': '203.0.113.9' },
      })
      assert.equal(deleted.status, 200)
      const entry = await lastEntry(c.db, owner.id, 'file.trashed')
      assert.equal(entry.subjectId, file.id)
      assert.deepEqual(entry.actor, { type: 'key', id: entry.actor.id, name: 'deploy bot' })
      assert.match(String(entry.actor.id), /^key_/)
      assert.equal(entry.address, '203.0.113.9')

      // The MCP server calls the API in this process; the entry names the MCP client's key and address.
      const other = await createFile(c, owner.id, { name: 'by-agent.txt' })
      const called = await fetch(`${c.base}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${secret}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'x-forwarded-for': '198.51.100.4',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'delete_file', arguments: { fileId: other.id } },
        }),
      })
      assert.equal(called.status, 200, await called.clone().text())
      const byAgent = (await auditEntries(c.db, { accountId: owner.id, kind: 'file.trashed' })).find(
        (e) => e.subjectId === other.id,
      )
      assert.ok(byAgent, 'the MCP tool’s delete was recorded')
      assert.equal(byAgent.actor.name, 'deploy bot')
      assert.equal(byAgent.address, '198.51.100.4')
    })

    test('the SDK reads the log page after page, by family', async () => {
      const owner = await createAccount(c.app)
      await write(c.db, owner.id, Array(60).fill('share.changed'))
      await write(c.db, owner.id, ['webhook.created'])
      const coffer = new Coffer({ url: c.base, credentials: { apiKey: await owner.key(['audit:read']) } })
      const changed: AuditEntry[] = []
      for await (const entry of coffer.audit.list({ kind: 'share', limit: 25 })) changed.push(entry)
      assert.equal(changed.length, 60)
      assert.ok(changed.every((entry) => entry.kind === 'share.changed'))
      const page = await coffer.audit.page({ kind: 'webhook.created' })
      assert.equal(page.data.length, 1)
      assert.equal(page.pagination.nextCursor, null)
    })
  })
}
