// GET /analytics/daily, Coffer's extension: a share's views and downloads per UTC day, committed with the
// totals, every day of the period listed, and its bounds.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DAY_MS } from '../src/resources/shares/shares.repository.ts'
import {
  assertError,
  call,
  createAccount,
  createFile,
  describeEachEngine,
  type TestAccount,
  type TestContext,
  visitShare,
} from './support/harness.ts'

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)

async function share(c: TestContext, a: TestAccount) {
  const file = await createFile(c, a.id)
  const res = await call(c.app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId: file.id } })
  return res.body.data as { id: string; publicUrl: string }
}

const daily = (c: TestContext, token: string, query: string) =>
  call(c.app, 'GET', `/api/v1/analytics/daily?${query}`, { token })

describeEachEngine('daily analytics', (ctx) => {
  test('counts per day as the totals count them, every day of the period listed', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const s = await share(c, a)
    await visitShare(c.app, s, { views: 4, downloads: 2 })
    // Two earlier days, as the counters would have left them.
    const today = Math.floor(Date.now() / DAY_MS)
    await c.db.kysely
      .insertInto('share_daily_counts')
      .values([
        { share_id: s.id, account_id: a.id, day: today - 2, views: 7, downloads: 1 },
        { share_id: s.id, account_id: a.id, day: today - 40, views: 9, downloads: 9 },
      ])
      .execute()

    const res = await daily(c, a.token, `shareId=${s.id}`)
    assert.equal(res.status, 200)
    const { data } = res.body
    assert.equal(data.shareId, s.id)
    assert.equal(data.to, dayOf(Date.now()))
    assert.equal(data.from, dayOf((today - 29) * DAY_MS))
    assert.equal(data.days.length, 30)
    assert.deepEqual(data.days.at(-1), { date: data.to, views: 4, downloads: 2 })
    assert.deepEqual(data.days.at(-3), { date: dayOf((today - 2) * DAY_MS), views: 7, downloads: 1 })
    assert.equal(
      data.days.reduce((sum: number, d: { views: number }) => sum + d.views, 0),
      11,
      'the day 40 days ago is outside the default period',
    )

    const from = dayOf((today - 45) * DAY_MS)
    const to = dayOf((today - 35) * DAY_MS)
    const period = await daily(c, a.token, `shareId=${s.id}&from=${from}&to=${to}`)
    assert.equal(period.body.data.days.length, 11)
    assert.deepEqual(
      period.body.data.days.filter((d: { views: number }) => d.views > 0),
      [{ date: dayOf((today - 40) * DAY_MS), views: 9, downloads: 9 }],
    )
    const fromOnly = await daily(c, a.token, `shareId=${s.id}&from=${from}`)
    assert.equal(fromOnly.body.data.days.length, 30)
    assert.equal(fromOnly.body.data.from, from)
  })

  test('bounds: dates, order, at most 366 days; another account’s share is a 404; analytics:read only', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const s = await share(c, a)
    const cases: [string, RegExp][] = [
      [`shareId=${s.id}&from=2026-13-01`, /"from" must be a valid date/],
      [`shareId=${s.id}&to=2026-02-30`, /"to" must be a valid date/],
      [`shareId=${s.id}&from=yesterday`, /"from" must be a valid date/],
      [`shareId=${s.id}&from=2026-03-02&to=2026-03-01`, /"from" must not be after "to"/],
      [`shareId=${s.id}&from=2025-01-01&to=2026-01-02`, /at most 366 days/],
      [`shareId=${s.id}&days=3`, /days/],
    ]
    for (const [query, message] of cases) {
      assert.match(assertError(await daily(c, a.token, query), 400, 'invalid_request'), message, query)
    }
    assert.equal(
      (await daily(c, a.token, `shareId=${s.id}&from=2025-01-01&to=2026-01-01`)).body.data.days.length,
      366,
    )
    assertError(await daily(c, b.token, `shareId=${s.id}`), 404, 'not_found')
    assertError(await daily(c, a.token, 'shareId=shr_absent'), 404, 'not_found')
    const denied = await a.key(['shares:read', 'files:read'])
    assert.match(
      assertError(await daily(c, denied, `shareId=${s.id}`), 403, 'insufficient_scope'),
      /analytics:read/,
    )
    assert.equal((await daily(c, await a.key(['analytics:read']), `shareId=${s.id}`)).status, 200)
    assertError(await call(c.app, 'GET', `/api/v1/analytics/daily?shareId=${s.id}`), 401, 'unauthorized')
  })
})
