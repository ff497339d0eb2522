// Single sign-on against a real OpenID Connect provider (oidc-provider on its own port, test/support/
// oidc-test-provider.ts), over HTTP with a cookie jar, on both engines: an existing account signs in by its
// verified email; SIGNUP=open makes a member for a new address at an allowed domain and refuses any other; an
// unverified email, a disabled account, a changed state, a replayed code and a provider that is down each end on
// a page that says so, with no secret in it. SSO_ONLY: the password form is gone, a member's password does not
// sign in, an admin's does (the break-glass), and invitations-only refuses a new address.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildApp } from '../src/app.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { ServerSecrets } from '../src/platform/db/server-secrets.ts'
import { FLOW_SECONDS, SsoFlows } from '../src/resources/sso/sso-flow.ts'
import { captureLogs, ENGINES } from './support/harness.ts'
import type { TestProvider } from './support/oidc-test-provider.ts'
import {
  csrfOf,
  Jar,
  type Listening,
  signInWithProvider,
  startAndReachCallback,
  startWithProvider,
} from './support/sso-flow.ts'
import { OWNER_PASSWORD } from './support/web-client.ts'

/** The page's words, without its markup. */
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/\s+/g, ' ')

let counter = 0
const address = (domain = 'example.com') => `person-${process.pid}-${++counter}@${domain}`

/** That the page shows no secret of the flow: the client's secret, the code, the state. */
function assertNoSecrets(body: string, provider: TestProvider, callback?: string) {
  assert.ok(!body.includes(provider.clientSecret), 'the client secret is not on the page')
  if (callback) {
    const params = new URL(callback).searchParams
    for (const name of ['code', 'state']) {
      const value = params.get(name)
      if (value) assert.ok(!body.includes(value), `the ${name} is not on the page`)
    }
  }
  assert.ok(!/\bat .+\.ts:\d+/.test(body), 'no stack trace')
}

for (const engine of ENGINES) {
  describe(`single sign-on, SIGNUP=open for example.com [${engine}]`, { timeout: 120_000 }, () => {
    let ctx: Listening
    before(async () => {
      ctx = await startWithProvider(engine, { SIGNUP: 'open', SIGNUP_EMAIL_DOMAINS: 'example.com' })
    })
    after(async () => {
      await ctx?.stop()
    })

    test('the sign-in and sign-up pages carry the button, beside the password form', async () => {
      const jar = new Jar()
      for (const path of ['/account/sign-in', '/account/sign-up']) {
        const body = await (await jar.get(`${ctx.base}${path}`)).text()
        assert.match(body, /<form method="post" action="\/account\/sso\/start"/)
        assert.match(text(body), /Sign in with Test ID/)
        assert.match(body, /type="password"/, `${path} keeps its password form`)
      }
    })

    test('an existing account signs in by its verified email, back to the page it asked for', async () => {
      const email = address()
      const account = await ctx.app.services.accounts.create({ email, password: OWNER_PASSWORD })
      ctx.provider.signInAs(ctx.provider.addUser({ email: email.toUpperCase(), email_verified: true }))
      const jar = new Jar()
      const answer = await signInWithProvider(jar, ctx.base, '/account/keys')
      assert.equal(answer.status, 303, await answer.text())
      assert.equal(answer.headers.get('location'), '/account/keys')
      assert.ok(jar.cookies.has('coffer_session'), 'a session cookie is set')
      assert.ok(!jar.cookies.has('coffer_sso'), 'the flow cookie is cleared')
      const keys = await jar.get(`${ctx.base}/account/keys`)
      assert.equal(keys.status, 200)
      assert.ok((await keys.text()).includes(email), 'signed in as the account')
      const list = await ctx.app.services.accounts.list()
      assert.equal(list.filter((each) => each.email === email).length, 1, 'no second account')
      const row = await ctx.db.kysely
        .selectFrom('accounts')
        .select('last_sign_in_at')
        .where('id', '=', account.id)
        .executeTakeFirstOrThrow()
      assert.ok(row.last_sign_in_at !== null, 'the sign-in is recorded')
    })

    test('a new address at an allowed domain gets an account, a member, signed in', async () => {
      const email = address()
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      const jar = new Jar()
      const answer = await signInWithProvider(jar, ctx.base)
      assert.equal(answer.status, 303, await answer.text())
      assert.equal(answer.headers.get('location'), '/')
      const made = await ctx.app.services.accounts.findByEmail(email)
      assert.ok(made, 'the account is made')
      assert.equal(made.role, 'member')
      assert.equal((await jar.get(`${ctx.base}/account/keys`)).status, 200)
    })

    test('an address at another domain is refused, and no account is made', async () => {
      const email = address('elsewhere.org')
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      const jar = new Jar()
      const answer = await signInWithProvider(jar, ctx.base)
      const body = await answer.text()
      assert.equal(answer.status, 403)
      assert.match(text(body), /No account for this address/)
      assert.match(text(body), /Accounts on this server are for addresses at example\.com/)
      assert.match(body, /href="\/account\/sign-in"/, 'a way back')
      assert.equal(await ctx.app.services.accounts.findByEmail(email), undefined)
      assert.ok(!jar.cookies.has('coffer_session'))
      assertNoSecrets(body, ctx.provider)
    })

    test('an email the provider has not verified is refused, even an existing account’s', async () => {
      const email = address()
      await ctx.app.services.accounts.create({ email, password: OWNER_PASSWORD })
      for (const user of [{ email, email_verified: false }, { email }, {}]) {
        ctx.provider.signInAs(ctx.provider.addUser(user))
        const jar = new Jar()
        const answer = await signInWithProvider(jar, ctx.base)
        const body = await answer.text()
        assert.equal(answer.status, 403, JSON.stringify(user))
        assert.match(text(body), /Your email address is not verified/)
        assert.ok(!jar.cookies.has('coffer_session'))
      }
      const unknown = address()
      ctx.provider.signInAs(ctx.provider.addUser({ email: unknown, email_verified: false }))
      assert.equal((await signInWithProvider(new Jar(), ctx.base)).status, 403)
      assert.equal(await ctx.app.services.accounts.findByEmail(unknown), undefined, 'no account is made')
    })

    test('the provider’s subject keeps finding its account after the email changes there', async () => {
      const first = address()
      const sub = ctx.provider.addUser({ email: first, email_verified: true })
      ctx.provider.signInAs(sub)
      assert.equal((await signInWithProvider(new Jar(), ctx.base)).status, 303)
      const account = await ctx.app.services.accounts.findByEmail(first)
      assert.ok(account)
      const renamed = address()
      ctx.provider.addUser({ email: renamed, email_verified: true }, sub)
      const jar = new Jar()
      assert.equal((await signInWithProvider(jar, ctx.base)).status, 303)
      assert.ok(
        (await (await jar.get(`${ctx.base}/account/keys`)).text()).includes(first),
        'the same account',
      )
      assert.equal(await ctx.app.services.accounts.findByEmail(renamed), undefined, 'no second account')
    })

    test('an address the provider gave to someone else does not open its account', async () => {
      const email = address()
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      assert.equal((await signInWithProvider(new Jar(), ctx.base)).status, 303)
      // Another person at the provider (another subject) now has the address.
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      const jar = new Jar()
      const answer = await signInWithProvider(jar, ctx.base)
      assert.equal(answer.status, 403)
      assert.match(text(await answer.text()), /This account is someone else’s/)
      assert.ok(!jar.cookies.has('coffer_session'))
    })

    test('a disabled account is refused', async () => {
      const email = address()
      await ctx.app.services.accounts.create({ email, password: OWNER_PASSWORD })
      await ctx.app.services.accounts.disable(email)
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      const jar = new Jar()
      const answer = await signInWithProvider(jar, ctx.base)
      assert.equal(answer.status, 403)
      assert.match(text(await answer.text()), /This account is disabled/)
      assert.ok(!jar.cookies.has('coffer_session'))
    })

    test('a changed state, a changed or missing flow cookie, or another browser’s answer signs no one in', async () => {
      const email = address()
      await ctx.app.services.accounts.create({ email, password: OWNER_PASSWORD })
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))

      const tampered = async (change: (jar: Jar, callback: URL) => void) => {
        const jar = new Jar()
        const reached = await startAndReachCallback(jar, ctx.base)
        assert.ok('callback' in reached)
        const callback = new URL(reached.callback)
        change(jar, callback)
        const answer = await jar.get(callback.href)
        const body = await answer.text()
        assert.equal(answer.status, 400)
        assert.match(text(body), /This sign-in has expired/)
        assert.match(body, /href="\/account\/sign-in"/)
        assert.ok(!jar.cookies.has('coffer_session'), 'no session')
        assertNoSecrets(body, ctx.provider, reached.callback)
      }
      await tampered((_jar, callback) => {
        const state = callback.searchParams.get('state') ?? ''
        callback.searchParams.set('state', `${state.slice(0, -2)}xy`)
      })
      await tampered((jar) => {
        const sealed = jar.cookies.get('coffer_sso') ?? ''
        const flipped = sealed.at(-3) === 'A' ? 'B' : 'A'
        jar.cookies.set('coffer_sso', `${sealed.slice(0, -3)}${flipped}${sealed.slice(-2)}`)
      })
      await tampered((jar) => jar.cookies.delete('coffer_sso'))
      // Login CSRF: an attacker's own answer, sent to a victim's browser that started a sign-in of its own.
      const attacker = new Jar()
      const theirs = await startAndReachCallback(attacker, ctx.base)
      assert.ok('callback' in theirs)
      await tampered((_jar, callback) => {
        callback.search = new URL(theirs.callback).search
      })
    })

    test('a sign-in started at one process of a fleet finishes at another', async () => {
      // A second process on the same database (and blob store), as behind a load balancer.
      const db = openDatabase({ ...ctx.config, poolSize: 2 })
      const other = await buildApp({ config: ctx.config, db, blobs: ctx.blobs, logger: false })
      try {
        await other.ready()
        const email = address()
        ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
        const jar = new Jar()
        const reached = await startAndReachCallback(jar, ctx.base, '/account/keys')
        assert.ok('callback' in reached)
        const callback = new URL(reached.callback)
        const answer = await other.inject({
          method: 'GET',
          url: `${callback.pathname}${callback.search}`,
          headers: { cookie: jar.header(), accept: 'text/html' },
        })
        assert.equal(answer.statusCode, 303, answer.body)
        assert.equal(answer.headers.location, '/account/keys')
        assert.ok(await ctx.app.services.accounts.findByEmail(email), 'the account is made')
      } finally {
        await other.close()
        await db.close()
      }
    })

    test('a sign-in left more than 10 minutes is refused as expired', async () => {
      const flows = new SsoFlows(new ServerSecrets(ctx.db))
      const flow = {
        state: 'state-of-an-old-sign-in',
        nonce: 'n',
        codeVerifier: 'v'.repeat(43),
        returnTo: '/',
      }
      const jar = new Jar()
      jar.cookies.set('coffer_sso', await flows.seal(flow, Date.now() - (FLOW_SECONDS + 1) * 1000))
      const answer = await jar.get(`${ctx.base}/account/sso/callback?code=any&state=${flow.state}`)
      assert.equal(answer.status, 400)
      assert.match(text(await answer.text()), /This sign-in has expired/)
      // The same flow sealed now would have been taken (and its made-up code refused by the provider).
      jar.cookies.set('coffer_sso', await flows.seal(flow))
      const iss = encodeURIComponent(ctx.provider.issuer)
      const current = await jar.get(
        `${ctx.base}/account/sso/callback?code=any&state=${flow.state}&iss=${iss}`,
      )
      assert.match(text(await current.text()), /This sign-in was already used/)
    })

    test('a replayed code is refused by the provider, and signs no one in', async () => {
      const email = address()
      await ctx.app.services.accounts.create({ email, password: OWNER_PASSWORD })
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      const jar = new Jar()
      const reached = await startAndReachCallback(jar, ctx.base)
      assert.ok('callback' in reached)
      const flow = jar.cookies.get('coffer_sso')
      assert.ok(flow)
      assert.equal((await jar.get(reached.callback)).status, 303)
      // The same answer again, from a browser that kept the flow's cookie (a copy of the first).
      const replay = new Jar()
      replay.cookies.set('coffer_sso', flow)
      const answer = await replay.get(reached.callback)
      const body = await answer.text()
      assert.equal(answer.status, 400)
      assert.match(text(body), /This sign-in was already used/)
      assert.ok(!replay.cookies.has('coffer_session'))
      assertNoSecrets(body, ctx.provider, reached.callback)
      // And again in the first browser, whose flow cookie went with its sign-in.
      const again = await jar.get(reached.callback)
      assert.equal(again.status, 400)
      assert.match(text(await again.text()), /This sign-in has expired/)
    })

    test('a sign-in cancelled at the provider signs no one in, and says so', async () => {
      ctx.provider.signInAs('refuse')
      const jar = new Jar()
      const answer = await signInWithProvider(jar, ctx.base)
      const body = await answer.text()
      assert.equal(answer.status, 403)
      assert.match(text(body), /Test ID did not sign you in/)
      assert.ok(!jar.cookies.has('coffer_session'))
    })

    test('the start refuses a form without its CSRF token, or from another site', async () => {
      const jar = new Jar()
      const _csrf = await csrfOf(jar, `${ctx.base}/account/sign-in`)
      const without = await jar.post(`${ctx.base}/account/sso/start`, { return_to: '/' }, ctx.base)
      assert.equal(without.status, 403)
      const crossSite = await jar.post(
        `${ctx.base}/account/sso/start`,
        { _csrf },
        'https://elsewhere.example',
      )
      assert.equal(crossSite.status, 403)
      assert.ok(!jar.cookies.has('coffer_sso'), 'no sign-in started')
    })

    test('a provider that is down: a page that says it cannot be reached, at the start and at the callback', async () => {
      const email = address()
      await ctx.app.services.accounts.create({ email, password: OWNER_PASSWORD })
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      // Down between the person's sign-in there and their return: the code cannot be redeemed.
      const jar = new Jar()
      const reached = await startAndReachCallback(jar, ctx.base)
      assert.ok('callback' in reached)
      await ctx.provider.stop()
      try {
        const atCallback = await jar.get(reached.callback)
        const body = await atCallback.text()
        assert.equal(atCallback.status, 503)
        assert.match(text(body), /Test ID cannot be reached/)
        assert.match(body, /href="\/account\/sign-in"/)
        assertNoSecrets(body, ctx.provider, reached.callback)
        // Down before the start: found there, before the person is sent to it.
        const started = await startAndReachCallback(new Jar(), ctx.base)
        assert.ok('refused' in started)
        const page = await started.refused.text()
        assert.equal(started.refused.status, 503)
        assert.match(text(page), /Test ID cannot be reached/)
        assert.match(text(page), /Back to sign in/)
        assertNoSecrets(page, ctx.provider)
      } finally {
        await ctx.provider.start()
      }
      // Back up: signing in works again.
      assert.equal((await signInWithProvider(new Jar(), ctx.base)).status, 303)
    })
  })

  describe(`single sign-on only, SIGNUP=invite [${engine}]`, { timeout: 120_000 }, () => {
    let ctx: Listening
    before(async () => {
      ctx = await startWithProvider(engine, { SSO_ONLY: 'true' })
    })
    after(async () => {
      await ctx?.stop()
    })

    test('the sign-in page offers the provider only, and a link to the admins’ password form', async () => {
      const jar = new Jar()
      const body = await (await jar.get(`${ctx.base}/account/sign-in`)).text()
      assert.match(text(body), /Sign in with Test ID/)
      assert.ok(!body.includes('type="password"'), 'no password field')
      assert.match(body, /href="\/account\/sign-in\?with&#61;password&#38;return_to&#61;%2F"/)
      const admin = await (await jar.get(`${ctx.base}/account/sign-in?with=password`)).text()
      assert.match(admin, /type="password"/)
      assert.match(text(admin), /Admin sign-in/)
      assert.equal((await jar.get(`${ctx.base}/account/sign-up`)).status, 404, 'no sign-up page (invite)')
    })

    test('a member’s right password does not sign in; an admin’s does (the break-glass)', async () => {
      const member = address()
      await ctx.app.services.accounts.create({ email: member, password: OWNER_PASSWORD })
      const admin = address()
      await ctx.app.services.accounts.create({ email: admin, role: 'admin' })
      // The admin command's `accounts set-password`.
      const adminAccount = await ctx.app.services.accounts.getByEmail(admin)
      await ctx.app.services.accounts.setPassword(adminAccount.id, OWNER_PASSWORD)

      const jar = new Jar()
      const signIn = async (email: string, password: string) =>
        jar.post(
          `${ctx.base}/account/sign-in`,
          {
            _csrf: await csrfOf(jar, `${ctx.base}/account/sign-in?with=password`),
            email,
            password,
            with: 'password',
          },
          ctx.base,
        )
      const refused = await signIn(member, OWNER_PASSWORD)
      assert.equal(refused.status, 401)
      assert.match(text(await refused.text()), /Members sign in with Test ID/)
      assert.ok(!jar.cookies.has('coffer_session'))
      const memberRow = await ctx.db.kysely
        .selectFrom('accounts')
        .select('last_sign_in_at')
        .where('email', '=', member)
        .executeTakeFirstOrThrow()
      assert.equal(memberRow.last_sign_in_at, null, 'no sign-in is recorded for the member')
      const wrong = await signIn(admin, 'not the password at all')
      assert.equal(wrong.status, 401)
      const right = await signIn(admin, OWNER_PASSWORD)
      assert.equal(right.status, 303)
      assert.ok(jar.cookies.has('coffer_session'), 'the admin is signed in')
    })

    test('invitations only: a new address is refused; an existing member signs in with the provider', async () => {
      const stranger = address()
      ctx.provider.signInAs(ctx.provider.addUser({ email: stranger, email_verified: true }))
      const answer = await signInWithProvider(new Jar(), ctx.base)
      assert.equal(answer.status, 403)
      assert.match(text(await answer.text()), /made by its admins, or by their invitation/)
      assert.equal(await ctx.app.services.accounts.findByEmail(stranger), undefined)

      const member = address()
      await ctx.app.services.accounts.create({ email: member })
      ctx.provider.signInAs(ctx.provider.addUser({ email: member, email_verified: true }))
      assert.equal((await signInWithProvider(new Jar(), ctx.base)).status, 303)
    })
  })

  describe(`single sign-on secrets in the log [${engine}]`, { timeout: 120_000 }, () => {
    const logs = captureLogs('trace')
    let ctx: Listening
    before(async () => {
      ctx = await startWithProvider(engine, { SIGNUP: 'open' }, { logger: logs.logger })
    })
    after(async () => {
      await ctx?.stop()
    })

    /** A sign-in, then its answer replayed; what the test knows of its secrets. */
    let secrets: Record<string, string | null | undefined> | undefined
    before(async () => {
      const email = address()
      ctx.provider.signInAs(ctx.provider.addUser({ email, email_verified: true }))
      const jar = new Jar()
      const reached = await startAndReachCallback(jar, ctx.base)
      assert.ok('callback' in reached)
      const flow = jar.cookies.get('coffer_sso')
      assert.ok(flow)
      assert.equal((await jar.get(reached.callback)).status, 303)
      const replay = new Jar()
      replay.cookies.set('coffer_sso', flow)
      assert.equal((await replay.get(reached.callback)).status, 400)
      const params = new URL(reached.callback).searchParams
      secrets = {
        'client secret': ctx.provider.clientSecret,
        code: params.get('code'),
        state: params.get('state'),
        'flow cookie': flow,
        'session cookie': jar.cookies.get('coffer_session'),
      }
    })

    test('no client secret, code, state, flow or session cookie is logged, even at trace level', () => {
      const text = logs.text()
      assert.match(text, /single sign-on refused/, 'the refusal is logged, by its kind')
      for (const [name, value] of Object.entries(secrets ?? {})) {
        assert.ok(value, `${name} is known to the test`)
        assert.ok(!text.includes(value), `the ${name} is not in the log`)
      }
    })
  })
}
