// The check behind the CSRF token (issue 23, item 10): a request that changes something and carries the
// browser's cookies must come from a page of this server, by Sec-Fetch-Site, or by Origin where a browser sends
// no Sec-Fetch-Site. A sibling site's form, token and all, changes nothing; the API's calls, with no cookies,
// pass from anywhere.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { ALL_SCOPES } from '../src/platform/auth/scopes.ts'
import { call, describeEachEngine } from './support/harness.ts'
import { newOwner, WebClient } from './support/web-client.ts'

/** An account signed in through its pages, with an API key beside. */
async function owner(app: App) {
  const { id, email } = await newOwner(app)
  const { secret } = await app.services.apiKeys.create({
    accountId: id,
    name: 'check',
    scopes: [...ALL_SCOPES],
  })
  return { id, token: secret, web: await WebClient.signedIn(app, email) }
}

const textOf = (html: string) => html.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ')

describeEachEngine(
  'forms from another site',
  (ctx) => {
    test('a form sent from another site is a 403 page that creates nothing, even with a good token', async () => {
      const o = await owner(ctx().app)
      const token = await o.web.csrfToken('/folders/new')
      const form = (name: string) => new URLSearchParams({ name, _csrf: token }).toString()
      const post = (name: string, headers: Record<string, string>) =>
        o.web.send('POST', '/folders', form(name), {
          accept: 'text/html',
          'content-type': 'application/x-www-form-urlencoded',
          ...headers,
        })
      for (const [name, headers] of [
        ['sibling', { 'sec-fetch-site': 'same-site', origin: 'https://other.example.org' }],
        ['cross', { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }],
        ['old browser', { origin: 'https://other.example.org' }],
        ['null origin', { origin: 'null' }],
      ] as const) {
        const res = await post(name, headers)
        assert.equal(res.statusCode, 403, name)
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8', name)
        assert.match(textOf(res.body), /This form came from another site/, name)
      }
      const listed = await call(ctx().app, 'GET', '/api/v1/folders', { token: o.token })
      assert.deepEqual(listed.body.data, [], 'no folder was made')

      // From its own pages, as browsers say it, or with neither header (a script with the cookies).
      for (const [name, headers] of [
        ['same origin', { 'sec-fetch-site': 'same-origin', origin: 'https://files.example.org' }],
        ['by origin', { origin: 'https://files.example.org' }],
        ['no headers', {}],
      ] as const) {
        assert.equal((await post(name, headers)).statusCode, 303, name)
      }
    })

    test('the API, which carries no cookies, answers calls from any origin as before', async () => {
      const o = await owner(ctx().app)
      const res = await ctx().app.inject({
        method: 'POST',
        url: '/api/v1/folders',
        headers: {
          authorization: `Bearer ${o.token}`,
          'content-type': 'application/json',
          origin: 'https://elsewhere.example',
          'sec-fetch-site': 'cross-site',
        },
        payload: { name: 'From a script' },
      })
      assert.equal(res.statusCode, 201, res.body)
    })
  },
  { env: { PUBLIC_URL: 'https://files.example.org' } },
)
