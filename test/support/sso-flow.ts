// Signing in with the test provider over plain HTTP (fetch, redirects followed by hand), with one cookie jar for
// Coffer and the provider: both are on 127.0.0.1, and cookies, as in a browser, do not tell ports apart.
import assert from 'node:assert/strict'
import type { Engine } from '../../src/platform/db/engine.ts'
import { startApp, type TestContext } from './harness.ts'
import { startTestProvider, type TestProvider } from './oidc-test-provider.ts'
import { freePort } from './ports.ts'

export type Listening = TestContext & { base: string; provider: TestProvider; stop(): Promise<void> }

/** A provider, and a Coffer server listening on 127.0.0.1 that signs in with it (its button says "Test ID"). */
export async function startWithProvider(
  engine: Engine,
  env: Record<string, string>,
  options: { logger?: object } = {},
): Promise<Listening> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const provider = await startTestProvider(`${base}/account/sso/callback`)
  const ctx = await startApp(engine, { env: { PUBLIC_URL: base, ...provider.env(), ...env }, ...options })
  await ctx.app.listen({ port, host: '127.0.0.1' })
  return {
    ...ctx,
    base,
    provider,
    async stop() {
      ctx.app.server.closeAllConnections()
      await ctx.stop()
      await provider.stop()
    },
  }
}

export class Jar {
  readonly cookies = new Map<string, string>()

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }

  keep(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const at = pair.indexOf('=')
      const name = pair.slice(0, at)
      const value = pair.slice(at + 1)
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line) || /max-age=0\b/i.test(line)) {
        this.cookies.delete(name)
      } else this.cookies.set(name, value)
    }
  }

  async get(url: string): Promise<Response> {
    const response = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: this.header(), accept: 'text/html' },
      signal: AbortSignal.timeout(15_000),
    })
    this.keep(response)
    return response
  }

  async post(url: string, form: Record<string, string>, origin: string): Promise<Response> {
    const response = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: this.header(),
        accept: 'text/html',
        origin,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(15_000),
    })
    this.keep(response)
    return response
  }
}

/** The CSRF token of the page at `url`'s first form. */
export async function csrfOf(jar: Jar, url: string): Promise<string> {
  const response = await jar.get(url)
  const body = await response.text()
  const token = /name="_csrf" value="([^"]+)"/.exec(body)?.[1]
  assert.ok(token, `${url} has a form with a CSRF token (${response.status})`)
  return token
}

/**
 * Presses the sign-in page's button, then follows the provider's redirects to Coffer's callback: returns the
 * callback's address (with its code and state), not yet opened, or the start's answer when it was not a redirect.
 */
export async function startAndReachCallback(
  jar: Jar,
  base: string,
  returnTo = '/',
): Promise<{ callback: string } | { refused: Response }> {
  const _csrf = await csrfOf(jar, `${base}/account/sign-in`)
  const started = await jar.post(`${base}/account/sso/start`, { _csrf, return_to: returnTo }, base)
  if (started.status !== 303) return { refused: started }
  let location = started.headers.get('location')
  for (let hops = 0; hops < 10; hops++) {
    assert.ok(location, 'a redirect has its location')
    if (location.startsWith(`${base}/account/sso/callback`)) return { callback: location }
    const response = await jar.get(location)
    await response.arrayBuffer()
    assert.ok(
      response.status >= 300 && response.status < 400,
      `the provider redirects (${response.status} at ${location})`,
    )
    location = new URL(response.headers.get('location') ?? '', location).href
  }
  throw new Error('the provider never sent the browser back to Coffer')
}

/** The whole sign-in: the callback opened; its answer (a 303 to the page asked for, or a refusal's page). */
export async function signInWithProvider(jar: Jar, base: string, returnTo = '/'): Promise<Response> {
  const reached = await startAndReachCallback(jar, base, returnTo)
  if ('refused' in reached) return reached.refused
  return jar.get(reached.callback)
}
