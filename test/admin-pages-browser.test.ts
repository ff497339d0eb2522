// The admin's pages as a person uses them, in Chromium (issue 45, 1): Admin in the menu, the accounts searched,
// an invitation made and its link copied, the invited person making their account through it, then an account
// disabled and deleted after typing its email. Every page is screenshotted on a phone and a desktop, light and
// dark, and checked with axe-core; nothing is fetched from elsewhere; the keyboard reaches every action.
import assert from 'node:assert/strict'
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
import { newOwner, OWNER_PASSWORD, signInBrowser } from './support/web-client.ts'

for (const engine of ENGINES) {
  describe(`the admin pages in Chromium [${engine}]`, { skip: browserMissing }, () => {
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

    const looks = (page: Page, name: string) => checkEveryLook(page, `admin-${engine}-${name}`, engine)

    test('accounts, an invitation used, an account disabled and deleted', async () => {
      const boss = await newOwner(c.app, `boss-${engine}@example.com`)
      await c.app.services.accounts.setRole(boss.email, 'admin')
      for (const name of ['ada', 'grace', 'linus']) {
        await c.app.services.accounts.create({
          email: `${name}-${engine}@example.com`,
          password: OWNER_PASSWORD,
        })
      }
      const context = await newContext(browser, 'desktop', 'light')
      const requests = recordRequests(context)
      try {
        const page = await context.newPage()
        await signInBrowser(page, c.base, boss.email)
        await page.getByRole('link', { name: 'Admin' }).click()
        await page.waitForURL(`${c.base}/admin/accounts`)
        assert.ok((await page.locator('.items .item').count()) >= 4)
        await looks(page, 'accounts')

        await page.getByLabel('Search accounts by email').fill('GRACE')
        await page.getByLabel('Search accounts by email').press('Enter')
        await page.waitForURL(/q=GRACE/)
        assert.deepEqual(await page.locator('.items .item-title a').allInnerTexts(), [
          `grace-${engine}@example.com`,
        ])

        // An invitation to copy (no email on this server), made with the keyboard alone.
        await page.getByRole('link', { name: 'Invitations' }).click()
        await page.getByLabel('Role').selectOption('member')
        await page.getByLabel('Email (optional)').focus()
        await page.keyboard.press('Enter')
        await page.waitForSelector('#new-invitation-link')
        const link = await page.locator('#new-invitation-link').innerText()
        assert.match(link, /\/account\/invite\/coffer_invite_/)
        assert.ok(await page.getByRole('button', { name: 'Copy link' }).isVisible())
        await looks(page, 'invitation-made')

        // The invited person makes their account through it, in a browser of their own.
        const guestContext = await newContext(browser, 'phone', 'light')
        try {
          const guest = await guestContext.newPage()
          await guest.goto(link)
          await looks(guest, 'invitation-accept')
          await guest.getByLabel('Email').fill(`invited-${engine}@example.com`)
          await guest.getByLabel('Password', { exact: true }).fill(OWNER_PASSWORD)
          await guest.getByLabel('Password again').fill(OWNER_PASSWORD)
          await guest.getByRole('button', { name: 'Create account' }).click()
          await guest.waitForURL(`${c.base}/`)
          assert.equal(await guest.getByRole('link', { name: 'Admin' }).count(), 0, 'a member has no Admin')
          await guest.goto(link)
          assert.match(await guest.locator('main').innerText(), /This invitation cannot be used/)
          await looks(guest, 'invitation-used')
        } finally {
          await guestContext.close()
        }

        // An account's page: disabled, then deleted after typing its email.
        await page.goto(`${c.base}/admin/accounts?q=linus`)
        await page.getByRole('link', { name: `linus-${engine}@example.com` }).click()
        await looks(page, 'account')
        await page.getByRole('button', { name: 'Disable account' }).click()
        assert.match(await page.locator('.notice, [role="status"]').first().innerText(), /Account disabled/)
        await looks(page, 'account-disabled')
        await page.getByRole('link', { name: 'Delete account…' }).click()
        await page.getByLabel('Type the account’s email to confirm').fill('not the email')
        await page.getByRole('button', { name: 'Delete account' }).click()
        assert.match(await page.locator('main').innerText(), /Type linus-.* to delete this account/)
        await looks(page, 'delete-refused')
        await page.getByLabel('Type the account’s email to confirm').fill(`linus-${engine}@example.com`)
        await page.getByRole('button', { name: 'Delete account' }).click()
        await page.waitForURL(/\/admin\/accounts\?done=deleted/)
        assert.match(await page.locator('main').innerText(), /Account deleted/)

        const elsewhere = requests.filter((url) => !url.startsWith(c.base))
        assert.deepEqual(elsewhere, [], 'nothing fetched from elsewhere')
      } finally {
        await context.close()
      }
    })
  })
}
