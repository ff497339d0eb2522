// The device pages of the authorization server met without its session cookie, as a browser that opens them
// first (or a scanner) does, its cookies when PUBLIC_URL is https but no proxy said so, and the headers of
// every answer, the provider's included (issue 23, items 3, 4 and 12). Every answer is a page with a 4xx and the page's headers, never a 500 or a stack trace on stderr;
// any error of the server reaches the JSON log.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { PAGE_CSP } from '../src/platform/web/web.ts'
import { captureLogs, ENGINES, startApp } from './support/harness.ts'

type Started = Awaited<ReturnType<typeof startApp>>

/** What reaches stderr while `run` runs: Koa prints an error there when nobody listens for it. */
async function stderrOf(run: () => Promise<void>): Promise<string> {
  const printed: string[] = []
  const original = console.error
  console.error = (...args: unknown[]) => {
    printed.push(args.map(String).join(' '))
  }
  try {
    await run()
  } finally {
    console.error = original
  }
  return printed.join('\n')
}

const textOf = (html: string) => html.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ')

for (const engine of ENGINES) {
  describe(`the device pages without a session [${engine}]`, () => {
    const logs = captureLogs()
    let c: Started
    before(async () => {
      c = await startApp(engine, { logger: logs.logger })
    })
    after(async () => {
      await c?.stop()
    })

    test('POST /oauth/device and every /oauth/device/{…} answer a 4xx page, never a 500', async () => {
      const requests = [
        { method: 'POST', url: '/oauth/device', payload: 'user_code=ABCD-EFGH' },
        { method: 'POST', url: '/oauth/device', payload: 'xsrf=forged&user_code=ABCD-EFGH' },
        { method: 'GET', url: '/oauth/device/auth' },
        { method: 'HEAD', url: '/oauth/device/auth' },
        { method: 'GET', url: '/oauth/device/callback' },
        { method: 'GET', url: '/oauth/device/abc' },
      ] as const
      const printed = await stderrOf(async () => {
        for (const request of requests) {
          const what = `${request.method} ${request.url}`
          const res = await c.app.inject({
            ...request,
            headers: 'payload' in request ? { 'content-type': 'application/x-www-form-urlencoded' } : {},
          })
          assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${what}: ${res.statusCode}`)
          assert.equal(res.headers['content-type'], 'text/html; charset=utf-8', what)
          assert.equal(res.headers['content-security-policy'], PAGE_CSP, what)
          assert.equal(res.headers['x-content-type-options'], 'nosniff', what)
          if (request.method === 'HEAD') continue
          // The code form again, which works: its xsrf is kept in a session the answer's cookie names.
          assert.match(res.body, /name="xsrf" value="[^"]+"/, what)
          assert.ok(
            [res.headers['set-cookie']].flat().some((cookie) => cookie?.startsWith('_session=')),
            `${what}: the session of the form's xsrf`,
          )
        }
      })
      assert.equal(printed, '', 'nothing printed outside the JSON log')
      assert.deepEqual(
        logs.lines().filter((line) => line.level >= 50),
        [],
        'no server error was logged',
      )
    })

    test('a form sent without its session is shown again, saying it expired; the form it shows works', async () => {
      const first = await c.app.inject({
        method: 'POST',
        url: '/oauth/device',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'xsrf=forged&user_code=ABCD-EFGH',
      })
      assert.equal(first.statusCode, 400)
      assert.match(textOf(first.body), /This form has expired\. Enter the code your device shows again\./)
      // Sent again with the session and xsrf it gave, the form is read: the code is unknown, and says so.
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(first.body)?.[1] as string
      const cookies = [first.headers['set-cookie']]
        .flat()
        .map((cookie) => cookie?.split(';')[0])
        .join('; ')
      const again = await c.app.inject({
        method: 'POST',
        url: '/oauth/device',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies },
        payload: new URLSearchParams({ xsrf, user_code: 'ABCD-EFGH' }).toString(),
      })
      assert.equal(again.statusCode, 400)
      assert.match(textOf(again.body), /That code is not right, or it expired\./)
    })
  })

  describe(`codes entered on the device page [${engine}]`, () => {
    let c: Started
    before(async () => {
      c = await startApp(engine)
    })
    after(async () => {
      await c?.stop()
    })

    /** The code form with its session: its xsrf and the cookies to send it with. */
    async function codeForm(remoteAddress: string) {
      const res = await c.app.inject({ method: 'GET', url: '/oauth/device', remoteAddress })
      return formOf(res)
    }
    function formOf(res: { body: string; headers: Record<string, unknown> }, cookies = '') {
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(res.body)?.[1] as string
      const set = [res.headers['set-cookie']]
        .flat()
        .filter((cookie): cookie is string => typeof cookie === 'string')
        .map((cookie) => cookie.split(';')[0])
      return { xsrf, cookies: set.length > 0 ? set.join('; ') : cookies }
    }
    const enter = (form: { xsrf: string; cookies: string }, remoteAddress: string, code = 'BCDF-GHJK') =>
      c.app.inject({
        method: 'POST',
        url: '/oauth/device',
        remoteAddress,
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: form.cookies },
        payload: new URLSearchParams({ xsrf: form.xsrf, user_code: code }).toString(),
      })

    test('each code entered gives the form a new xsrf: the last one no longer works', async () => {
      const form = await codeForm('10.1.0.1')
      const wrong = await enter(form, '10.1.0.1')
      assert.equal(wrong.statusCode, 400)
      assert.match(textOf(wrong.body), /That code is not right, or it expired\./)
      const next = formOf(wrong, form.cookies)
      assert.notEqual(next.xsrf, form.xsrf)
      const replayed = await enter(form, '10.1.0.1')
      assert.match(textOf(replayed.body), /This form has expired\./)
      assert.match(
        textOf((await enter(formOf(replayed, form.cookies), '10.1.0.1')).body),
        /That code is not right/,
      )
    })

    test('codes are limited per address and per session: 10, then a 429 page that says when', async () => {
      // One address, a new session each time: the address's limit.
      for (let i = 0; i < 10; i++) {
        const res = await enter(await codeForm('10.2.0.1'), '10.2.0.1')
        assert.equal(res.statusCode, 400, `code ${i + 1}`)
      }
      const limited = await enter(await codeForm('10.2.0.1'), '10.2.0.1')
      assert.equal(limited.statusCode, 429)
      assert.ok(Number(limited.headers['retry-after']) >= 1)
      assert.match(textOf(limited.body), /Too many codes were entered here\. Try again in \d+ minutes?/)
      assert.equal((await enter(await codeForm('10.2.0.2'), '10.2.0.2')).statusCode, 400, 'another address')

      // One session, a new address each time: the session's limit.
      let form = await codeForm('10.3.0.1')
      for (let i = 0; i < 10; i++) {
        const res = await enter(form, `10.3.${i}.1`)
        assert.equal(res.statusCode, 400, `code ${i + 1}`)
        form = formOf(res, form.cookies)
      }
      assert.equal((await enter(form, '10.3.99.1')).statusCode, 429)
    })
  })

  describe(`the headers of every answer [${engine}]`, () => {
    let c: Started
    before(async () => {
      c = await startApp(engine)
    })
    after(async () => {
      await c?.stop()
    })

    test("the device flow's form that submits itself has the pages' headers, its script allowed by its hash", async () => {
      const res = await c.app.inject({ method: 'GET', url: '/oauth/device?user_code=ABCD-EFGH' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(res.headers['x-frame-options'], 'DENY')
      assert.equal(res.headers['referrer-policy'], 'no-referrer')
      const csp = String(res.headers['content-security-policy'])
      assert.match(csp, /default-src 'none'/)
      assert.match(csp, /frame-ancestors 'none'/)
      assert.match(csp, /form-action 'self'/)
      const script = /<script>([\s\S]*?)<\/script>/.exec(res.body)?.[1] as string
      const digest = createHash('sha256').update(script).digest('base64')
      assert.match(csp, new RegExp(`script-src 'self' 'sha256-${digest.replace(/[+/=]/g, '\\$&')}'`))
    })

    test('JSON, errors, health checks and the provider answer with nosniff, no framing and a CSP of none', async () => {
      for (const [method, url] of [
        ['GET', '/api/v1/'],
        ['GET', '/api/v1/files'],
        ['GET', '/api/v1/nope'],
        ['GET', '/healthz'],
        ['GET', '/readyz'],
        ['PUT', '/blob/'],
        ['GET', '/assets/nope.js'],
        ['GET', '/.well-known/oauth-authorization-server'],
        ['POST', '/oauth/token'],
      ] as const) {
        const res = await c.app.inject({ method, url })
        const what = `${method} ${url} (${res.statusCode})`
        assert.equal(res.headers['x-content-type-options'], 'nosniff', what)
        assert.equal(res.headers['x-frame-options'], 'DENY', what)
        assert.match(
          String(res.headers['content-security-policy']),
          /^default-src 'none';.*frame-ancestors 'none'/,
          what,
        )
      }
      // A page keeps its own policy.
      const page = await c.app.inject({ method: 'GET', url: '/account/sign-in' })
      assert.equal(page.headers['content-security-policy'], PAGE_CSP)
    })
  })

  describe(`the authorization server's cookies behind https [${engine}]`, () => {
    let c: Started
    before(async () => {
      c = await startApp(engine, { env: { PUBLIC_URL: 'https://files.example.org' } })
    })
    after(async () => {
      await c?.stop()
    })

    test('with an https PUBLIC_URL its cookies are Secure, though no proxy said the request was https', async () => {
      const res = await c.app.inject({ method: 'GET', url: '/oauth/device' })
      assert.equal(res.statusCode, 200)
      const cookies = [res.headers['set-cookie']].flat().filter((cookie) => cookie !== undefined)
      assert.ok(
        cookies.some((cookie) => cookie.startsWith('_session=')),
        cookies.join('\n'),
      )
      for (const cookie of cookies) assert.match(cookie, /; secure/i, cookie)
    })
  })
}
