// What the tests of pages share: a browser's cookie jar over `inject` for the rules a real browser is not
// needed to see (CSRF, sessions, another account's ids), and signing in a real browser (Chromium) as an
// owner of the app.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { Page } from 'playwright-core'
import type { App } from '../../src/app.ts'

export const OWNER_PASSWORD = 'a long enough password'

/** A new account that can sign in on the web with OWNER_PASSWORD. */
export async function newOwner(app: App, email = `owner-${randomBytes(5).toString('hex')}@example.com`) {
  const account = await app.services.accounts.create({ email, password: OWNER_PASSWORD })
  return { id: account.id, email }
}

/** A browser's cookie jar, reduced to what the HTTP tests of pages need; requests go through `inject`. */
export class WebClient {
  readonly cookies = new Map<string, string>()
  readonly setCookies: string[] = []
  readonly app: App

  constructor(app: App) {
    this.app = app
  }

  /** A signed-in client of the account with `email` (whose password is OWNER_PASSWORD unless given). */
  static async signedIn(app: App, email: string, password = OWNER_PASSWORD): Promise<WebClient> {
    const client = new WebClient(app)
    const response = await client.post('/account/sign-in', { email, password })
    assert.equal(response.statusCode, 303, response.body)
    return client
  }

  /** A page as a browser navigating to it asks for it (Accept: text/html). */
  get(url: string, headers: Record<string, string> = {}) {
    return this.send('GET', url, undefined, { accept: 'text/html', ...headers })
  }

  /** The CSRF token of the first form of the page at `url`. */
  async csrfToken(url: string): Promise<string> {
    const page = await this.get(url)
    const token = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1]
    assert.ok(token, `${url} has a CSRF token (${page.statusCode})`)
    return token
  }

  /**
   * Posts a form as a browser would, with the CSRF token of the page at `formPage` (the form's own URL by
   * default); `_csrf` given in `form` replaces it.
   */
  async post(url: string, form: Record<string, string | string[]>, formPage = url) {
    const token = '_csrf' in form ? undefined : await this.csrfToken(formPage)
    const body = new URLSearchParams()
    for (const [name, value] of Object.entries(form)) {
      for (const item of [value].flat()) body.append(name, item)
    }
    if (token) body.append('_csrf', token)
    return this.send('POST', url, body.toString(), {
      accept: 'text/html',
      'content-type': 'application/x-www-form-urlencoded',
    })
  }

  async send(
    method: 'GET' | 'POST' | 'HEAD',
    url: string,
    payload?: string,
    headers: Record<string, string> = {},
  ) {
    const response = await this.app.inject({
      method,
      url,
      payload,
      headers: {
        cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
        ...headers,
      },
    })
    this.keepCookies(response)
    return response
  }

  /** Keeps the cookies an answer sets, as a browser does (for answers to requests not made by `send`). */
  keepCookies(response: { headers: Record<string, unknown> }): void {
    for (const header of [response.headers['set-cookie'] ?? []].flat() as string[]) {
      this.setCookies.push(header)
      const [pair] = header.split(';')
      const [name, value] = (pair ?? '').split('=')
      if (!name) continue
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(header)) this.cookies.delete(name)
      else this.cookies.set(name, value ?? '')
    }
  }
}

/** Signs a real browser in through the sign-in page, coming back to `returnTo` (the home page by default). */
export async function signInBrowser(
  page: Page,
  base: string,
  email: string,
  options: { password?: string; returnTo?: string } = {},
): Promise<void> {
  const query = options.returnTo === undefined ? '' : `?return_to=${encodeURIComponent(options.returnTo)}`
  await page.goto(`${base}/account/sign-in${query}`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password', { exact: true }).fill(options.password ?? OWNER_PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForLoadState()
}
