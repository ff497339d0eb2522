/// <reference lib="dom" />
// The analytics page as an owner uses it, in Chromium: views and downloads made through the share pages, the
// page's totals, table and top lists equal to what GET /api/v1/analytics, …/daily and …/top-shares answer,
// the range and the share switched with the keyboard alone, a hostile file name kept as text, the empty
// state of an account without links, and another account's share answered with a 404 page. Each state is
// screenshotted on a phone and a desktop, light and dark (.cache/screenshots), and checked with axe-core.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { DAY_MS } from '../src/resources/shares/shares.repository.ts'
import { browserMissing, checkEveryLook, launchBrowser, newContext } from './support/browser.ts'
import { call, createFile, ENGINES, visitShare } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, signInBrowser } from './support/web-client.ts'

const HOSTILE = '<img src=x onerror="document.title=1">.txt'

interface Shared {
  id: string
  fileId: string
  name: string
  publicUrl: string
}

type Day = { date: string; views: number; downloads: number }

/** Presses Tab until the focus is on an element of that tag and (trimmed) text, at most 60 times. */
async function tabTo(page: Page, target: { tag: string; text?: string }): Promise<void> {
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press('Tab')
    const focused = await page.evaluate(() => ({
      tag: document.activeElement?.tagName ?? '',
      text: (document.activeElement?.textContent ?? '').trim(),
    }))
    if (focused.tag === target.tag && (target.text === undefined || focused.text === target.text)) return
  }
  assert.fail(`${target.tag} ${target.text ?? ''} is reachable with Tab`)
}

/** What the page shows: the stat cards, the table's rows and total, the top lists. */
async function shown(page: Page) {
  return page.evaluate(() => {
    const text = (element: Element | null | undefined) => (element?.textContent ?? '').trim()
    const number = (value: string) => Number(value.replaceAll(',', ''))
    const cards = Object.fromEntries(
      [...document.querySelectorAll('.stat-card')].map((card) => [
        text(card.querySelector('.stat-label')),
        text(card.querySelector('.stat-value')),
      ]),
    )
    const rows = [...document.querySelectorAll('.data-table tbody tr')].map((row) => ({
      date: row.querySelector('time')?.getAttribute('datetime') ?? '',
      views: number(text(row.querySelectorAll('td')[0])),
      downloads: number(text(row.querySelectorAll('td')[1])),
    }))
    const list = (id: string) =>
      [...(document.getElementById(id)?.closest('section')?.querySelectorAll('.top-list li') ?? [])].map(
        (item) => ({
          name: text(item.querySelector('a')),
          href: item.querySelector('a')?.getAttribute('href'),
          count: text(item.querySelector('.top-count')),
        }),
      )
    return {
      cards,
      rows,
      mostViewed: list('most-viewed-title'),
      mostDownloaded: list('most-downloaded-title'),
      chartLabel: document.querySelector('.chart-svg')?.getAttribute('aria-label') ?? '',
      bars: document.querySelectorAll('.chart-svg rect.chart-views, .chart-svg rect.chart-downloads').length,
    }
  })
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`

for (const engine of ENGINES) {
  describe(`analytics page in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let ctx: ListeningContext
    let browser: Browser
    let owner: { id: string; email: string }
    let token: string
    let shares: Shared[]
    let theirs: Shared

    async function share(accountId: string, key: string, name: string): Promise<Shared> {
      const file = await createFile(ctx, accountId, { name })
      const res = await call(ctx.app, 'POST', '/api/v1/shares', { token: key, body: { fileId: file.id } })
      assert.equal(res.status, 201)
      return { id: res.body.data.id, fileId: file.id, name, publicUrl: res.body.data.publicUrl }
    }

    /** Days before today, as the counters would have left them: the days' rows and the totals together. */
    async function history(s: Shared, accountId: string, days: [number, number, number][]) {
      const today = Math.floor(Date.now() / DAY_MS)
      for (const [ago, views, downloads] of days) {
        await ctx.db.kysely
          .insertInto('share_daily_counts')
          .values({ share_id: s.id, account_id: accountId, day: today - ago, views, downloads })
          .execute()
        await ctx.db.kysely
          .updateTable('shares')
          .set((eb) => ({
            view_count: eb('view_count', '+', views),
            download_count: eb('download_count', '+', downloads),
          }))
          .where('id', '=', s.id)
          .execute()
      }
    }

    const api = (url: string) => call(ctx.app, 'GET', `/api/v1${url}`, { token })

    before(async () => {
      browser = await launchBrowser()
      ctx = await startListening(engine)
      owner = await newOwner(ctx.app)
      token = (
        await ctx.app.services.apiKeys.create({
          accountId: owner.id,
          name: 'test',
          scopes: ['files:read', 'shares:write', 'analytics:read'],
        })
      ).secret
      shares = [
        await share(owner.id, token, 'Quarterly report.pdf'),
        await share(owner.id, token, 'Team photo.jpg'),
        await share(owner.id, token, HOSTILE),
        await share(owner.id, token, 'Not opened yet.txt'),
      ]
      const [report, photo, hostile] = shares as [Shared, Shared, Shared]
      // Counted as recipients count them: through the share pages and their downloads.
      await visitShare(ctx.app, report, { views: 6, downloads: 2 })
      await visitShare(ctx.app, photo, { views: 3, downloads: 5 })
      await visitShare(ctx.app, hostile, { views: 1, downloads: 0 })
      await history(report, owner.id, [
        [1, 4, 1],
        [2, 7, 3],
        [4, 2, 0],
        [6, 5, 2],
        [9, 3, 1],
        [13, 8, 4],
        [20, 2, 2],
        [45, 12, 6],
      ])
      await history(photo, owner.id, [
        [1, 2, 2],
        [3, 1, 4],
        [5, 6, 1],
        [11, 2, 2],
        [27, 4, 3],
        [60, 9, 9],
      ])
      const stranger = await newOwner(ctx.app)
      const strangerKey = (
        await ctx.app.services.apiKeys.create({ accountId: stranger.id, name: 'k', scopes: ['shares:write'] })
      ).secret
      theirs = await share(stranger.id, strangerKey, 'Their secret plans.txt')
    })
    after(async () => {
      await browser?.close()
      await ctx?.stop()
    })

    test('totals, table and top lists equal the API; range and share switched by keyboard', async () => {
      const context = await newContext(browser)
      try {
        const page = await context.newPage()
        await signInBrowser(page, ctx.base, owner.email, { returnTo: '/analytics' })
        assert.equal(new URL(page.url()).pathname, '/analytics')
        assert.equal(await page.title(), 'Analytics · Coffer')

        // All shares, the last 30 days.
        const totals = (await api('/analytics')).body.data
        const daily = (await api('/analytics/daily')).body.data
        const top = (await api('/analytics/top-shares')).body.data
        let seen = await shown(page)
        assert.deepEqual(seen.cards, {
          Views: String(totals.views),
          Downloads: String(totals.downloads),
          'Active links': String(totals.activeShares),
        })
        assert.deepEqual(seen.rows, daily.days)
        assert.equal(seen.rows.length, 30)
        const listed = (
          list: { fileId: string; name: string; views: number; downloads: number }[],
          by: 'views' | 'downloads',
        ) =>
          list.map((s) => ({
            name: s.name,
            href: `/files/${s.fileId}`,
            count:
              by === 'views'
                ? plural(s.views, 'view', 'views')
                : plural(s.downloads, 'download', 'downloads'),
          }))
        assert.deepEqual(seen.mostViewed, listed(top.mostViewed, 'views'))
        assert.deepEqual(seen.mostDownloaded, listed(top.mostDownloaded, 'downloads'))
        assert.deepEqual(
          top.mostViewed.map((s: { name: string }) => s.name),
          ['Quarterly report.pdf', 'Team photo.jpg', HOSTILE],
        )
        const sum = (days: Day[], key: 'views' | 'downloads') => days.reduce((n, d) => n + d[key], 0)
        assert.match(
          seen.chartLabel,
          new RegExp(
            `^All shares: views and downloads per day, .+\\. ${sum(daily.days, 'views')} views and ${sum(daily.days, 'downloads')} downloads in all`,
          ),
        )
        assert.ok(seen.bars > 10, 'the chart draws the days that have counts')
        // The hostile name is text: in the picker and the list, and nothing ran.
        assert.equal(await page.locator('main img').count(), 0)
        assert.equal(await page.locator(`option:text-is(${JSON.stringify(HOSTILE)})`).count(), 1)
        assert.equal(await page.title(), 'Analytics · Coffer')
        await checkEveryLook(page, 'analytics-all-30', engine)

        // The table behind its disclosure, opened with the keyboard.
        await tabTo(page, { tag: 'SUMMARY', text: 'Show as a table' })
        await page.keyboard.press('Enter')
        assert.equal(await page.locator('details.chart-table').getAttribute('open'), '')
        await checkEveryLook(page, 'analytics-all-30-table', engine)

        // 7 days, by keyboard.
        await page.goto(`${ctx.base}/analytics`)
        await tabTo(page, { tag: 'A', text: '7 days' })
        await Promise.all([page.waitForURL(/days=7/), page.keyboard.press('Enter')])
        assert.equal(await page.getByRole('link', { name: '7 days' }).getAttribute('aria-current'), 'true')
        assert.equal(await page.getByRole('link', { name: '30 days' }).getAttribute('aria-current'), null)
        const to = daily.to
        const from = new Date(Date.parse(`${to}T00:00:00Z`) - 6 * DAY_MS).toISOString().slice(0, 10)
        seen = await shown(page)
        assert.deepEqual(seen.rows, (await api(`/analytics/daily?from=${from}&to=${to}`)).body.data.days)
        const week = (await api(`/analytics/top-shares?from=${from}&to=${to}`)).body.data
        assert.deepEqual(seen.mostViewed, listed(week.mostViewed, 'views'))
        assert.deepEqual(seen.mostDownloaded, listed(week.mostDownloaded, 'downloads'))

        // One share, by keyboard: its name typed into the picker, then Show.
        const [report] = shares as [Shared]
        await tabTo(page, { tag: 'SELECT' })
        await page.keyboard.type('Quarterly')
        await tabTo(page, { tag: 'BUTTON', text: 'Show' })
        await Promise.all([page.waitForURL(/share=/), page.keyboard.press('Enter')])
        const url = new URL(page.url())
        assert.deepEqual(Object.fromEntries(url.searchParams), { days: '7', share: report.id })
        const one = (await api(`/analytics?shareId=${report.id}`)).body.data
        seen = await shown(page)
        assert.deepEqual(seen.cards, {
          Views: String(one.views),
          Downloads: String(one.downloads),
          Link: 'Shared',
        })
        assert.deepEqual(
          seen.rows,
          (await api(`/analytics/daily?shareId=${report.id}&from=${from}&to=${to}`)).body.data.days,
        )
        assert.match(seen.chartLabel, /^Quarterly report\.pdf: views and downloads per day/)
        assert.equal(await page.locator('select[name="share"]').inputValue(), report.id)
        assert.equal(
          await page.getByRole('link', { name: /Open the file’s page/ }).getAttribute('href'),
          `/files/${report.fileId}`,
        )
        await checkEveryLook(page, 'analytics-share-7', engine)

        // 90 days keeps the share.
        await page.getByRole('link', { name: '90 days' }).click()
        await page.waitForURL(/days=90/)
        assert.equal(new URL(page.url()).searchParams.get('share'), report.id)
        assert.equal((await shown(page)).rows.length, 90)

        // Back to all shares.
        await page.locator('select[name="share"]').selectOption({ label: 'All shares' })
        await Promise.all([page.waitForURL(/share=all/), page.getByRole('button', { name: 'Show' }).click()])
        assert.deepEqual((await shown(page)).cards, {
          Views: String(totals.views),
          Downloads: String(totals.downloads),
          'Active links': String(totals.activeShares),
        })
        await checkEveryLook(page, 'analytics-all-90', engine)
      } finally {
        await context.close()
      }
    })

    test("another account's share is a 404 page that shows nothing of it", async () => {
      const context = await newContext(browser)
      try {
        const page = await context.newPage()
        await signInBrowser(page, ctx.base, owner.email, { returnTo: '/analytics' })
        const response = await page.goto(`${ctx.base}/analytics?days=7&share=${theirs.id}`)
        assert.equal(response?.status(), 404)
        assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Nothing here')
        assert.doesNotMatch(await page.content(), /Their secret plans/)
        assert.equal(await page.locator('.app-nav [aria-current="page"]').textContent(), 'Analytics')
        assert.equal(
          await page.getByRole('link', { name: 'See all shares' }).getAttribute('href'),
          '/analytics',
        )
        await checkEveryLook(page, 'analytics-404', engine)
        assert.equal((await page.goto(`${ctx.base}/analytics?days=14`))?.status(), 400)
      } finally {
        await context.close()
      }
    })

    test('an account without links is told what to do', async () => {
      const newcomer = await newOwner(ctx.app)
      const context = await newContext(browser)
      try {
        const page = await context.newPage()
        await signInBrowser(page, ctx.base, newcomer.email, { returnTo: '/analytics' })
        await page.getByText('Share a file from its page to see views here.').waitFor()
        assert.equal(await page.getByRole('link', { name: 'Go to your files' }).getAttribute('href'), '/')
        assert.equal(await page.locator('.chart-svg').count(), 0)
        await checkEveryLook(page, 'analytics-empty', engine)
      } finally {
        await context.close()
      }
    })
  })
}
