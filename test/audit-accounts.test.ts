// The audit log of identity and administration (issue 45, 4) over HTTP, on both engines: the setup link, sign-up,
// invitations and single sign-on make accounts as the new account; sign-ins (and their refusals: a wrong password,
// an unknown address, a disabled account, too many) are recorded with the method and reason; the owner's keys and
// password, the admin's pages (role, quota, disable, enable, a reset link, delete, invitations) and the admin
// command each record their change with who acted and from where; OAuth grants and revocations name the
// application; a change refused (the last admin demoted) records nothing; and no password, key, link secret or
// token is in the log.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { API_KEY_PREFIX } from '../src/platform/auth/secrets.ts'
import { wireQuotas } from '../src/resources/quotas/quotas.module.ts'
import { wireAccounts } from '../src/wiring.ts'
import { assertNoSecretIn, auditEntries, lastEntry } from './support/audit.ts'
import { describeEachEngine, ENGINES, type TestContext } from './support/harness.ts'
import { Jar, type Listening, signInWithProvider, startWithProvider } from './support/sso-flow.ts'
import { newOwner, OWNER_PASSWORD, WebClient } from './support/web-client.ts'

const ADDRESS = '127.0.0.1'
const NEW_PASSWORD = 'a brand new passphrase'
const REDIRECT_URI = 'http://127.0.0.1:47893/callback'
/** Email on (its messages stay in the outbox, where the tests read the links), and sign-up open. */
const ENV = { SIGNUP: 'open', SMTP_URL: 'smtp://127.0.0.1:9', MAIL_FROM: 'Coffer <coffer@example.com>' }

let counter = 0
const address = () => `audit-${process.pid}-${++counter}@example.com`

const accountActor = (account: { id: string; email: string }) => ({
  type: 'account',
  id: account.id,
  name: account.email,
})

/** A new admin, signed in on the web. */
async function admin(c: TestContext) {
  const { id, email } = await newOwner(c.app, address())
  await c.app.services.accounts.setRole(email, 'admin')
  return { id, email, web: await WebClient.signedIn(c.app, email) }
}

/** The last link of `kind` emailed to `to`, read from the outbox. */
async function emailedLink(c: TestContext, to: string, pattern: RegExp): Promise<string> {
  const rows = await c.db.kysely
    .selectFrom('mail_outbox')
    .select('text_body')
    .where('to_address', '=', to)
    .execute()
  const link = rows
    .map((row) => pattern.exec(row.text_body)?.[0])
    .filter(Boolean)
    .at(-1)
  assert.ok(link, `a link was emailed to ${to}`)
  return link
}

describeEachEngine(
  'the audit log of accounts',
  (ctx) => {
    test('setup link and sign-up make accounts as the new account, signed in; the last admin refused records nothing', async () => {
      const c = ctx()
      const secret = await c.app.services.setup.issue()
      assert.ok(secret)
      const email = address()
      const first = new WebClient(c.app)
      const made = await first.post(`/account/setup/${secret}`, {
        email,
        password: OWNER_PASSWORD,
        confirm: OWNER_PASSWORD,
      })
      assert.equal(made.statusCode, 303, made.body)
      const boss = await c.app.services.accounts.getByEmail(email)
      const created = await lastEntry(c.db, boss.id, 'account.created')
      assert.deepEqual(created.actor, accountActor(boss))
      assert.equal(created.address, ADDRESS)
      assert.deepEqual(created.details, { via: 'setup', email, role: 'admin' })
      const signedIn = await lastEntry(c.db, boss.id, 'account.signed_in')
      assert.deepEqual([signedIn.actor, signedIn.details], [accountActor(boss), { method: 'setup' }])

      // The only admin demoting themselves: refused (409), rolled back, and so not recorded.
      const demoted = await first.post(`/admin/accounts/${boss.id}/role`, { role: 'member' }, '/')
      assert.equal(demoted.statusCode, 409)
      assert.deepEqual(await auditEntries(c.db, { accountId: boss.id, kind: 'account.role_changed' }), [])

      const newcomer = address()
      const signedUp = await new WebClient(c.app).post('/account/sign-up', {
        email: newcomer,
        password: OWNER_PASSWORD,
        confirm: OWNER_PASSWORD,
      })
      assert.equal(signedUp.statusCode, 303, signedUp.body)
      const account = await c.app.services.accounts.getByEmail(newcomer)
      const viaSignUp = await lastEntry(c.db, account.id, 'account.created')
      assert.deepEqual(
        [viaSignUp.actor, viaSignUp.address, viaSignUp.details],
        [accountActor(account), ADDRESS, { via: 'sign_up', email: newcomer, role: 'member' }],
      )
      assert.deepEqual((await lastEntry(c.db, account.id, 'account.signed_in')).details, {
        method: 'sign_up',
      })
      await assertNoSecretIn(c.db, [secret, OWNER_PASSWORD])
    })

    test('sign-ins: the account signed in; a wrong password, an unknown address, a disabled account, a throttled one refused', async () => {
      const c = ctx()
      const owner = await newOwner(c.app, address())
      await WebClient.signedIn(c.app, owner.email)
      const signedIn = await lastEntry(c.db, owner.id, 'account.signed_in')
      assert.deepEqual(
        [signedIn.actor, signedIn.address, signedIn.details],
        [accountActor(owner), ADDRESS, { method: 'password' }],
      )

      const guesses = ['not the password at all', 'another wrong guess']
      const browser = new WebClient(c.app)
      const wrong = await browser.post('/account/sign-in', { email: owner.email, password: guesses[0] ?? '' })
      assert.equal(wrong.statusCode, 401)
      const failed = await lastEntry(c.db, owner.id, 'account.sign_in_failed')
      assert.deepEqual(
        [failed.actor.type, failed.address, failed.details],
        ['visitor', ADDRESS, { method: 'password', reason: 'wrong_password' }],
      )

      const nobody = address()
      const unknown = await browser.post('/account/sign-in', { email: nobody, password: guesses[1] ?? '' })
      assert.equal(unknown.statusCode, 401)
      const [ofNobody] = (await auditEntries(c.db, { kind: 'account.sign_in_failed' })).filter(
        (entry) => entry.details.email === nobody,
      )
      assert.ok(ofNobody, 'the refusal of an unknown address is recorded')
      assert.equal(ofNobody.accountId, null)
      assert.deepEqual(ofNobody.details, { method: 'password', reason: 'unknown_email', email: nobody })

      await c.app.services.accounts.disable(owner.email)
      const disabled = await browser.post('/account/sign-in', {
        email: owner.email,
        password: OWNER_PASSWORD,
      })
      assert.equal(disabled.statusCode, 401)
      assert.deepEqual((await lastEntry(c.db, owner.id, 'account.sign_in_failed')).details, {
        method: 'password',
        reason: 'disabled',
      })

      // Ten wrong passwords from one address to one account, then any attempt is throttled, before its check.
      const target = await newOwner(c.app, address())
      for (let i = 0; i < 10; i++) {
        await browser.post('/account/sign-in', { email: target.email, password: guesses[0] ?? '' })
      }
      const throttled = await browser.post('/account/sign-in', {
        email: target.email,
        password: OWNER_PASSWORD,
      })
      assert.equal(throttled.statusCode, 429)
      assert.deepEqual((await lastEntry(c.db, target.id, 'account.sign_in_failed')).details, {
        method: 'password',
        reason: 'throttled',
      })
      await assertNoSecretIn(c.db, [...guesses, OWNER_PASSWORD])
    })

    test("the owner's keys and password: made, revoked and changed by the account, without a secret", async () => {
      const c = ctx()
      const owner = await newOwner(c.app, address())
      const browser = await WebClient.signedIn(c.app, owner.email)
      const posted = await browser.post(
        '/account/keys/new',
        { name: 'Laptop', scopes: ['files:read', 'files:write'] },
        '/account/keys',
      )
      assert.equal(posted.statusCode, 303, posted.body)
      const page = await browser.get('/account/keys')
      const secret = new RegExp(`${API_KEY_PREFIX}[A-Za-z0-9_-]{20,}`).exec(page.body)?.[0]
      assert.ok(secret, 'the new key is shown once')
      const [key] = await c.app.services.apiKeys.list(owner.id)
      assert.ok(key)
      const created = await lastEntry(c.db, owner.id, 'key.created')
      assert.deepEqual(
        [created.actor, created.address, created.subjectId, created.details],
        [
          accountActor(owner),
          ADDRESS,
          key.id,
          { name: 'Laptop', scopes: ['files:read', 'files:write'], expiresAt: null },
        ],
      )

      const revoked = await browser.post(`/account/keys/${key.id}/revoke`, {}, '/account/keys')
      assert.equal(revoked.statusCode, 303)
      const entry = await lastEntry(c.db, owner.id, 'key.revoked')
      assert.deepEqual(
        [entry.actor, entry.subjectId, entry.details],
        [accountActor(owner), key.id, { name: 'Laptop' }],
      )
      // Revoked again: nothing changes, nothing more is recorded.
      await browser.post(`/account/keys/${key.id}/revoke`, {}, '/account/keys')
      assert.equal((await auditEntries(c.db, { accountId: owner.id, kind: 'key.revoked' })).length, 1)

      const changed = await browser.post('/account/password', {
        current: OWNER_PASSWORD,
        password: NEW_PASSWORD,
        confirm: NEW_PASSWORD,
      })
      assert.ok([200, 303].includes(changed.statusCode), changed.body)
      const password = await lastEntry(c.db, owner.id, 'account.password_changed')
      assert.deepEqual(
        [password.actor, password.address, password.details],
        [accountActor(owner), ADDRESS, {}],
      )
      await assertNoSecretIn(c.db, [secret, NEW_PASSWORD, OWNER_PASSWORD])
    })

    test("the admin's pages: role, quota, reset link, disable, enable and delete, by the admin", async () => {
      const c = ctx()
      const boss = await admin(c)
      const bossActor = { type: 'admin', id: boss.id, name: boss.email }
      const member = await newOwner(c.app, address())
      const page = `/admin/accounts/${member.id}`
      const act = async (action: string, form: Record<string, string> = {}) => {
        const answer = await boss.web.post(`${page}/${action}`, form, page)
        assert.equal(answer.statusCode, 303, `${action}: ${answer.body}`)
      }
      const entryOf = async (kind: string) => {
        const entry = await lastEntry(c.db, member.id, kind)
        assert.deepEqual([entry.actor, entry.address], [bossActor, ADDRESS], kind)
        return entry
      }

      await act('role', { role: 'admin' })
      assert.deepEqual((await entryOf('account.role_changed')).details, { from: 'member', to: 'admin' })
      await act('role', { role: 'member' })
      assert.deepEqual((await entryOf('account.role_changed')).details, { from: 'admin', to: 'member' })
      await act('quota', { quota: 'own', quotaGb: '2', maxFileGb: '0.5' })
      assert.deepEqual((await entryOf('account.quota_changed')).details, {
        quota: 'own',
        quotaBytes: 2_000_000_000,
        maxFileBytes: 500_000_000,
      })
      // The same again changes nothing, and records nothing.
      const count = async (kind: string) => (await auditEntries(c.db, { accountId: member.id, kind })).length
      await act('quota', { quota: 'own', quotaGb: '2', maxFileGb: '0.5' })
      assert.equal(await count('account.quota_changed'), 1)

      await act('password-reset')
      await entryOf('account.password_reset_sent')
      // Asked again within ten minutes: nothing is sent, the admin is told why, and nothing is recorded.
      const again = await boss.web.post(`${page}/password-reset`, {}, page)
      assert.equal(again.statusCode, 409, again.body)
      assert.match(
        again.body,
        /a few minutes ago, and it still works: no other was sent\. Another can be sent in 10 minutes\./,
      )
      assert.equal(await count('account.password_reset_sent'), 1)
      const link = await emailedLink(c, member.email, /\/account\/reset-password\/coffer_reset_\S+/)
      const reset = await new WebClient(c.app).post(link, { password: NEW_PASSWORD, confirm: NEW_PASSWORD })
      assert.equal(reset.statusCode, 303, reset.body)
      const used = await lastEntry(c.db, member.id, 'account.password_reset')
      assert.deepEqual([used.actor, used.address], [accountActor(member), ADDRESS])

      await act('disable')
      const disabled = await entryOf('account.disabled')
      await act('disable')
      assert.equal(await count('account.disabled'), 1, 'disabled again: nothing changed')
      const disabledAt = await c.db.kysely
        .selectFrom('accounts')
        .select('disabled_at')
        .where('id', '=', member.id)
        .executeTakeFirstOrThrow()
      assert.ok(Number(disabledAt.disabled_at) <= disabled.at, 'it keeps the time it was disabled')
      await act('enable')
      await entryOf('account.enabled')
      await act('enable')
      assert.equal(await count('account.enabled'), 1, 'enabled again: nothing changed')
      await act('delete', { email: member.email })
      assert.deepEqual((await entryOf('account.deleted')).details, { email: member.email })
      await assertNoSecretIn(c.db, [link.split('/').at(-1) ?? '', NEW_PASSWORD, OWNER_PASSWORD])
    })

    test('invitations: made and revoked by the admin; one accepted makes its account, signed in', async () => {
      const c = ctx()
      const boss = await admin(c)
      const bossActor = { type: 'admin', id: boss.id, name: boss.email }
      const made = await boss.web.post('/admin/invitations', { email: '', role: 'member' })
      assert.equal(made.statusCode, 201)
      const link = /id="new-invitation-link">([^<]+)</.exec(made.body)?.[1] ?? ''
      const [invitation] = await c.app.services.invitations.unused()
      assert.ok(invitation)
      const created = (await auditEntries(c.db, { kind: 'invitation.created' })).find(
        (entry) => entry.subjectId === invitation.id,
      )
      assert.ok(created)
      assert.deepEqual(
        [created.accountId, created.actor, created.address, created.details],
        [null, bossActor, ADDRESS, { role: 'member' }],
      )

      const email = address()
      const guest = new WebClient(c.app)
      const path = new URL(link).pathname
      const accepted = await guest.post(path, { email, password: OWNER_PASSWORD, confirm: OWNER_PASSWORD })
      assert.equal(accepted.statusCode, 303, accepted.body)
      const account = await c.app.services.accounts.getByEmail(email)
      const viaInvitation = await lastEntry(c.db, account.id, 'account.created')
      assert.deepEqual(
        [viaInvitation.actor, viaInvitation.details],
        [accountActor(account), { via: 'invitation', email, role: 'member', invitation: invitation.id }],
      )
      assert.deepEqual((await lastEntry(c.db, account.id, 'account.signed_in')).details, {
        method: 'invitation',
      })

      const invited = address()
      const second = await boss.web.post('/admin/invitations', { email: invited, role: 'admin' })
      assert.equal(second.statusCode, 201)
      const secondLink = /id="new-invitation-link">([^<]+)</.exec(second.body)?.[1] ?? ''
      const [pending] = await c.app.services.invitations.unused()
      assert.ok(pending)
      const forAddress = await lastEntry(c.db, undefined, 'invitation.created')
      assert.deepEqual(
        [forAddress.subjectId, forAddress.details],
        [pending.id, { email: invited, role: 'admin' }],
      )
      const revoked = await boss.web.post(`/admin/invitations/${pending.id}/revoke`, {}, '/admin/invitations')
      assert.equal(revoked.statusCode, 303)
      const entry = await lastEntry(c.db, undefined, 'invitation.revoked')
      assert.deepEqual(
        [entry.accountId, entry.actor, entry.subjectId, entry.details],
        [null, bossActor, pending.id, { email: invited, role: 'admin' }],
      )
      const secrets = [link, secondLink].map((each) => each.split('/').at(-1) ?? '')
      await assertNoSecretIn(c.db, [...secrets, OWNER_PASSWORD])
    })

    test('the admin command: accounts, passwords, keys and quotas, by the admin command', async () => {
      const c = ctx()
      const command = wireAccounts(c.db)
      const email = address()
      const account = await command.accounts.create(
        { email, password: OWNER_PASSWORD },
        { via: 'admin_command' },
      )
      const byCommand = { type: 'admin_command', id: null, name: null }
      const created = await lastEntry(c.db, account.id, 'account.created')
      assert.deepEqual(
        [created.actor, created.address, created.details.via],
        [byCommand, null, 'admin_command'],
      )
      await command.accounts.setPassword(account.id, NEW_PASSWORD)
      assert.deepEqual((await lastEntry(c.db, account.id, 'account.password_changed')).actor, byCommand)
      const { key, secret } = await command.apiKeys.create({
        accountId: account.id,
        name: 'Backup',
        scopes: ['files:read'],
      })
      const made = await lastEntry(c.db, account.id, 'key.created')
      assert.deepEqual([made.actor, made.subjectId, made.details.name], [byCommand, key.id, 'Backup'])
      await command.apiKeys.revoke(key.id)
      assert.deepEqual((await lastEntry(c.db, account.id, 'key.revoked')).actor, byCommand)
      await wireQuotas(c.db, c.config).quotas.set(account.id, { quotaBytes: null })
      const quota = await lastEntry(c.db, account.id, 'account.quota_changed')
      assert.deepEqual([quota.actor, quota.details.quota], [byCommand, 'unlimited'])
      await assertNoSecretIn(c.db, [secret, NEW_PASSWORD, OWNER_PASSWORD])
    })

    test('OAuth: the grant on the consent page, the token named by its application, revocations by either', async () => {
      const c = ctx()
      const owner = await newOwner(c.app, address())
      const browser = await WebClient.signedIn(c.app, owner.email)
      const registered = await c.app.inject({
        method: 'POST',
        url: '/oauth/register',
        payload: {
          client_name: 'Audit App',
          redirect_uris: [REDIRECT_URI],
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
        },
      })
      assert.equal(registered.statusCode, 201, registered.body)
      const clientId = registered.json().client_id as string

      const first = await authorize(c, browser, clientId)
      const grants = await c.app.services.connectedApps.list(owner.id)
      const grantId = grants[0]?.grantId
      const granted = await lastEntry(c.db, owner.id, 'oauth.granted')
      assert.deepEqual(
        [granted.actor, granted.address, granted.subjectId, granted.details],
        [accountActor(owner), ADDRESS, grantId, { client: 'Audit App', clientId, scopes: ['files:read'] }],
      )
      const principal = await c.app.services.accessTokens.authenticate(first.access_token)
      assert.deepEqual(principal?.actor, { type: 'oauth_client', id: clientId, name: 'Audit App' })

      // The application revokes its refresh token (RFC 7009): its grant ends, as its doing.
      const revoked = await c.app.inject({
        method: 'POST',
        url: '/oauth/revoke',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ token: first.refresh_token, client_id: clientId }).toString(),
      })
      assert.equal(revoked.statusCode, 200, revoked.body)
      const byClient = await lastEntry(c.db, owner.id, 'oauth.revoked')
      assert.deepEqual(
        [byClient.actor, byClient.subjectId, byClient.details],
        [
          { type: 'oauth_client', id: clientId, name: 'Audit App' },
          grantId,
          { client: 'Audit App', clientId },
        ],
      )

      const second = await authorize(c, browser, clientId)
      const [again] = await c.app.services.connectedApps.list(owner.id)
      assert.ok(again)
      const ended = await browser.post(`/account/apps/${again.grantId}/revoke`, {}, '/account/apps')
      assert.equal(ended.statusCode, 303)
      const byOwner = await lastEntry(c.db, owner.id, 'oauth.revoked')
      assert.deepEqual([byOwner.actor, byOwner.subjectId], [accountActor(owner), again.grantId])

      // A refresh token used twice (it may have been stolen): the server ends the grant, and says why.
      const third = await authorize(c, browser, clientId)
      const [replayed] = await c.app.services.connectedApps.list(owner.id)
      assert.ok(replayed)
      const refresh = () =>
        c.app.inject({
          method: 'POST',
          url: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({
            grant_type: 'refresh_token',
            refresh_token: third.refresh_token,
            client_id: clientId,
          }).toString(),
        })
      assert.equal((await refresh()).statusCode, 200)
      const twice = await refresh()
      assert.equal(twice.json().error, 'invalid_grant', twice.body)
      const byServer = await lastEntry(c.db, owner.id, 'oauth.revoked')
      assert.deepEqual(
        [byServer.actor, byServer.address, byServer.subjectId, byServer.details],
        [
          { type: 'system', id: null, name: null },
          null,
          replayed.grantId,
          { client: 'Audit App', clientId, reason: 'replayed' },
        ],
      )
      assert.deepEqual(await c.app.services.connectedApps.list(owner.id), [], 'the grant is gone')
      const secrets = [first, second, third].flatMap((tokens) => [
        tokens.access_token,
        tokens.refresh_token,
        tokens.code,
      ])
      await assertNoSecretIn(c.db, [...secrets, OWNER_PASSWORD])
    })
  },
  { env: ENV },
)

/**
 * The code flow over `inject`, the signed-in `browser` following redirects by hand and allowing files:read on
 * the consent page: answers the tokens, and the code they came from.
 */
async function authorize(c: TestContext, browser: WebClient, clientId: string) {
  const verifier = randomBytes(32).toString('base64url')
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'files:read',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })
  let answer = await browser.get(`/oauth/authorize?${query}`)
  let consented = false
  for (let hops = 0; hops < 10; hops++) {
    const location = answer.headers.location
    if (answer.statusCode === 200 && !consented) {
      const action = /action="(\/oauth\/interaction\/[^"]+\/consent)"/.exec(answer.body)?.[1]
      assert.ok(action, `the consent page: ${answer.body.slice(0, 300)}`)
      const page = action.replace(/\/consent$/, '')
      answer = await browser.post(action, { scopes: 'files:read' }, page)
      consented = true
      continue
    }
    assert.ok(typeof location === 'string', `a redirect (${answer.statusCode}): ${answer.body.slice(0, 300)}`)
    if (location.startsWith(REDIRECT_URI)) {
      const code = new URL(location).searchParams.get('code')
      assert.ok(code, location)
      const token = await c.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT_URI,
          client_id: clientId,
          code_verifier: verifier,
        }).toString(),
      })
      assert.equal(token.statusCode, 200, token.body)
      const tokens = token.json() as { access_token: string; refresh_token: string }
      return { ...tokens, code }
    }
    const url = new URL(location, c.config.publicUrl)
    answer = await browser.get(`${url.pathname}${url.search}`)
  }
  throw new Error('the code flow did not come back')
}

for (const engine of ENGINES) {
  describe(`the audit log of single sign-on [${engine}]`, { timeout: 120_000 }, () => {
    let sso: Listening
    before(async () => {
      sso = await startWithProvider(engine, { SIGNUP: 'open', SIGNUP_EMAIL_DOMAINS: 'example.com' })
    })
    after(async () => {
      await sso?.stop()
    })

    test('a new address makes its account and signs in; a disabled account is refused, recorded', async () => {
      const email = address()
      sso.provider.signInAs(sso.provider.addUser({ email, email_verified: true }))
      assert.equal((await signInWithProvider(new Jar(), sso.base)).status, 303)
      const account = await sso.app.services.accounts.getByEmail(email)
      const created = await lastEntry(sso.db, account.id, 'account.created')
      assert.deepEqual(
        [created.actor, created.address, created.details],
        [accountActor(account), ADDRESS, { via: 'sso', email, role: 'member' }],
      )
      const signedIn = await lastEntry(sso.db, account.id, 'account.signed_in')
      assert.deepEqual([signedIn.actor, signedIn.details], [accountActor(account), { method: 'sso' }])

      await sso.app.services.accounts.disable(email)
      assert.equal((await signInWithProvider(new Jar(), sso.base)).status, 403)
      const refused = await lastEntry(sso.db, account.id, 'account.sign_in_failed')
      assert.deepEqual(
        [refused.actor.type, refused.address, refused.details],
        ['visitor', ADDRESS, { method: 'sso', reason: 'disabled' }],
      )
      await assertNoSecretIn(sso.db, [sso.provider.clientSecret])
    })
  })
}
