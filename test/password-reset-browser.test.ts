// "Forgot your password?" as a person goes through it in Chromium, by keyboard: from the sign-in page to the
// email (received by a real SMTP server), the link, the new password, and signing in with it. Each page is
// screenshotted on a phone and a desktop, light and dark, and checked with axe-core.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { browserMissing, checkEveryLook, launchBrowser, newContext } from './support/browser.ts'
import { ENGINES } from './support/harness.ts'
import { SmtpReceiver } from './support/smtp.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const OLD_PASSWORD = 'correct horse battery staple'
const NEW_PASSWORD = 'a brand new passphrase'

/** Presses Enter in a form's field, and waits for the page its POST answers with. */
async function submitByEnter(page: Page): Promise<void> {
  await Promise.all([
    page.waitForResponse((response) => response.request().method() === 'POST'),
    page.keyboard.press('Enter'),
  ])
  await page.waitForLoadState()
}

for (const engine of ENGINES) {
  describe(`forgot your password, in a browser [${engine}]`, { skip: browserMissing }, () => {
    let browser: Browser
    let ctx: ListeningContext
    const smtp = new SmtpReceiver()

    before(async () => {
      const smtpUrl = await smtp.start()
      ctx = await startListening(engine, { env: { SMTP_URL: smtpUrl, MAIL_FROM: 'coffer@example.com' } })
      browser = await launchBrowser()
    })
    after(async () => {
      await browser?.close()
      await ctx?.stop()
      await smtp.stop()
    })

    test('from the sign-in page to a new password, by keyboard', async () => {
      const email = `forgetful-${engine}@example.com`
      await ctx.app.services.accounts.create({ email, password: OLD_PASSWORD })
      const context = await newContext(browser)
      const page = await context.newPage()
      await page.goto(`${ctx.base}/account/sign-in`)
      await page.getByRole('link', { name: 'Forgot your password?' }).focus()
      await page.keyboard.press('Enter')
      await page.waitForURL(/\/account\/forgot-password$/)
      await checkEveryLook(page, 'forgot-password', engine)
      await page.getByLabel('Email').focus()
      await page.keyboard.type(email)
      await submitByEnter(page)
      assert.match(await page.getByRole('main').innerText(), /a link to choose a new password is on its way/)
      await checkEveryLook(page, 'forgot-password-sent', engine)

      const [message] = await smtp.to(email, 1)
      const link = /http:\/\/\S+\/account\/reset-password\/\S+/.exec(message?.text ?? '')?.[0]
      assert.ok(link, message?.text)
      await page.goto(link)
      await checkEveryLook(page, 'reset-password', engine)
      await page.getByLabel('New password', { exact: true }).focus()
      await page.keyboard.type(NEW_PASSWORD)
      await page.keyboard.press('Tab')
      await page.keyboard.type('not the same passphrase')
      await submitByEnter(page)
      assert.match(await page.locator('#field-confirm-error').innerText(), /not the same/)
      await checkEveryLook(page, 'reset-password-refused', engine)
      await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD)
      await page.getByLabel('New password again').fill(NEW_PASSWORD)
      await page.getByRole('button', { name: 'Set the new password' }).click()
      await page.waitForURL(/\/account\/sign-in\?reset=done$/)
      assert.match(await page.getByRole('main').innerText(), /Your password was changed/)
      await checkEveryLook(page, 'reset-password-done', engine)
      await page.getByLabel('Email').fill(email)
      await page.getByLabel('Password', { exact: true }).fill(NEW_PASSWORD)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.waitForURL(`${ctx.base}/`)

      // The link worked once.
      await page.goto(link)
      assert.match(
        await page.getByRole('main').innerText(),
        /This link was used, has expired, or is not right/,
      )
      await checkEveryLook(page, 'reset-password-used', engine)
      await context.close()
    })
  })
}
