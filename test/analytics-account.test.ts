// The account's analytics over a period, Coffer's extensions: GET /analytics/daily without a share (the sums
// of the account's shares per UTC day) and GET /analytics/top-shares (the links most viewed and downloaded in
// the period), counted from the share pages as their recipients use them; their bounds; the migration that
// gave the days their account; and the analytics page as scripts and other accounts meet it (the page in a
// browser is test/analytics-app-browser.test.ts).
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../src/platform/config.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { newId, newPublicId } from '../src/platform/ids.ts'
import { DAY_MS } from '../src/resources/shares/shares.repository.ts'
import { createFolder } from './support/files-helpers.ts'
import {
  assertError,
  call,
  createAccount,
  createFile,
  describeEachEngine,
  ENGINES,
  freshDatabase,
  type TestAccount,
  type TestContext,
  visitShare,
} from './support/harness.ts'
import { newOwner, WebClient } from './support/web-client.ts'

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const today = () => Math.floor(Date.now() / DAY_MS)

async function share(c: TestContext, a: { id: string; token: string }, name: string) {
  const file = await createFile(c, a.id, { name })
  const res = await call(c.app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId: file.id } })
  assert.equal(res.status, 201)
  return {
    id: res.body.data.id as string,
    publicUrl: res.body.data.publicUrl as string,
    fileId: file.id,
    name,
  }
}

/** Counts of earlier days, as the counters would have left them. */
async function earlier(
  c: TestContext,
  account: TestAccount,
  shareId: string,
  day: number,
  views: number,
  downloads: number,
) {
  await c.db.kysely
    .insertInto('share_daily_counts')
    .values({ share_id: shareId, account_id: account.id, day, views, downloads })
    .execute()
}

const get = (c: TestContext, token: string, url: string) => call(c.app, 'GET', url, { token })

type Day = { date: string; views: number; downloads: number }
const sum = (days: Day[], key: 'views' | 'downloads') => days.reduce((total, day) => total + day[key], 0)

describeEachEngine('account analytics', (ctx) => {
  test("the account's days are the sums of its shares' days, and only its own", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const report = await share(c, a, 'Report.pdf')
    const photo = await share(c, a, 'Photo.png')
    const idle = await share(c, a, 'Idle.txt')
    const other = await share(c, b, 'Theirs.txt')
    await visitShare(c.app, report, { views: 5, downloads: 1 })
    await visitShare(c.app, photo, { views: 2, downloads: 4 })
    await visitShare(c.app, other, { views: 9, downloads: 9 })
    const t = today()
    await earlier(c, a, idle.id, t - 3, 7, 0)
    await earlier(c, a, report.id, t - 3, 1, 2)
    await earlier(c, a, report.id, t - 40, 100, 50)

    const res = await get(c, a.token, '/api/v1/analytics/daily')
    assert.equal(res.status, 200)
    const { data } = res.body
    assert.equal('shareId' in data, false, 'an account series names no share')
    assert.equal(data.to, dayOf(Date.now()))
    assert.equal(data.from, dayOf((t - 29) * DAY_MS))
    assert.equal(data.days.length, 30)
    assert.deepEqual(data.days.at(-1), { date: data.to, views: 7, downloads: 5 })
    assert.deepEqual(data.days.at(-4), { date: dayOf((t - 3) * DAY_MS), views: 8, downloads: 2 })
    assert.equal(sum(data.days, 'views'), 15, 'the day 40 days ago is outside the default period')
    assert.equal(sum(data.days, 'downloads'), 7)

    // Each day is the sum of the shares' own series.
    const shares = await Promise.all(
      [report, photo, idle].map(
        async (s) => (await get(c, a.token, `/api/v1/analytics/daily?shareId=${s.id}`)).body.data,
      ),
    )
    data.days.forEach((day: Day, i: number) => {
      const views = shares.reduce((total, s) => total + s.days[i].views, 0)
      const downloads = shares.reduce((total, s) => total + s.days[i].downloads, 0)
      assert.deepEqual(day, { date: shares[0].days[i].date, views, downloads })
    })

    const from = dayOf((t - 45) * DAY_MS)
    const to = dayOf((t - 35) * DAY_MS)
    const period = (await get(c, a.token, `/api/v1/analytics/daily?from=${from}&to=${to}`)).body.data
    assert.deepEqual(
      { from: period.from, to: period.to, length: period.days.length },
      { from, to, length: 11 },
    )
    assert.deepEqual(
      period.days.filter((d: Day) => d.views > 0),
      [{ date: dayOf((t - 40) * DAY_MS), views: 100, downloads: 50 }],
    )

    const theirs = (await get(c, b.token, '/api/v1/analytics/daily')).body.data
    assert.deepEqual(theirs.days.at(-1), { date: theirs.to, views: 9, downloads: 9 })
    assert.equal(sum(theirs.days, 'views'), 9)
    const fresh = await createAccount(c.app)
    const none = (await get(c, fresh.token, '/api/v1/analytics/daily')).body.data
    assert.equal(none.days.length, 30)
    assert.equal(sum(none.days, 'views') + sum(none.days, 'downloads'), 0)
  })

  test("deleted files' links: what they counted stays in the account's totals and days (issue 43, 13)", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const gone = await share(c, a, 'Gone.pdf')
    const alsoGone = await share(c, a, 'Also gone.pdf')
    const kept = await share(c, a, 'Kept.pdf')
    const theirs = await share(c, b, 'Theirs.pdf')
    await visitShare(c.app, gone, { views: 3, downloads: 2 })
    await visitShare(c.app, alsoGone, { views: 1, downloads: 1 })
    await visitShare(c.app, kept, { views: 4, downloads: 0 })
    await visitShare(c.app, theirs, { views: 6, downloads: 6 })
    const t = today()
    // Earlier days, in the links' totals too, as the counters would have left them.
    for (const [link, views, downloads] of [
      [gone, 10, 5],
      [alsoGone, 1, 0],
    ] as const) {
      await earlier(c, a, link.id, t - 2, views, downloads)
      await c.db.kysely
        .updateTable('shares')
        .set((eb) => ({
          view_count: eb('view_count', '+', views),
          download_count: eb('download_count', '+', downloads),
        }))
        .where('id', '=', link.id)
        .execute()
    }
    const before = {
      totals: (await get(c, a.token, '/api/v1/analytics')).body.data,
      days: (await get(c, a.token, '/api/v1/analytics/daily')).body.data.days,
    }
    assert.equal(before.totals.views, 19)

    // One file alone, then one in a batch: each link's days are folded into the account's, on the same days.
    assert.equal(
      (await call(c.app, 'DELETE', `/api/v1/files/${gone.fileId}`, { token: a.token })).status,
      200,
    )
    const batch = await call(c.app, 'DELETE', '/api/v1/files', {
      token: a.token,
      body: { fileIds: [alsoGone.fileId] },
    })
    assert.equal(batch.status, 200)
    const after = {
      totals: (await get(c, a.token, '/api/v1/analytics')).body.data,
      days: (await get(c, a.token, '/api/v1/analytics/daily')).body.data.days,
    }
    assert.equal(after.totals.views, before.totals.views)
    assert.equal(after.totals.downloads, before.totals.downloads)
    assert.equal(after.totals.shares, before.totals.shares - 2, 'the links themselves are gone')
    assert.deepEqual(after.days, before.days)
    assert.deepEqual(after.days.at(-1), { date: dayOf(Date.now()), views: 8, downloads: 3 })
    assert.deepEqual(after.days.at(-3), { date: dayOf((t - 2) * DAY_MS), views: 11, downloads: 5 })
    const top = (await get(c, a.token, '/api/v1/analytics/top-shares')).body.data
    assert.deepEqual(
      top.mostViewed.map((s: { shareId: string }) => s.shareId),
      [kept.id],
      'a deleted link is not among the top',
    )
    // In the trash, then deleted for good: the same totals and days.
    const emptied = await call(c.app, 'DELETE', '/api/v1/trash', { token: a.token })
    assert.deepEqual(emptied.body, { data: { deletedCount: 2 } })
    assert.deepEqual((await get(c, a.token, '/api/v1/analytics')).body.data, after.totals)
    assert.deepEqual((await get(c, a.token, '/api/v1/analytics/daily')).body.data.days, after.days)
    // Another account's numbers are its own, before and after.
    const other = (await get(c, b.token, '/api/v1/analytics')).body.data
    assert.deepEqual([other.views, other.downloads], [6, 6])
  })

  test('top shares: the most viewed and downloaded of the period, with their files', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const report = await share(c, a, 'Report.pdf')
    const photo = await share(c, a, 'Photo <b>&amp;</b>.png')
    const idle = await share(c, a, 'Idle.txt')
    const quiet = await share(c, a, 'Never opened.txt')
    const other = await share(c, b, 'Theirs.txt')
    await visitShare(c.app, report, { views: 5, downloads: 1 })
    await visitShare(c.app, photo, { views: 2, downloads: 4 })
    await visitShare(c.app, other, { views: 50, downloads: 50 })
    const t = today()
    await earlier(c, a, idle.id, t - 3, 7, 0)
    await earlier(c, a, report.id, t - 40, 100, 50)

    const entry = (s: { id: string; fileId: string; name: string }, views: number, downloads: number) => ({
      shareId: s.id,
      fileId: s.fileId,
      folderId: null,
      name: s.name,
      views,
      downloads,
    })
    const top = await get(c, a.token, '/api/v1/analytics/top-shares')
    assert.equal(top.status, 200)
    assert.deepEqual(top.body.data, {
      from: dayOf((t - 29) * DAY_MS),
      to: dayOf(t * DAY_MS),
      mostViewed: [entry(idle, 7, 0), entry(report, 5, 1), entry(photo, 2, 4)],
      mostDownloaded: [entry(photo, 2, 4), entry(report, 5, 1)],
    })
    const todayOnly = `from=${dayOf(Date.now())}&to=${dayOf(Date.now())}`
    assert.deepEqual(
      (await get(c, a.token, `/api/v1/analytics/top-shares?${todayOnly}`)).body.data.mostViewed,
      [entry(report, 5, 1), entry(photo, 2, 4)],
    )
    const long = `from=${dayOf((t - 60) * DAY_MS)}&count=1`
    const first = (await get(c, a.token, `/api/v1/analytics/top-shares?${long}`)).body.data
    assert.deepEqual(
      { viewed: first.mostViewed, downloaded: first.mostDownloaded },
      { viewed: [entry(report, 100, 50)], downloaded: [entry(report, 100, 50)] },
      'from alone covers 30 days from it',
    )
    // Ties go to the other count, then to the newer link.
    await visitShare(c.app, quiet, { views: 2, downloads: 4 })
    const tied = (await get(c, a.token, `/api/v1/analytics/top-shares?${todayOnly}`)).body.data
    assert.deepEqual(
      tied.mostDownloaded.map((s: { shareId: string }) => s.shareId),
      [quiet.id, photo.id, report.id],
    )
    await visitShare(c.app, photo, { views: 0, downloads: 1 })
    const untied = (await get(c, a.token, `/api/v1/analytics/top-shares?${todayOnly}`)).body.data
    assert.deepEqual(
      untied.mostViewed.map((s: { shareId: string }) => s.shareId),
      [report.id, photo.id, quiet.id],
      'equal views: more downloads first',
    )
    const theirs = (await get(c, b.token, '/api/v1/analytics/top-shares')).body.data
    assert.deepEqual(theirs.mostViewed, [entry(other, 50, 50)])
    const fresh = await createAccount(c.app)
    const none = (await get(c, fresh.token, '/api/v1/analytics/top-shares')).body.data
    assert.deepEqual(
      { viewed: none.mostViewed, downloaded: none.mostDownloaded },
      { viewed: [], downloaded: [] },
    )
  })

  test('folder links count in the totals, days and top lists, named by their folder; a deleted folder keeps its counts (issue 44, 2)', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const report = await share(c, a, 'Report.pdf')
    const folder = await createFolder(c.app, a, 'Holiday photos')
    await createFile(c, a.id, { name: 'Beach.jpg', folderId: folder.id })
    const made = await call(c.app, 'POST', '/api/v1/folder-shares', {
      token: a.token,
      body: { folderId: folder.id },
    })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    const link = made.body.data as { id: string; publicUrl: string }
    const page = new URL(link.publicUrl).pathname
    await visitShare(c.app, report, { views: 1, downloads: 1 })
    for (let i = 0; i < 3; i++)
      assert.equal((await c.app.inject({ method: 'GET', url: page })).statusCode, 200)
    assert.equal((await c.app.inject({ method: 'GET', url: `${page}/zip` })).statusCode, 200)

    const totals = (await get(c, a.token, '/api/v1/analytics')).body.data
    assert.deepEqual(
      {
        shares: totals.shares,
        activeShares: totals.activeShares,
        views: totals.views,
        downloads: totals.downloads,
      },
      { shares: 2, activeShares: 2, views: 4, downloads: 2 },
    )
    const top = (await get(c, a.token, '/api/v1/analytics/top-shares')).body.data
    assert.deepEqual(top.mostViewed[0], {
      shareId: link.id,
      fileId: null,
      folderId: folder.id,
      name: 'Holiday photos',
      views: 3,
      downloads: 1,
    })
    const one = (await get(c, a.token, `/api/v1/analytics?shareId=${link.id}`)).body.data
    assert.deepEqual({ views: one.views, downloads: one.downloads }, { views: 3, downloads: 1 })
    const days = (await get(c, a.token, `/api/v1/analytics/daily?shareId=${link.id}`)).body.data.days
    assert.deepEqual(
      days
        .filter((d: { views: number }) => d.views > 0)
        .map((d: { views: number; downloads: number }) => [d.views, d.downloads]),
      [[3, 1]],
    )

    assert.equal(
      (await call(c.app, 'DELETE', `/api/v1/folders/${folder.id}`, { token: a.token })).status,
      200,
    )
    const after = (await get(c, a.token, '/api/v1/analytics')).body.data
    assert.deepEqual(
      { shares: after.shares, views: after.views, downloads: after.downloads },
      { shares: 1, views: 4, downloads: 2 },
      'the link went with its folder; what it counted stays',
    )
    const accountDays = (await get(c, a.token, '/api/v1/analytics/daily')).body.data.days
    assert.equal(accountDays.at(-1).views, 4)
    assertError(await get(c, a.token, `/api/v1/folder-shares/${link.id}`), 404, 'not_found')
  })

  test('bounds: dates, order, at most 366 days, 1 to 25 shares; analytics:read only', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    for (const path of ['/api/v1/analytics/daily', '/api/v1/analytics/top-shares']) {
      const cases: [string, RegExp][] = [
        ['from=2026-13-01', /"from" must be a valid date/],
        ['to=2026-02-30', /"to" must be a valid date/],
        ['from=yesterday', /"from" must be a valid date/],
        ['from=2026-03-02&to=2026-03-01', /"from" must not be after "to"/],
        ['from=2025-01-01&to=2026-01-02', /at most 366 days/],
        ['days=3', /days/],
      ]
      for (const [query, message] of cases) {
        const where = `${path}?${query}`
        assert.match(assertError(await get(c, a.token, where), 400, 'invalid_request'), message, where)
      }
      const longest = await get(c, a.token, `${path}?from=2025-01-01&to=2026-01-01`)
      assert.equal(longest.status, 200)
      assert.deepEqual([longest.body.data.from, longest.body.data.to], ['2025-01-01', '2026-01-01'])
      const denied = await a.key(['shares:read', 'files:read'])
      assert.match(assertError(await get(c, denied, path), 403, 'insufficient_scope'), /analytics:read/)
      assert.equal((await get(c, await a.key(['analytics:read']), path)).status, 200)
      assertError(await call(c.app, 'GET', path), 401, 'unauthorized')
    }
    assert.equal(
      (await get(c, a.token, '/api/v1/analytics/daily?from=2025-01-01&to=2026-01-01')).body.data.days.length,
      366,
    )
    for (const count of ['0', '26', 'x', '1.5']) {
      assertError(
        await get(c, a.token, `/api/v1/analytics/top-shares?count=${count}`),
        400,
        'invalid_request',
      )
    }
    assert.equal((await get(c, a.token, '/api/v1/analytics/top-shares?count=25')).status, 200)
  })

  test('the analytics page: sessions only, another account’s share is a 404 page, a bad range a 400 page', async () => {
    const c = ctx()
    const owner = await newOwner(c.app)
    const stranger = await newOwner(c.app)
    const key = await apiKey(c, owner.id)
    const mine = await share(c, { id: owner.id, token: key }, 'Mine.txt')
    const theirs = await share(
      c,
      { id: stranger.id, token: await apiKey(c, stranger.id) },
      'Secret plans.txt',
    )

    const signedOut = await new WebClient(c.app).get('/analytics?days=7')
    assert.equal(signedOut.statusCode, 303)
    assert.equal(
      signedOut.headers.location,
      `/account/sign-in?return_to=${encodeURIComponent('/analytics?days=7')}`,
    )
    // A credential of the API opens no page: the page asks for a session.
    const withKey = await c.app.inject({
      method: 'GET',
      url: '/analytics',
      headers: { authorization: `Bearer ${key}`, accept: 'text/html' },
    })
    assert.equal(withKey.statusCode, 303)

    const browser = await WebClient.signedIn(c.app, owner.email)
    const page = await browser.get('/analytics')
    assert.equal(page.statusCode, 200)
    assert.match(page.headers['content-type'] as string, /text\/html/)
    assert.match(page.body, /Mine\.txt/)
    assert.match((await browser.get(`/analytics?days=90&share=${mine.id}`)).body, /All time: Mine\.txt/)

    for (const url of [
      `/analytics?share=${theirs.id}`,
      '/analytics?share=shr_absent',
      `/analytics?days=7&share=${theirs.id}`,
    ]) {
      const refused = await browser.get(url)
      assert.equal(refused.statusCode, 404, url)
      assert.match(refused.headers['content-type'] as string, /text\/html/)
      assert.doesNotMatch(refused.body, /Secret plans/)
    }
    for (const url of [
      '/analytics?days=12',
      '/analytics?days=',
      '/analytics?share=',
      '/analytics?fileId=x',
    ]) {
      const refused = await browser.get(url)
      assert.equal(refused.statusCode, 400, url)
      assert.match(refused.headers['content-type'] as string, /text\/html/, url)
    }
  })
})

/** A key of the account that may share files and read analytics. */
async function apiKey(c: TestContext, accountId: string): Promise<string> {
  const scopes = ['files:read', 'shares:write', 'analytics:read'] as const
  return (await c.app.services.apiKeys.create({ accountId, name: 'test', scopes: [...scopes] })).secret
}

for (const engine of ENGINES) {
  test(`migration 0014 gives the days of existing shares their account [${engine}]`, async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-migration-'))
    const database = await freshDatabase(engine, dataDir)
    const config = loadConfig({ DATA_DIR: dataDir, ...(database.url ? { DATABASE_URL: database.url } : {}) })
    const db = openDatabase({ ...config, poolSize: 2 })
    try {
      await migrate(db, '0012_accounts_on_the_web')
      const now = Date.now()
      const rows: { account: string; share: string }[] = []
      for (const n of [1, 2]) {
        const account = newId('acc')
        const file = newId('fil')
        const shareId = newId('shr')
        await db.kysely
          .insertInto('accounts')
          .values({
            id: account,
            email: `m${n}@example.com`,
            password_hash: null,
            created_at: now,
            disabled_at: null,
          })
          .execute()
        await db.kysely
          .insertInto('files')
          .values({
            id: file,
            account_id: account,
            folder_id: null,
            name: `f${n}.txt`,
            content_type: 'text/plain',
            size: 1,
            blob_key: `k${n}`,
            sha256: null,
            created_at: now,
            updated_at: now,
          } as never)
          .execute()
        await db.kysely
          .insertInto('shares')
          .values({
            id: shareId,
            account_id: account,
            file_id: file,
            public_id: newPublicId(),
            is_active: true,
            expires_at: null,
            password_hash: null,
            max_downloads: null,
            created_at: now,
            updated_at: now,
          })
          .execute()
        // Written as the counters wrote them before: no account.
        await (db.kysely as any)
          .insertInto('share_daily_counts')
          .values([
            { share_id: shareId, day: 100, views: n, downloads: 0 },
            { share_id: shareId, day: 101, views: 0, downloads: n },
          ])
          .execute()
        rows.push({ account, share: shareId })
      }
      await migrate(db)
      const migrated = await db.kysely
        .selectFrom('share_daily_counts')
        .select(['share_id', 'account_id', 'day', 'views', 'downloads'])
        .orderBy('share_id')
        .orderBy('day')
        .execute()
      assert.deepEqual(
        migrated.map((r) => ({
          ...r,
          views: Number(r.views),
          downloads: Number(r.downloads),
          day: Number(r.day),
        })),
        rows.flatMap(({ account, share }, i) => [
          { share_id: share, account_id: account, day: 100, views: i + 1, downloads: 0 },
          { share_id: share, account_id: account, day: 101, views: 0, downloads: i + 1 },
        ]),
      )
      await assert.rejects(
        (db.kysely as any)
          .insertInto('share_daily_counts')
          .values({ share_id: rows[0]?.share, day: 102, views: 1, downloads: 0 })
          .execute(),
        'a day without its account is refused',
      )
      // The rows still go with their share.
      await db.kysely
        .deleteFrom('shares')
        .where('id', '=', rows[0]?.share as string)
        .execute()
      assert.equal((await db.kysely.selectFrom('share_daily_counts').select('share_id').execute()).length, 2)
    } finally {
      await db.close()
      await database.drop()
      await rm(dataDir, { recursive: true, force: true })
    }
  })
}
