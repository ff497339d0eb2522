// Quotas in the owner's app and on a file request's page, in Chromium (issue 45, 2): the account menu of every
// signed-in page shows what the account stores against its quota, as words and a bar (and what of it is in the
// trash; no bar without a quota), read with the session in the same query; an upload past the quota is refused
// on the files page with the quota's message, and on a request's page with the submitter's words. Screenshots on
// a phone and a desktop, light and dark (.cache/screenshots/quotas-*), checked with axe-core.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { NO_ROOM_MESSAGES } from '../src/resources/requests/public-requests.service.ts'
import {
  browserMissing,
  checkEveryLook,
  launchBrowser,
  newContext,
  recordRequests,
} from './support/browser.ts'
import { ALL, createFile, ENGINES } from './support/harness.ts'
import { newRequest, publicIdOf } from './support/requests-helpers.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, signInBrowser } from './support/web-client.ts'

for (const engine of ENGINES) {
  describe(`quotas in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let browser: Browser
    let c: ListeningContext
    before(async () => {
      browser = await launchBrowser()
      c = await startListening(engine, { env: { DEFAULT_QUOTA_BYTES: '10000000' } })
    })
    after(async () => {
      await browser?.close()
      await c?.stop()
    })

    async function signedIn() {
      const owner = await newOwner(c.app)
      const { secret } = await c.app.services.apiKeys.create({ accountId: owner.id, name: 't', scopes: ALL })
      const context = await newContext(browser, 'desktop', 'light')
      const page = await context.newPage()
      await signInBrowser(page, c.base, owner.email)
      return { ...owner, token: secret, context, page }
    }

    const openMenu = async (page: Page) => {
      await page.locator('.account-menu summary').click()
      await page.locator('.menu-usage').waitFor()
    }

    test('the account menu of every page shows the storage against the quota, with the trash; none but words without a quota', async () => {
      const o = await signedIn()
      try {
        const { page } = o
        await createFile(c, o.id, { content: Buffer.alloc(7_600_000, 1) })
        const trashed = await createFile(c, o.id, { content: Buffer.alloc(400_000, 2) })
        await c.app.services.files.delete(o.id, trashed.id, { error() {}, warn() {} } as never)
        for (const path of ['/', '/requests', '/analytics', '/account/keys', '/trash']) {
          await page.goto(`${c.base}${path}`)
          await openMenu(page)
          assert.equal(await page.locator('#menu-usage-text').innerText(), '8 MB of 10 MB used (80%)', path)
          assert.equal(await page.locator('.usage-trash').innerText(), '400 kB of it in the trash', path)
          const meter = page.getByRole('meter', { name: '8 MB of 10 MB used (80%)' })
          assert.equal(await meter.getAttribute('value'), '8000000', path)
          assert.equal(await meter.getAttribute('max'), '10000000', path)
        }
        await page.goto(`${c.base}/`)
        await openMenu(page)
        await checkEveryLook(page, `quotas-${engine}-menu`, engine)

        // Nearly full: the bar turns (its colour comes from the meter's high mark).
        await c.app.services.quotas.set(o.id, { quotaBytes: 8_200_000 })
        await page.reload()
        await openMenu(page)
        assert.equal(await page.locator('#menu-usage-text').innerText(), '8 MB of 8.2 MB used (97%)')
        await checkEveryLook(page, `quotas-${engine}-menu-full`, engine)

        // Unlimited: what it stores, and no bar.
        await c.app.services.quotas.set(o.id, { quotaBytes: null })
        await page.reload()
        await openMenu(page)
        assert.equal(await page.locator('.menu-usage p').first().innerText(), '8 MB stored')
        assert.equal(await page.getByRole('meter').count(), 0)
      } finally {
        await o.context.close()
      }
    })

    test("an upload past the quota is refused on the files page with the quota's message, nothing sent", async () => {
      const o = await signedIn()
      const requests = recordRequests(o.context)
      try {
        const { page } = o
        await createFile(c, o.id, { content: Buffer.alloc(9_990_000, 1) })
        await page.goto(`${c.base}/`)
        await page.setInputFiles('#upload-input', [
          { name: 'toomuch.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(20_000, 3) },
        ])
        const item = page.locator('.file-item', { hasText: 'toomuch.bin' })
        await item.locator('.file-status').filter({ hasText: /quota/ }).waitFor()
        assert.match(
          await item.innerText(),
          /would pass the account's quota: 9990000 bytes \(10 MB\) are used of 10000000 \(10 MB\)/,
        )
        assert.equal(requests.filter((url) => url.includes('/blob')).length, 0, 'no byte was sent')
        await checkEveryLook(page, `quotas-${engine}-files-refused`, engine)
      } finally {
        await o.context.close()
      }
    })

    test("a request's page tells the submitter in plain words that the request cannot take more", async () => {
      const o = await signedIn()
      try {
        const r = await newRequest(c.app, o.token, { collectEmail: false })
        await createFile(c, o.id, { content: Buffer.alloc(9_995_000, 1) })
        const context = await newContext(browser, 'desktop', 'light')
        const page = await context.newPage()
        const requests = recordRequests(context)
        try {
          await page.goto(`${c.base}/r/${publicIdOf(r)}`)
          await page.getByLabel('Your name').fill('Sam')
          await page.setInputFiles('input[type="file"]', [
            { name: 'scan.pdf', mimeType: 'application/pdf', buffer: Buffer.alloc(10_000, 4) },
          ])
          await page.getByRole('button', { name: /Send/ }).click()
          await page.getByText(NO_ROOM_MESSAGES.quota, { exact: false }).first().waitFor()
          const text = await page.locator('main').innerText()
          assert.doesNotMatch(text, /9995000|10 MB|quota|@/)
          assert.equal(requests.filter((url) => url.includes('/blob')).length, 0, 'no byte was sent')
          await checkEveryLook(page, `quotas-${engine}-request-refused`, engine)
        } finally {
          await context.close()
        }
      } finally {
        await o.context.close()
      }
    })
  })
}
