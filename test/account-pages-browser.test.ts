// The account pages as a person uses them, in Chromium: the first account made from the link the server
// prints, signing in, an API key made on the web (its secret shown once, working against the API) and
// revoked (refused on the next request), a password change that signs out the other browsers. Each page is
// screenshotted on a phone and a desktop, light and dark, and checked with axe-core. Then what protects them:
// CSRF tokens on every form, a new session id at sign-in, no open redirect, the same answer for an unknown
// email and a wrong password, and the sign-in throttle.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import {
  assertAccessible,
  browserMissing,
  launchBrowser,
  looksOn,
  newContext,
  screenshot,
} from './support/browser.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { startServer } from './support/server-process.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const PASSWORD = 'correct horse battery staple'

async function signIn(page: Page, base: string, email: string, password = PASSWORD, returnTo?: string) {
  const query = returnTo === undefined ? '' : `?return_to=${encodeURIComponent(returnTo)}`
  await page.goto(`${base}/account/sign-in${query}`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password', { exact: true }).fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForLoadState()
}

async function sessionCookie(context: BrowserContext): Promise<string | undefined> {
  return (await context.cookies()).find((cookie) => cookie.name === 'coffer_session')?.value
}

async function apiStatus(base: string, token: string): Promise<number> {
  const response = await fetch(`${base}/api/v1/files`, { headers: { authorization: `Bearer ${token}` } })
  await response.arrayBuffer()
  return response.status
}

for (const engine of ENGINES) {
  describe(`account pages [${engine}]`, { skip: browserMissing }, () => {
    let browser: Browser

    before(async () => {
      browser = await launchBrowser()
    })
    after(async () => {
      await browser?.close()
    })

    test('a new server prints a one-time setup link that makes the first account, signed in', async () => {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-setup-'))
      const database = await freshDatabase(engine, dataDir)
      const server = await startServer({
        DATA_DIR: dataDir,
        ...(database.url ? { DATABASE_URL: database.url } : {}),
      })
      try {
        // The link is printed once the server listens, so it may come just after /healthz first answers.
        const printed = () => /(http:\/\/\S+\/account\/setup\/coffer_setup_\S+)/.exec(server.stderr())?.[1]
        for (let waited = 0; !printed() && waited < 10_000; waited += 50) {
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        const link = printed()
        assert.ok(link, `the server printed a setup link on stderr:\n${server.stderr()}`)
        const secret = link.slice(link.lastIndexOf('/') + 1)
        // Not in the log's stream at all, where lines are kept and shipped.
        assert.ok(!server.stdout().includes(secret), 'the setup link stays out of stdout, the log')
        const index = await (await fetch(`${server.base}/api/v1/`)).json()
        assert.equal(index.setup.pending, true)

        const context = await newContext(browser, 'phone', 'dark')
        const page = await context.newPage()
        await page.goto(link)
        await assertAccessible(page, 'setup page')
        await screenshot(page, 'account-setup-phone-dark')
        await page.getByLabel('Email').fill('first@example.com')
        await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
        await page.getByLabel('Password again').fill(PASSWORD)
        await page.getByRole('button', { name: 'Create account' }).click()
        // To the app's home page, signed in as the new account.
        await page.waitForURL(`${server.base}/`)
        await page.goto(`${server.base}/account`)
        assert.match(page.url(), /\/account\/keys$/)
        assert.match(await page.locator('.account-email').innerText(), /first@example\.com/)

        // Used once: the link is gone, and so is the pending setup.
        const again = await context.newPage()
        const response = await again.goto(link)
        assert.equal(response?.status(), 410)
        assert.equal((await (await fetch(`${server.base}/api/v1/`)).json()).setup, undefined)
        await context.close()
      } finally {
        await server.stop()
        await database.drop()
        await rm(dataDir, { recursive: true, force: true })
      }
    })

    describe('settings', () => {
      let ctx: ListeningContext
      let email: string

      before(async () => {
        ctx = await startListening(engine)
        email = `owner-${engine}@example.com`
        await ctx.app.services.accounts.create({ email, password: PASSWORD })
      })
      after(async () => {
        await ctx?.stop()
      })

      test('sign in, make an API key (shown once, works), revoke it (refused next request)', async () => {
        const context = await newContext(browser)
        const page = await context.newPage()
        await signIn(page, ctx.base, email, PASSWORD, '/account/keys')
        await page.waitForURL(/\/account\/keys$/)
        await page.getByLabel('Name', { exact: true }).fill('Backup script')
        await page.getByRole('checkbox', { name: /folders:read/ }).check()
        await page.getByRole('button', { name: 'Create key' }).click()
        const secret = (await page.locator('#new-key-secret').innerText()).trim()
        assert.match(secret, /^coffer_[A-Za-z0-9_-]{40,}$/)
        await assertAccessible(page, 'keys page with a new key')
        await screenshot(page, 'account-key-created')
        assert.equal(await apiStatus(ctx.base, secret), 200)
        const keys = await ctx.app.services.apiKeys.list(
          (await ctx.app.services.accounts.getByEmail(email)).id,
        )
        assert.deepEqual(keys[0]?.scopes, ['files:read', 'folders:read'])

        // A reload sends no form again: no second key, and the secret is not shown again.
        await page.reload()
        assert.equal(await page.locator('#new-key-secret').count(), 0)
        assert.equal(
          (await ctx.app.services.apiKeys.list((await ctx.app.services.accounts.getByEmail(email)).id))
            .length,
          1,
        )
        // Shown once: the list shows only its prefix.
        await page.goto(`${ctx.base}/account/keys`)
        assert.equal(await page.locator('#new-key-secret').count(), 0)
        assert.ok(!(await page.content()).includes(secret))
        const item = page.locator('li.item', { hasText: 'Backup script' })
        assert.match(await item.innerText(), new RegExp(secret.slice(0, 13)))
        await item.getByRole('button', { name: 'Revoke Backup script' }).click()
        await page.waitForURL(/\/account\/keys$/)
        assert.match(await page.locator('li.item', { hasText: 'Backup script' }).innerText(), /Revoked/)
        assert.equal(await apiStatus(ctx.base, secret), 401)

        // A key that expires: a date in the past is refused next to its field.
        await page.getByLabel('Name', { exact: true }).fill('Old')
        await page.getByLabel('Works until').fill('2020-01-01')
        await page.getByRole('button', { name: 'Create key' }).click()
        assert.match(await page.locator('#field-expires-error').innerText(), /Choose today or a later day/)
        await context.close()

        // In Tokyo, a key that works until a day works to the end of that day there, and the list says that day.
        const tokyo = await newContext(browser, 'desktop', 'light', 'Asia/Tokyo')
        const there = await tokyo.newPage()
        await signIn(there, ctx.base, email, PASSWORD, '/account/keys')
        await there.waitForURL(/\/account\/keys$/)
        // The page's script keeps the zone in a cookie; the form drawn after it is Tokyo's.
        await there.reload()
        assert.match(
          await there.locator('#field-expires-hint').innerText(),
          /end of this day, Asia\/Tokyo time/,
        )
        await there.getByLabel('Name', { exact: true }).fill('Until New Year')
        await there.getByRole('checkbox', { name: /files:read/ }).check()
        await there.getByLabel('Works until').fill('2999-01-01')
        await there.getByRole('button', { name: 'Create key' }).click()
        await there.locator('#new-key-secret').waitFor()
        const made = (
          await ctx.app.services.apiKeys.list((await ctx.app.services.accounts.getByEmail(email)).id)
        ).find((key) => key.name === 'Until New Year')
        assert.equal(made?.expiresAt, Date.parse('2999-01-01T15:00:00Z'))
        assert.match(
          await there.locator('li.item', { hasText: 'Until New Year' }).innerText(),
          /Works until\s+Jan 1, 2999/,
        )
        await tokyo.close()
      })

      test('every settings page, under the app header, on a phone and a desktop, light and dark, passes axe', async () => {
        for (const [viewport, scheme] of looksOn(engine)) {
          const context = await newContext(browser, viewport, scheme)
          const page = await context.newPage()
          await page.goto(`${ctx.base}/account/sign-in`)
          await assertAccessible(page, `sign-in (${viewport}, ${scheme})`)
          await screenshot(page, `account-sign-in-${viewport}-${scheme}`)
          // A refused sign-in: the first field at fault has the focus.
          await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
          await page.getByRole('button', { name: 'Sign in' }).click()
          await page.waitForLoadState()
          assert.equal(await page.evaluate(() => document.activeElement?.id), 'field-email')
          assert.equal(await page.getByLabel('Email').getAttribute('aria-invalid'), 'true')
          await assertAccessible(page, `refused sign-in (${viewport}, ${scheme})`)
          await screenshot(page, `account-sign-in-refused-${viewport}-${scheme}`)
          await signIn(page, ctx.base, email)
          for (const name of ['keys', 'apps', 'password']) {
            await page.goto(`${ctx.base}/account/${name}`)
            // The app's header, the account's menu marked as where the owner is, the settings' tabs.
            const header = page.getByRole('banner')
            for (const section of ['Files', 'File requests', 'Analytics']) {
              assert.ok(await header.getByRole('link', { name: section, exact: true }).isVisible(), section)
            }
            assert.equal(await header.locator('summary').getAttribute('aria-current'), 'page')
            const tabs = page.getByRole('navigation', { name: 'Account settings' })
            assert.equal(await tabs.locator('[aria-current="page"]').count(), 1)
            assert.equal(
              await page.getByRole('main').getByRole('button', { name: 'Sign out', exact: true }).count(),
              0,
              'signing out is in the account menu only',
            )
            await assertAccessible(page, `${name} (${viewport}, ${scheme})`)
            await screenshot(page, `account-${name}-${viewport}-${scheme}`)
          }
          // The key form refused: the fields at fault marked, the focus on the first.
          await page.goto(`${ctx.base}/account/keys`)
          await page.getByRole('checkbox', { name: /files:read/ }).uncheck()
          await page.getByRole('button', { name: 'Create key' }).click()
          await page.waitForLoadState()
          assert.equal(await page.evaluate(() => document.activeElement?.id), 'field-name')
          assert.match(await page.locator('#field-scopes-error').innerText(), /Choose at least one scope/)
          assert.equal(await page.getByRole('checkbox', { checked: true }).count(), 0, 'as sent')
          await assertAccessible(page, `refused key form (${viewport}, ${scheme})`)
          await screenshot(page, `account-keys-refused-${viewport}-${scheme}`)
          // The account menu opens from the header, and signs out.
          await page.getByRole('banner').locator('summary').click()
          await screenshot(page, `account-menu-${viewport}-${scheme}`)
          await page.getByRole('button', { name: 'Sign out', exact: true }).click()
          await page.waitForURL(/\/account\/sign-in$/)
          await context.close()
        }
      })

      test('changing the password signs out every other browser; the new one works', async () => {
        const first = await newContext(browser)
        const second = await newContext(browser)
        const here = await first.newPage()
        const there = await second.newPage()
        await signIn(here, ctx.base, email)
        await signIn(there, ctx.base, email)
        await here.goto(`${ctx.base}/account/password`)
        await here.getByLabel('Current password').fill(PASSWORD)
        await here.getByLabel('New password', { exact: true }).fill(`${PASSWORD}!`)
        await here.getByLabel('New password again').fill(`${PASSWORD}!`)
        await here.getByRole('button', { name: 'Change password' }).click()
        await here.getByText('Your password was changed').waitFor()
        await here.goto(`${ctx.base}/account/keys`)
        assert.match(here.url(), /\/account\/keys$/, 'this browser stays signed in')
        await there.goto(`${ctx.base}/account/keys`)
        assert.match(there.url(), /\/account\/sign-in\?return_to=/, 'the other browser is signed out')
        assert.equal(await ctx.app.services.accounts.verifyPassword(email, PASSWORD), undefined)
        assert.ok(await ctx.app.services.accounts.verifyPassword(email, `${PASSWORD}!`))
        await ctx.app.services.accounts.setPassword(
          (await ctx.app.services.accounts.getByEmail(email)).id,
          PASSWORD,
        )

        // Sign out everywhere ends this browser's session too.
        await here.goto(`${ctx.base}/account/password`)
        await here.getByRole('button', { name: 'Sign out everywhere' }).click()
        await here.waitForURL(/\/account\/sign-in$/)
        await here.goto(`${ctx.base}/account/keys`)
        assert.match(here.url(), /\/account\/sign-in/)
        await first.close()
        await second.close()
      })

      test('every form refuses a post without its CSRF token', async () => {
        const context = await newContext(browser)
        const page = await context.newPage()
        await signIn(page, ctx.base, email)
        const key = await ctx.app.services.apiKeys.create({
          accountId: (await ctx.app.services.accounts.getByEmail(email)).id,
          name: 'kept',
          scopes: ['files:read'],
        })
        const forms = [
          '/account/sign-in',
          '/account/sign-out',
          '/account/sign-out-everywhere',
          '/account/keys/new',
          `/account/keys/${key.key.id}/revoke`,
          '/account/apps/grant-id/revoke',
          '/account/password',
          '/oauth/interaction/some-uid/consent',
          '/oauth/interaction/some-uid/deny',
        ]
        for (const form of forms) {
          // From the signed-in browser, with its cookies, as another site's form would post.
          const response = await page.request.post(`${ctx.base}${form}`, {
            form: { name: 'x', email, password: PASSWORD, scopes: 'files:read' },
            maxRedirects: 0,
          })
          assert.equal(response.status(), 403, form)
        }
        assert.equal(await apiStatus(ctx.base, key.secret), 200, 'the key was not revoked')
        await page.goto(`${ctx.base}/account/keys`)
        assert.match(page.url(), /\/account\/keys$/, 'still signed in')
        await context.close()
      })

      test('sign-in gives a new session id, goes back only to this server, and says nothing of who exists', async () => {
        const context = await newContext(browser)
        const page = await context.newPage()
        // A session id planted before sign-in (fixation) is not adopted.
        await context.addCookies([{ name: 'coffer_session', value: 'planted-by-an-attacker', url: ctx.base }])
        await signIn(page, ctx.base, email)
        const first = await sessionCookie(context)
        assert.ok(first && first !== 'planted-by-an-attacker')
        // Signing in again from a signed-in browser replaces its session.
        await page.goto(`${ctx.base}/account/keys`)
        const token = await page.locator('input[name="_csrf"]').first().inputValue()
        const again = await page.request.post(`${ctx.base}/account/sign-in`, {
          form: { _csrf: token, email, password: PASSWORD },
          maxRedirects: 0,
        })
        assert.equal(again.status(), 303)
        const second = await sessionCookie(context)
        assert.ok(second && second !== first, 'signing in again gives a new session')
        const rows = await ctx.db.kysely.selectFrom('sessions').select('secret_hash').execute()
        assert.ok(
          rows.every((row) => row.secret_hash !== second),
          'only a hash is stored',
        )

        for (const target of [
          'https://evil.example/',
          '//evil.example/',
          '/\\evil.example/',
          'javascript:alert(1)',
        ]) {
          await page.context().clearCookies()
          await signIn(page, ctx.base, email, PASSWORD, target)
          assert.equal(page.url(), `${ctx.base}/`, `${target}: to the home page`)
        }
        await page.context().clearCookies()
        await signIn(page, ctx.base, email, PASSWORD, '/account/password')
        assert.match(page.url(), /\/account\/password$/)

        await page.context().clearCookies()
        await signIn(page, ctx.base, 'nobody@example.com')
        const unknown = await page.locator('#form-error').innerText()
        await signIn(page, ctx.base, email, 'not the password')
        assert.equal(await page.locator('#form-error').innerText(), unknown)
        assert.match(unknown, /The email or the password is not right/)
        await context.close()
      })

      test('repeated failures for one account are slowed down, for known and unknown emails alike', async () => {
        const form = async (who: string) => {
          const context = await newContext(browser)
          const page = await context.newPage()
          await page.goto(`${ctx.base}/account/sign-in`)
          const token = await page.locator('input[name="_csrf"]').inputValue()
          const statuses: number[] = []
          for (let i = 0; i < 11; i++) {
            const response = await page.request.post(`${ctx.base}/account/sign-in`, {
              form: { _csrf: token, email: who, password: `wrong ${i}` },
              maxRedirects: 0,
            })
            statuses.push(response.status())
          }
          await context.close()
          return statuses
        }
        const throttled = `throttled-${engine}@example.com`
        await ctx.app.services.accounts.create({ email: throttled, password: PASSWORD })
        const known = await form(throttled)
        assert.deepEqual(known.slice(0, 10), Array(10).fill(401))
        assert.equal(known[10], 429)
        const unknown = await form('no-one@example.com')
        assert.deepEqual(unknown, known)
      })
    })
  })
}
