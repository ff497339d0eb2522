// The audit log's pages as a person uses them, in Chromium (issue 45, 4): an owner signs in, makes an API key and
// finds both on their Activity tab, filtered with the keyboard; an admin reads everyone's log, narrows it to one
// account from that account's page, and downloads it as JSON Lines. Every page is screenshotted on a phone and a
// desktop, light and dark, and checked with axe-core; nothing is fetched from elsewhere.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import {
  browserMissing,
  checkEveryLook,
  launchBrowser,
  newContext,
  recordRequests,
} from './support/browser.ts'
import { ENGINES } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, signInBrowser } from './support/web-client.ts'

for (const engine of ENGINES) {
  describe(`the audit log in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let browser: Browser
    let c: ListeningContext

    before(async () => {
      browser = await launchBrowser()
      c = await startListening(engine)
    })
    after(async () => {
      await browser?.close()
      await c?.stop()
    })

    const looks = (page: Page, name: string) => checkEveryLook(page, `audit-${engine}-${name}`, engine)

    test('the owner’s activity, then the admin’s log narrowed to that account and exported', async () => {
      const owner = await newOwner(c.app, `ada-${engine}@example.com`)
      const boss = await newOwner(c.app, `boss-audit-${engine}@example.com`)
      await c.app.services.accounts.setRole(boss.email, 'admin')
      const context = await newContext(browser, 'desktop', 'light')
      const requests = recordRequests(context)
      try {
        const page = await context.newPage()
        await signInBrowser(page, c.base, owner.email)
        await page.goto(`${c.base}/account/keys`)
        await page.getByLabel('Name', { exact: true }).fill('Backup script')
        await page.getByRole('checkbox', { name: /files:read/ }).check()
        await page.getByRole('button', { name: 'Create key' }).click()
        await page.waitForSelector('#new-key-secret')
        const secret = await page.locator('#new-key-secret').innerText()

        await page.getByRole('link', { name: 'Activity' }).click()
        await page.waitForURL(`${c.base}/account/activity`)
        const titles = await page.locator('.audit-entry .item-title').allInnerTexts()
        assert.ok(titles.includes('API key made'), `titles: ${titles}`)
        assert.ok(titles.includes('Signed in'), `titles: ${titles}`)
        assert.match(await page.locator('.audit-entry').first().innerText(), /by you · from 127\.0\.0\.1/)
        assert.ok(!(await page.content()).includes(secret), 'the key’s secret is not on the page')
        await looks(page, 'activity')

        // The filter, with the keyboard alone: choose a family, then submit.
        await page.getByLabel('Show').focus()
        await page.getByLabel('Show').selectOption('key')
        await page.keyboard.press('Tab')
        await page.keyboard.press('Enter')
        await page.waitForURL(/kind=key/)
        assert.deepEqual(await page.locator('.audit-entry .item-title').allInnerTexts(), ['API key made'])
        assert.match(await page.locator('.audit-details').first().innerText(), /Backup script/)

        // The admin, in a browser of their own.
        const adminContext = await newContext(browser, 'desktop', 'light')
        try {
          const admin = await adminContext.newPage()
          await signInBrowser(admin, c.base, boss.email)
          await admin.goto(`${c.base}/admin/accounts`)
          await admin.getByRole('link', { name: 'Audit log' }).click()
          await admin.waitForURL(`${c.base}/admin/audit`)
          assert.ok((await admin.locator('.audit-entry').count()) >= 3)
          await looks(admin, 'admin')

          await admin.goto(`${c.base}/admin/accounts/${owner.id}`)
          await admin.getByRole('link', { name: 'In the audit log' }).click()
          await admin.waitForURL(new RegExp(`/admin/audit\\?account=${owner.id}`))
          const texts = await admin.locator('.audit-entry').allInnerTexts()
          assert.ok(texts.length >= 2)
          assert.ok(
            texts.every((text) => text.includes(owner.email)),
            'only that account’s entries',
          )

          const [download] = await Promise.all([
            admin.waitForEvent('download'),
            admin.getByRole('link', { name: 'Export as JSON Lines' }).click(),
          ])
          assert.match(download.suggestedFilename(), /^coffer-audit-\d{4}-\d{2}-\d{2}\.jsonl$/)
          const lines = (await readFile(await download.path(), 'utf8')).trimEnd().split('\n')
          assert.equal(lines.length, texts.length)
          assert.ok(lines.every((line) => JSON.parse(line).accountId === owner.id))
        } finally {
          await adminContext.close()
        }
        const elsewhere = requests.filter((url) => !url.startsWith(c.base) && !url.startsWith('data:'))
        assert.deepEqual(elsewhere, [])
      } finally {
        await context.close()
      }
    })
  })
}
