// Single sign-on as a person meets it, in Chromium (test/support/browser.ts), against a real provider
// (oidc-provider, test/support/oidc-test-provider.ts): the sign-in page's button, reached and pressed from the
// keyboard, through the provider and back, signed in on the page asked for; the pages of a refused sign-in and of
// a provider that is down, each with its way back; SSO_ONLY's sign-in page and the admins' password form, the
// break-glass, signing an admin in. Each page on a phone and a desktop, light and dark, checked with axe-core.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { browserMissing, checkEveryLook, launchBrowser, newContext } from './support/browser.ts'
import { ENGINES } from './support/harness.ts'
import { type Listening, startWithProvider } from './support/sso-flow.ts'
import { OWNER_PASSWORD } from './support/web-client.ts'

let counter = 0
const address = () => `browser-${process.pid}-${++counter}@example.com`

/** Presses Tab until the control named `name` has the focus (at most `limit` times), as a keyboard user does. */
async function tabTo(page: Page, name: string, limit = 12): Promise<void> {
  for (let presses = 0; presses < limit; presses++) {
    await page.keyboard.press('Tab')
    const focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '')
    if (focused === name) return
  }
  assert.fail(`"${name}" is reached with the Tab key`)
}

for (const engine of ENGINES) {
  describe(`single sign-on in a browser [${engine}]`, { skip: browserMissing, timeout: 180_000 }, () => {
    let browser: Browser
    let ctx: Listening
    before(async () => {
      browser = await launchBrowser()
      ctx = await startWithProvider(engine, { SIGNUP: 'open', SIGNUP_EMAIL_DOMAINS: 'example.com' })
    })
    after(async () => {
      await browser?.close()
      await ctx?.stop()
    })

    test('the button, from the keyboard, through the provider and back to the page asked for', async () => {
      const email = address()
      await ctx.app.services.accounts.create({ email, password: OWNER_PASSWORD })
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      const context = await newContext(browser, 'desktop', 'light')
      try {
        const page = await context.newPage()
        await page.goto(`${ctx.base}/account/sign-in?return_to=${encodeURIComponent('/account/keys')}`)
        await checkEveryLook(page, 'sso-sign-in', engine)
        await tabTo(page, 'Sign in with Test ID')
        await page.keyboard.press('Enter')
        await page.waitForURL(`${ctx.base}/account/keys`)
        assert.ok(await page.getByText(email).first().isVisible(), 'signed in as the account')
      } finally {
        await context.close()
      }
    })

    test('the sign-up page offers the provider too', async () => {
      const context = await newContext(browser, 'phone', 'light')
      try {
        const page = await context.newPage()
        await page.goto(`${ctx.base}/account/sign-up`)
        assert.ok(await page.getByRole('button', { name: 'Sign in with Test ID' }).isVisible())
        await checkEveryLook(page, 'sso-sign-up', engine)
        // A new address at an allowed domain: an account is made, and signed in.
        const email = address()
        ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
        await page.getByRole('button', { name: 'Sign in with Test ID' }).click()
        await page.waitForURL(`${ctx.base}/`)
        assert.equal((await ctx.app.services.accounts.findByEmail(email))?.role, 'member')
      } finally {
        await context.close()
      }
    })

    test('a refused sign-in is a page that says why, with the way back', async () => {
      ctx.provider.signInAs(ctx.provider.addUser({ email: address(), email_verified: false }))
      const context = await newContext(browser, 'desktop', 'light')
      try {
        const page = await context.newPage()
        await page.goto(`${ctx.base}/account/sign-in`)
        await page.getByRole('button', { name: 'Sign in with Test ID' }).click()
        await page.getByRole('heading', { name: 'Your email address is not verified' }).waitFor()
        await checkEveryLook(page, 'sso-refused-unverified', engine)
        await tabTo(page, 'Back to sign in')
        await page.keyboard.press('Enter')
        await page.waitForURL(`${ctx.base}/account/sign-in`)
      } finally {
        await context.close()
      }
    })

    test('a provider that is down: the page says it cannot be reached', async () => {
      const context = await newContext(browser, 'desktop', 'light')
      try {
        const page = await context.newPage()
        await page.goto(`${ctx.base}/account/sign-in`)
        await ctx.provider.stop()
        try {
          await page.getByRole('button', { name: 'Sign in with Test ID' }).click()
          await page.getByRole('heading', { name: 'Test ID cannot be reached' }).waitFor()
          await checkEveryLook(page, 'sso-unreachable', engine)
          assert.ok(await page.getByRole('link', { name: 'Back to sign in' }).isVisible())
        } finally {
          await ctx.provider.start()
        }
      } finally {
        await context.close()
      }
    })
  })

  describe(`single sign-on only, in a browser [${engine}]`, {
    skip: browserMissing,
    timeout: 180_000,
  }, () => {
    let browser: Browser
    let ctx: Listening
    before(async () => {
      browser = await launchBrowser()
      ctx = await startWithProvider(engine, { SSO_ONLY: 'true' })
    })
    after(async () => {
      await browser?.close()
      await ctx?.stop()
    })

    test('the button only; an admin signs in with the password the admin command set (the break-glass)', async () => {
      const admin = address()
      await ctx.app.services.accounts.create({ email: admin, password: OWNER_PASSWORD, role: 'admin' })
      const context = await newContext(browser, 'desktop', 'light')
      try {
        const page = await context.newPage()
        await page.goto(`${ctx.base}/account/sign-in`)
        assert.equal(await page.getByLabel('Password').count(), 0, 'no password form')
        await checkEveryLook(page, 'sso-only-sign-in', engine)
        await tabTo(page, 'Admin sign-in with a password')
        await page.keyboard.press('Enter')
        await page.getByRole('heading', { name: 'Admin sign-in' }).waitFor()
        await checkEveryLook(page, 'sso-only-admin-sign-in', engine)
        await page.getByLabel('Email').fill(admin)
        await page.getByLabel('Password', { exact: true }).fill(OWNER_PASSWORD)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await page.waitForURL(`${ctx.base}/`)
      } finally {
        await context.close()
      }
    })
  })
}
