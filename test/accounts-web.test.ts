// The account pages over HTTP, where a browser is not needed to see the rule: the session cookie's attributes,
// its idle and absolute expiry, the first-run link's single use under concurrency, sign-up only when open, a
// disabled account's session, and that no password, session secret or setup link reaches the log.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SESSION_IDLE_MS, SESSION_MAX_AGE_MS } from '../src/accounts/sessions.service.ts'
import type { App } from '../src/app.ts'
import { captureLogs, describeEachEngine, type TestContext } from './support/harness.ts'

const PASSWORD = 'a long enough password'

/** A browser's cookie jar, reduced to what these tests need. */
class Browser {
  readonly cookies = new Map<string, string>()
  readonly setCookies: string[] = []

  readonly app: App

  constructor(app: App) {
    this.app = app
  }

  async get(url: string) {
    return this.#send('GET', url)
  }

  /** Posts a form with the CSRF token of the page at `formPage`, as the browser would. */
  async post(url: string, form: Record<string, string>, formPage = url) {
    const page = await this.get(formPage)
    const token = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1]
    assert.ok(token, `${formPage} has a CSRF token`)
    return this.#send('POST', url, new URLSearchParams({ ...form, _csrf: token }).toString())
  }

  async #send(method: 'GET' | 'POST', url: string, payload?: string) {
    const response = await this.app.inject({
      method,
      url,
      payload,
      headers: {
        cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(payload ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
    })
    for (const header of [response.headers['set-cookie'] ?? []].flat()) {
      this.setCookies.push(header)
      const [pair] = header.split(';')
      const [name, value] = (pair ?? '').split('=')
      if (!name) continue
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(header)) this.cookies.delete(name)
      else this.cookies.set(name, value ?? '')
    }
    return response
  }
}

async function signIn(app: App, email: string, password = PASSWORD) {
  const browser = new Browser(app)
  const response = await browser.post('/account/sign-in', { email, password })
  assert.equal(response.statusCode, 303, response.body)
  return browser
}

const signedIn = async (browser: Browser) => (await browser.get('/account/keys')).statusCode === 200

async function newAccount(
  ctx: TestContext,
  email = `user-${Math.random().toString(36).slice(2)}@example.com`,
) {
  await ctx.app.services.accounts.create({ email, password: PASSWORD })
  return email
}

describeEachEngine('account pages over HTTP', (ctx) => {
  test('the session cookie is HttpOnly, SameSite=Lax, for the whole site; only its hash is stored', async () => {
    const email = await newAccount(ctx())
    const browser = await signIn(ctx().app, email)
    const cookie = browser.setCookies.find((header) => header.startsWith('coffer_session='))
    assert.ok(cookie)
    assert.match(cookie, /HttpOnly/i)
    assert.match(cookie, /SameSite=Lax/i)
    assert.match(cookie, /Path=\//)
    const secret = browser.cookies.get('coffer_session') as string
    const stored = await ctx().db.kysely.selectFrom('sessions').selectAll().execute()
    assert.ok(stored.length > 0)
    assert.ok(stored.every((row) => !Object.values(row).includes(secret)))
  })

  test('a session ends after its idle time, and at its absolute end however busy', async () => {
    const { app, db } = ctx()
    const email = await newAccount(ctx())
    const idle = await signIn(app, email)
    const busy = await signIn(app, email)
    const age = async (browser: Browser, column: 'last_seen_at' | 'expires_at', by: number) => {
      const rows = await db.kysely.selectFrom('sessions').select(['id', column]).execute()
      const { hashSecret } = await import('../src/auth/secrets.ts')
      const hash = hashSecret(browser.cookies.get('coffer_session') as string)
      await db.kysely
        .updateTable('sessions')
        .set({ [column]: Date.now() - by })
        .where('secret_hash', '=', hash)
        .execute()
      return rows
    }
    await age(idle, 'last_seen_at', SESSION_IDLE_MS + 1000)
    assert.equal(await signedIn(idle), false)
    assert.equal(await signedIn(busy), true)
    await age(busy, 'expires_at', 1000)
    assert.equal(await signedIn(busy), false)
    assert.ok(SESSION_MAX_AGE_MS > SESSION_IDLE_MS)
  })

  test('expired sessions are purged', async () => {
    const { app, db } = ctx()
    const email = await newAccount(ctx())
    await signIn(app, email)
    await db.kysely
      .updateTable('sessions')
      .set({ expires_at: Date.now() - 1 })
      .execute()
    assert.ok((await app.services.sessions.purgeExpired()) >= 1)
    assert.equal((await db.kysely.selectFrom('sessions').select('id').execute()).length, 0)
  })

  test('disabling an account ends its sessions, and it cannot sign in', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const browser = await signIn(app, email)
    await app.services.accounts.disable(email)
    assert.equal(await signedIn(browser), false)
    const again = await new Browser(app).post('/account/sign-in', { email, password: PASSWORD })
    assert.equal(again.statusCode, 401)
    await app.services.accounts.enable(email)
  })

  test('a form field that is not storable text is a 400, and nothing is written', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const browser = await signIn(app, email)
    const accountId = (await app.services.accounts.getByEmail(email)).id
    const before = await app.services.apiKeys.list(accountId)
    const refused = await browser.post(
      '/account/keys/new',
      { name: 'a\u0000b', scopes: 'files:read' },
      '/account/keys',
    )
    assert.equal(refused.statusCode, 400)
    assert.equal((await app.services.apiKeys.list(accountId)).length, before.length)
    const nulEmail = await new Browser(app).post('/account/sign-in', {
      email: 'a\u0000@example.com',
      password: PASSWORD,
    })
    assert.equal(nulEmail.statusCode, 400)
    assert.match(String(nulEmail.headers['content-type']), /^text\/html/)
  })

  test('sign-up is closed by default', async () => {
    const response = await ctx().app.inject({ url: '/account/sign-up', headers: { accept: 'text/html' } })
    assert.equal(response.statusCode, 404)
  })
})

describeEachEngine('first-run setup', (ctx) => {
  test('a setup link makes one account, once, even when used twice at once', async () => {
    const { app } = ctx()
    assert.equal(await app.services.setup.pending(), true)
    const secret = (await app.services.setup.issue()) as string
    const other = (await app.services.setup.issue()) as string
    assert.match(secret, /^coffer_setup_/)
    const unknown = await app.inject({ url: '/account/setup/coffer_setup_nope' })
    assert.equal(unknown.statusCode, 410)

    const first = new Browser(app)
    const second = new Browser(app)
    const [a, b] = await Promise.all([
      first.post(`/account/setup/${secret}`, {
        email: 'one@example.com',
        password: PASSWORD,
        confirm: PASSWORD,
      }),
      second.post(`/account/setup/${other}`, {
        email: 'two@example.com',
        password: PASSWORD,
        confirm: PASSWORD,
      }),
    ])
    assert.deepEqual([a.statusCode, b.statusCode].sort(), [303, 410])
    assert.equal((await app.services.accounts.list()).length, 1)
    assert.equal(await app.services.setup.pending(), false)
    assert.equal(await app.services.setup.issue(), undefined, 'no link once an account exists')
    assert.equal((await app.inject({ url: `/account/setup/${secret}` })).statusCode, 410)
  })
})

describeEachEngine(
  'sign-up when SIGNUP=open',
  (ctx) => {
    test('anyone may create an account; a taken email is said next to its field', async () => {
      const { app } = ctx()
      const browser = new Browser(app)
      const created = await browser.post('/account/sign-up', {
        email: 'new@example.com',
        password: PASSWORD,
        confirm: PASSWORD,
      })
      assert.equal(created.statusCode, 303)
      assert.equal(await signedIn(browser), true)
      const taken = await new Browser(app).post('/account/sign-up', {
        email: 'NEW@example.com',
        password: PASSWORD,
        confirm: PASSWORD,
      })
      assert.equal(taken.statusCode, 400)
      assert.match(
        taken.body,
        /id="field-email-error">An account with the email new@example.com already exists/,
      )
      const mismatch = await new Browser(app).post('/account/sign-up', {
        email: 'other@example.com',
        password: PASSWORD,
        confirm: 'something else',
      })
      assert.equal(mismatch.statusCode, 400)
      assert.match(mismatch.body, /The two passwords are not the same/)
    })
  },
  { env: { SIGNUP: 'open' } },
)

describeEachEngine(
  'secure cookies behind https',
  (ctx) => {
    test('with an https PUBLIC_URL the session cookie is __Host- and Secure', async () => {
      const { app } = ctx()
      await app.services.accounts.create({ email: 'tls@example.com', password: PASSWORD })
      const browser = new Browser(app)
      await browser.post('/account/sign-in', { email: 'tls@example.com', password: PASSWORD })
      const cookie = browser.setCookies.find((header) => header.startsWith('__Host-coffer_session='))
      assert.ok(cookie, browser.setCookies.join('\n'))
      assert.match(cookie, /; Secure/i)
      assert.doesNotMatch(cookie, /Domain=/i)
      assert.ok(browser.setCookies.some((header) => /^__Host-coffer_csrf=.*; Secure/i.test(header)))
    })
  },
  { env: { PUBLIC_URL: 'https://files.example.org' } },
)

const logs = captureLogs('trace')
describeEachEngine(
  'account secrets in the log',
  (ctx) => {
    test('no password, session secret, CSRF token or setup link is logged, even at trace level', async () => {
      const { app } = ctx()
      const secret = (await app.services.setup.issue()) as string
      const browser = new Browser(app)
      await browser.post(`/account/setup/${secret}`, {
        email: 'logged@example.com',
        password: PASSWORD,
        confirm: PASSWORD,
      })
      await browser.post('/account/password', {
        current: PASSWORD,
        password: `${PASSWORD}!`,
        confirm: `${PASSWORD}!`,
      })
      const text = logs.text()
      assert.ok(text.length > 0, 'something was logged')
      for (const value of [PASSWORD, secret.slice('coffer_setup_'.length), ...browser.cookies.values()]) {
        assert.ok(!text.includes(value), 'a secret reached the log')
      }
    })
  },
  { logger: logs.logger },
)
