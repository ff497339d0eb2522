// The authorization server as a third-party client meets it: oauth4webapi discovers both metadata documents,
// registers a native client, and sends Chromium through sign-in and consent (granting a subset of scopes);
// the token works against the API with exactly those scopes, refreshes, dies with its grant when an old
// refresh token is replayed, and on revocation. The device flow is driven through its user-code page. Then
// the refusals, each with its exact error.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import * as oauth from 'oauth4webapi'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { ALL_SCOPES } from '../src/platform/auth/scopes.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { OauthRecordsRepository } from '../src/resources/oauth/oauth-records.repository.ts'
import {
  assertAccessible,
  browserMissing,
  checkEveryLook,
  launchBrowser,
  newContext,
  screenshot,
} from './support/browser.ts'
import { ENGINES } from './support/harness.ts'
import {
  apiStatus,
  authorizationUrl,
  consent,
  exchange,
  followInBrowser,
  INSECURE,
  type OauthClient,
  REDIRECT_URI,
  register,
  signInIfAsked,
  tokenError,
} from './support/oauth.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const PASSWORD = 'correct horse battery staple'

for (const engine of ENGINES) {
  describe(`OAuth authorization server [${engine}]`, { skip: browserMissing }, () => {
    let ctx: ListeningContext
    let browser: Browser
    let context: BrowserContext
    let page: Page
    let email: string
    let accountId: string

    before(async () => {
      ctx = await startListening(engine)
      email = `owner-${engine}@example.com`
      accountId = (await ctx.app.services.accounts.create({ email, password: PASSWORD })).id
      browser = await launchBrowser()
      context = await newContext(browser)
      page = await context.newPage()
    })
    after(async () => {
      await browser?.close()
      await ctx?.stop()
    })

    /** A full authorization through the browser, signed in already or not; resolves with the tokens. */
    async function authorize(oc: OauthClient, scopes = ALL_SCOPES, grant = scopes) {
      const authorization = await authorizationUrl(oc, scopes)
      const back = await followInBrowser(page, authorization.url, async (p) => {
        await signInIfAsked(p, email, PASSWORD)
        await consent(p, grant)
      })
      return exchange(oc, authorization, back)
    }

    test('both metadata documents carry what their RFCs require, and the index links them', async () => {
      const as = await fetch(`${ctx.base}/.well-known/oauth-authorization-server`)
      assert.equal(as.status, 200)
      const metadata = await as.json()
      assert.equal(metadata.issuer, ctx.base)
      for (const endpoint of [
        'authorization',
        'token',
        'revocation',
        'registration',
        'device_authorization',
      ]) {
        assert.ok(metadata[`${endpoint}_endpoint`]?.startsWith(`${ctx.base}/oauth/`), endpoint)
      }
      assert.deepEqual(metadata.response_types_supported, ['code'])
      assert.deepEqual(metadata.code_challenge_methods_supported, ['S256'])
      assert.deepEqual(metadata.scopes_supported, ALL_SCOPES)
      assert.deepEqual(metadata.token_endpoint_auth_methods_supported, ['none'])
      assert.ok(metadata.grant_types_supported.includes('urn:ietf:params:oauth:grant-type:device_code'))

      const resource = await oauth.processResourceDiscoveryResponse(
        new URL(`${ctx.base}/api/v1`),
        await oauth.resourceDiscoveryRequest(new URL(`${ctx.base}/api/v1`), INSECURE),
      )
      assert.equal(resource.resource, `${ctx.base}/api/v1`)
      assert.deepEqual(resource.authorization_servers, [ctx.base])
      assert.deepEqual(resource.scopes_supported, ALL_SCOPES)

      const index = (await ctx.app.inject({ url: '/api/v1/' })).json()
      assert.ok(index.authentication.schemes.includes('bearer-oauth-token'))
      assert.equal(index.links.oauthAuthorizationServer, `${ctx.base}/.well-known/oauth-authorization-server`)

      const refused = await fetch(`${ctx.base}/api/v1/files`)
      assert.equal(refused.status, 401)
      assert.equal(
        refused.headers.get('www-authenticate'),
        `Bearer realm="coffer", resource_metadata="${ctx.base}/.well-known/oauth-protected-resource/api/v1"`,
      )
    })

    test('code flow: sign-in, consent to a subset, API call, refresh, replay kills the grant', async () => {
      const oc = await register(ctx.base)
      const authorization = await authorizationUrl(oc, ['files:read', 'files:write', 'folders:read'])
      const back = await followInBrowser(page, authorization.url, async (p) => {
        assert.match(new URL(p.url()).pathname, /^\/account\/sign-in$/)
        await screenshot(p, 'oauth-sign-in')
        await signInIfAsked(p, email, PASSWORD)
        await p.waitForURL(/\/oauth\/interaction\//)
        await checkEveryLook(p, 'oauth-consent', engine)
        assert.match(await p.locator('h1').innerText(), /Coffer test CLI wants to use your Coffer account/)
        await consent(p, ['files:read', 'folders:read'])
      })
      assert.equal(back.searchParams.get('state'), authorization.state)
      const tokens = await exchange(oc, authorization, back)
      assert.equal(tokens.scope, 'files:read folders:read')
      assert.equal(tokens.token_type.toLowerCase(), 'bearer')
      assert.ok(tokens.refresh_token)
      assert.ok((tokens.expires_in ?? 0) <= 600)

      assert.equal(await apiStatus(ctx.base, tokens.access_token), 200)
      const write = await fetch(`${ctx.base}/api/v1/folders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Nope' }),
      })
      assert.equal(write.status, 403)
      assert.match(
        write.headers.get('www-authenticate') ?? '',
        /error="insufficient_scope", scope="folders:write"/,
      )

      const refreshed = await oauth.processRefreshTokenResponse(
        oc.as,
        oc.client,
        await oauth.refreshTokenGrantRequest(oc.as, oc.client, oauth.None(), tokens.refresh_token, {
          ...INSECURE,
          additionalParameters: { resource: oc.resource },
        }),
      )
      assert.notEqual(refreshed.refresh_token, tokens.refresh_token)
      assert.equal(await apiStatus(ctx.base, refreshed.access_token), 200)

      // The old refresh token again: refused, and the whole grant dies with it.
      const replay = await tokenError(
        oauth
          .refreshTokenGrantRequest(oc.as, oc.client, oauth.None(), tokens.refresh_token, INSECURE)
          .then((response) => oauth.processRefreshTokenResponse(oc.as, oc.client, response)),
      )
      assert.equal(replay, 'invalid_grant')
      assert.equal(await apiStatus(ctx.base, refreshed.access_token), 401)
      assert.equal(await apiStatus(ctx.base, tokens.access_token), 401)
    })

    test('revocation (RFC 7009) ends the token at once; revoking the app on the account page ends all', async () => {
      const oc = await register(ctx.base, { client_name: 'Revocable app' })
      const tokens = await authorize(oc, ['files:read'])
      assert.equal(await apiStatus(ctx.base, tokens.access_token), 200)
      const revoked = await oauth.revocationRequest(
        oc.as,
        oc.client,
        oauth.None(),
        tokens.access_token,
        INSECURE,
      )
      await oauth.processRevocationResponse(revoked)
      assert.equal(await apiStatus(ctx.base, tokens.access_token), 401)

      const again = await authorize(oc, ['files:read'])
      assert.equal(await apiStatus(ctx.base, again.access_token), 200)
      await page.goto(`${ctx.base}/account/apps`)
      await assertAccessible(page, 'connected apps page')
      await screenshot(page, 'account-apps')
      const item = page.locator('li.item', { hasText: 'Revocable app' })
      assert.match(await item.innerText(), /files:read/)
      await item.getByRole('button', { name: /Revoke access/ }).click()
      await page.waitForURL(/\/account\/apps$/)
      assert.equal(await page.locator('li.item', { hasText: 'Revocable app' }).count(), 0)
      assert.equal(await apiStatus(ctx.base, again.access_token), 401)
      const refresh = await tokenError(
        oauth
          .refreshTokenGrantRequest(oc.as, oc.client, oauth.None(), again.refresh_token as string, INSECURE)
          .then((response) => oauth.processRefreshTokenResponse(oc.as, oc.client, response)),
      )
      assert.equal(refresh, 'invalid_grant')
    })

    test('a token kept in memory ends with its grant when another process deletes it', async () => {
      const oc = await register(ctx.base, { client_name: 'Cached app' })
      const tokens = await authorize(oc, ['files:read'])
      let lookups = 0
      const read = ctx.db.read
      ctx.db.read = (query, name) => {
        if (name === 'oauth_access_token') lookups += 1
        return read(query, name)
      }
      try {
        // The first use records the grant's use (a write, which SQLite counts as a change), then the token
        // is served from memory.
        for (let i = 0; i < 3; i++) assert.equal(await apiStatus(ctx.base, tokens.access_token), 200)
        await sleep(50)
        assert.equal(await apiStatus(ctx.base, tokens.access_token), 200)
        const before = lookups
        for (let i = 0; i < 5; i++) assert.equal(await apiStatus(ctx.base, tokens.access_token), 200)
        assert.equal(lookups, before, 'a token in use is not looked up again')
      } finally {
        ctx.db.read = read
      }

      // Another process (connections of its own) deletes the grant, as a replayed refresh token or the
      // connected-apps page does there.
      const other = openDatabase({ ...ctx.config, poolSize: 1 })
      try {
        const records = new OauthRecordsRepository(other)
        const grant = (await records.grantsOf(accountId)).find((g) => g.clientId === oc.client.client_id)
        assert.ok(grant)
        await records.deleteGrant(grant.grantId)
      } finally {
        await other.close()
      }
      // SQLite: one file, so the next request's read sees the commit; PostgreSQL: the notification, within
      // moments of the commit.
      const deadline = Date.now() + (ctx.engine === 'sqlite' ? 0 : 1000)
      while ((await apiStatus(ctx.base, tokens.access_token)) === 200) {
        assert.ok(Date.now() < deadline, 'the deleted grant was not noticed in time')
        await sleep(5)
      }
      assert.equal(await apiStatus(ctx.base, tokens.access_token), 401)
    })

    test('device flow: the user enters the code on its page, consents, and the tool gets its token', async () => {
      const oc = await register(ctx.base, { client_name: 'Coffer device tool' })
      const device = await oauth.processDeviceAuthorizationResponse(
        oc.as,
        oc.client,
        await oauth.deviceAuthorizationRequest(
          oc.as,
          oc.client,
          oauth.None(),
          {
            scope: 'files:read',
            resource: oc.resource,
          },
          INSECURE,
        ),
      )
      const pending = await tokenError(
        oauth
          .deviceCodeGrantRequest(oc.as, oc.client, oauth.None(), device.device_code, INSECURE)
          .then((response) => oauth.processDeviceCodeResponse(oc.as, oc.client, response)),
      )
      assert.equal(pending, 'authorization_pending')

      await page.goto(device.verification_uri)
      await checkEveryLook(page, 'oauth-device-code', engine)
      await page.getByLabel('Code').fill(device.user_code)
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.getByText(device.user_code).waitFor()
      await checkEveryLook(page, 'oauth-device-confirm', engine)
      await page.getByRole('button', { name: 'Continue' }).click()
      await signInIfAsked(page, email, PASSWORD)
      await consent(page, ['files:read'])
      await page.getByRole('heading', { name: 'All set' }).waitFor()
      await checkEveryLook(page, 'oauth-device-done', engine)

      const tokens = await oauth.processDeviceCodeResponse(
        oc.as,
        oc.client,
        await oauth.deviceCodeGrantRequest(oc.as, oc.client, oauth.None(), device.device_code, INSECURE),
      )
      assert.equal(tokens.scope, 'files:read')
      assert.equal(await apiStatus(ctx.base, tokens.access_token), 200)
    })

    test('without a resource parameter, the token is for the API base address all the same', async () => {
      const oc = await register(ctx.base)
      const authorization = await authorizationUrl(oc, ['files:read'], { resource: null })
      const back = await followInBrowser(page, authorization.url, async (p) => {
        await signInIfAsked(p, email, PASSWORD)
        await consent(p, ['files:read'])
      })
      const params = oauth.validateAuthResponse(oc.as, oc.client, back, authorization.state)
      const tokens = await oauth.processAuthorizationCodeResponse(
        oc.as,
        oc.client,
        await oauth.authorizationCodeGrantRequest(
          oc.as,
          oc.client,
          oauth.None(),
          params,
          REDIRECT_URI,
          authorization.verifier,
          INSECURE,
        ),
      )
      assert.equal(await apiStatus(ctx.base, tokens.access_token), 200)
      const principal = await ctx.app.services.accessTokens.authenticate(tokens.access_token)
      assert.deepEqual([...(principal?.scopes ?? [])], ['files:read'])
    })

    test('denying sends the application access_denied; allowing nothing is asked again', async () => {
      const oc = await register(ctx.base, { client_name: 'Denied app' })
      const authorization = await authorizationUrl(oc, ['files:read', 'files:write'])
      const back = await followInBrowser(page, authorization.url, async (p) => {
        await signInIfAsked(p, email, PASSWORD)
        await p.waitForURL(/\/oauth\/interaction\//)
        for (const box of await p.locator('input[name="scopes"]').all()) await box.uncheck()
        await p.getByRole('button', { name: 'Allow' }).click()
        await p.getByText('Allow at least one, or deny the request.').waitFor()
        const boxes = p.locator('input[name="scopes"]')
        assert.equal(await boxes.count(), 2)
        for (const box of await boxes.all()) {
          assert.equal(await box.getAttribute('aria-invalid'), 'true')
          assert.equal(await box.isChecked(), false, 'shown again as sent')
        }
        assert.equal(await p.evaluate(() => document.activeElement?.getAttribute('name')), 'scopes')
        await checkEveryLook(p, 'oauth-consent-refused', engine)
        await p.getByRole('button', { name: 'Deny' }).click()
      })
      assert.equal(back.searchParams.get('error'), 'access_denied')
      assert.equal(back.searchParams.get('state'), authorization.state)
      assert.equal(back.searchParams.get('code'), null)
    })

    test('a consent form other than the page sends is asked again (400, the scopes marked), then works', async () => {
      const oc = await register(ctx.base, { client_name: 'Odd form app' })
      const authorization = await authorizationUrl(oc, ['files:read', 'files:write'])
      const back = await followInBrowser(page, authorization.url, async (p) => {
        await signInIfAsked(p, email, PASSWORD)
        await p.waitForURL(/\/oauth\/interaction\//)
        const action = (await p.locator('form').first().getAttribute('action')) as string
        const token = await p.locator('input[name="_csrf"]').inputValue()
        for (const scopes of ['admin:everything', 'files:read\u0085']) {
          const refused = await p.request.post(`${ctx.base}${action}`, {
            form: { _csrf: token, scopes },
            maxRedirects: 0,
          })
          assert.equal(refused.status(), 400, scopes)
          const body = await refused.text()
          assert.match(body, /name="scopes" value="files:write"[^>]*aria-invalid="true"/)
          assert.match(body, /id="field-scopes-error">Choose from the scopes listed\./)
        }
        const extra = await p.request.post(`${ctx.base}${action}`, {
          form: { _csrf: token, scopes: 'files:read', grant: 'everything' },
          maxRedirects: 0,
        })
        assert.equal(extra.status(), 400)
        assert.match(await extra.text(), /id="form-error">This form has no field named/)
        const forged = await p.request.post(`${ctx.base}${action}`, {
          form: { _csrf: 'forged', scopes: 'files:read' },
          maxRedirects: 0,
        })
        assert.equal(forged.status(), 403)
        await consent(p, ['files:read'])
      })
      const tokens = await exchange(oc, authorization, back)
      assert.equal(tokens.scope, 'files:read')
    })

    test('refusals of the authorization endpoint, each with its error', async () => {
      const oc = await register(ctx.base)
      const redirected = async (extra: Record<string, string | null>) => {
        const { url } = await authorizationUrl(oc, ['files:read'], extra)
        const response = await fetch(url, { redirect: 'manual' })
        return response
      }
      const errorOf = async (extra: Record<string, string | null>) => {
        const response = await redirected(extra)
        assert.equal(response.status, 303, JSON.stringify(extra))
        const location = new URL(response.headers.get('location') ?? '')
        assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI)
        return location.searchParams.get('error')
      }
      // Without PKCE, with `plain`, for another resource.
      assert.equal(await errorOf({ code_challenge: null, code_challenge_method: null }), 'invalid_request')
      assert.equal(await errorOf({ code_challenge_method: 'plain' }), 'invalid_request')
      assert.equal(await errorOf({ resource: 'https://elsewhere.example/api' }), 'invalid_target')

      // A redirect URI not registered, or an unknown client: never redirected, an error page instead.
      const strays: Record<string, string>[] = [
        { redirect_uri: 'http://127.0.0.1:47893/elsewhere' },
        { client_id: 'no-such-client' },
      ]
      for (const extra of strays) {
        const response = await redirected(extra)
        assert.equal(response.status, 400, JSON.stringify(extra))
        assert.equal(response.headers.get('location'), null)
        assert.match(await response.text(), /This sign-in cannot go on/)
      }

      // A loopback redirect may come back on another port (RFC 8252 §7.3), but nowhere else.
      const otherPort = await redirected({ redirect_uri: 'http://127.0.0.1:50123/callback' })
      assert.equal(otherPort.status, 303)
      assert.match(otherPort.headers.get('location') ?? '', /^\/oauth\/interaction\//)

      // A client registered for one scope may not ask for another.
      const narrow = await register(ctx.base, { scope: 'files:read' })
      const { url } = await authorizationUrl(narrow, ['files:write'])
      const response = await fetch(url, { redirect: 'manual' })
      assert.equal(new URL(response.headers.get('location') ?? '').searchParams.get('error'), 'invalid_scope')
    })

    test('refusals of the token endpoint: wrong verifier, code replay, wrong resource, expired code', async () => {
      const oc = await register(ctx.base)
      const codeFor = async () => {
        const authorization = await authorizationUrl(oc, ['files:read'])
        const back = await followInBrowser(page, authorization.url, (p) => consent(p, ['files:read']))
        return { authorization, back }
      }
      const exchangeWith = (params: URLSearchParams, verifier: string, resource = oc.resource) =>
        oauth
          .authorizationCodeGrantRequest(oc.as, oc.client, oauth.None(), params, REDIRECT_URI, verifier, {
            ...INSECURE,
            additionalParameters: { resource },
          })
          .then((response) => oauth.processAuthorizationCodeResponse(oc.as, oc.client, response))

      let { authorization, back } = await codeFor()
      let params = oauth.validateAuthResponse(oc.as, oc.client, back, authorization.state)
      assert.equal(
        await tokenError(exchangeWith(params, oauth.generateRandomCodeVerifier())),
        'invalid_grant',
      )

      ;({ authorization, back } = await codeFor())
      params = oauth.validateAuthResponse(oc.as, oc.client, back, authorization.state)
      assert.equal(
        await tokenError(exchangeWith(params, authorization.verifier, 'https://elsewhere.example/api')),
        'invalid_target',
      )

      // Two redemptions of one code at once: one succeeds, and the grant is revoked with its token.
      ;({ authorization, back } = await codeFor())
      params = oauth.validateAuthResponse(oc.as, oc.client, back, authorization.state)
      const both = await Promise.allSettled([
        exchangeWith(params, authorization.verifier),
        exchangeWith(params, authorization.verifier),
      ])
      const won = both.filter((r) => r.status === 'fulfilled')
      assert.equal(won.length, 1, 'exactly one redemption succeeds')
      const lost = both.find((r) => r.status === 'rejected') as PromiseRejectedResult
      assert.ok(lost.reason instanceof oauth.ResponseBodyError)
      assert.equal(lost.reason.error, 'invalid_grant')
      const winner = (won[0] as PromiseFulfilledResult<oauth.TokenEndpointResponse>).value
      assert.equal(
        await apiStatus(ctx.base, winner.access_token),
        401,
        "the winner's token dies with the grant",
      )
      // Once more, after the fact: still refused.
      assert.equal(await tokenError(exchangeWith(params, authorization.verifier)), 'invalid_grant')

      // An expired code (its row aged past its expiry).
      ;({ authorization, back } = await codeFor())
      params = oauth.validateAuthResponse(oc.as, oc.client, back, authorization.state)
      await ctx.db.kysely
        .updateTable('oauth_records')
        .set({ expires_at: Date.now() - 1000 })
        .where('model', '=', 'AuthorizationCode')
        .execute()
      assert.equal(await tokenError(exchangeWith(params, authorization.verifier)), 'invalid_grant')
    })

    test('the API refuses a token for another audience, and every token of a disabled account', async () => {
      const oc = await register(ctx.base)
      const tokens = await authorize(oc, ['files:read'])
      assert.equal(await apiStatus(ctx.base, tokens.access_token), 200)
      const records = ctx.app.services.accessTokens
      assert.ok(await records.authenticate(tokens.access_token))
      // The same token, its audience changed behind the library's back: refused.
      const row = await ctx.db.kysely
        .selectFrom('oauth_records')
        .select(['id_hash', 'payload'])
        .where('model', '=', 'AccessToken')
        .orderBy('expires_at', 'desc')
        .executeTakeFirstOrThrow()
      const payload = JSON.parse(row.payload)
      await ctx.db.kysely
        .updateTable('oauth_records')
        .set({ payload: JSON.stringify({ ...payload, aud: 'https://elsewhere.example/api' }) })
        .where('model', '=', 'AccessToken')
        .where('id_hash', '=', row.id_hash)
        .execute()
      assert.equal(await apiStatus(ctx.base, tokens.access_token), 401)

      const other = await authorize(oc, ['files:read'])
      assert.equal(await apiStatus(ctx.base, other.access_token), 200)
      await ctx.app.services.accounts.disable(email)
      assert.equal(await apiStatus(ctx.base, other.access_token), 401)
      await ctx.app.services.accounts.enable(email)
    })

    test('no secret of the flow is stored as given', async () => {
      const rows = await ctx.db.kysely.selectFrom('oauth_records').select(['model', 'payload']).execute()
      assert.ok(rows.length > 0)
      for (const row of rows) {
        const payload = JSON.parse(row.payload)
        assert.equal(payload.jti, undefined, `${row.model} keeps no id`)
        assert.equal(payload.userCode, undefined, `${row.model} keeps no user code`)
      }
    })
  })
}
