// "Forgot your password?" with email on (SMTP_URL to a real SMTP server on 127.0.0.1, what it receives parsed
// by mailparser): the same answer for any address, a link by email that works once for 30 minutes and signs the
// account out everywhere, limits per address and per client, the secret in no log; and without SMTP_URL, no
// such page nor link. On both engines.
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { ConfigError, loadConfig } from '../src/platform/config.ts'
import {
  RESET_EMAIL_INTERVAL_MS,
  RESET_LINK_LIFETIME_MS,
} from '../src/resources/accounts/password-reset.service.ts'
import { captureLogs, describeEachEngine } from './support/harness.ts'
import { SmtpReceiver } from './support/smtp.ts'
import { newOwner, OWNER_PASSWORD, WebClient } from './support/web-client.ts'

/** Posts a form from `address` (inject's remoteAddress), with the CSRF token of the client's page. */
async function postFrom(client: WebClient, address: string, url: string, form: Record<string, string>) {
  const token = await client.csrfToken(url)
  return client.app.inject({
    method: 'POST',
    url,
    remoteAddress: address,
    payload: new URLSearchParams({ ...form, _csrf: token }).toString(),
    headers: {
      accept: 'text/html',
      'content-type': 'application/x-www-form-urlencoded',
      cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
    },
  })
}

const smtp = new SmtpReceiver()
const smtpUrl = await smtp.start()
after(() => smtp.stop())

const MAIL_ENV = { SMTP_URL: smtpUrl, MAIL_FROM: 'Coffer <coffer@example.com>' }
const NEW_PASSWORD = 'a brand new passphrase'
const logs = captureLogs()

/** The reset link in the one email to `to` that arrives after `before` of them. */
async function linkSentTo(to: string, before: number): Promise<string> {
  const messages = await smtp.to(to, before + 1)
  const message = messages.at(-1)
  assert.equal(message?.subject, 'Reset your Coffer password')
  const link = /https?:\/\/\S+\/account\/reset-password\/coffer_reset_\S+/.exec(message?.text ?? '')?.[0]
  assert.ok(link, message?.text)
  return new URL(link).pathname
}

const sentTo = (to: string) => smtp.recipients.filter((recipients) => recipients.includes(to)).length

describeEachEngine(
  'forgot your password',
  (ctx) => {
    test('the sign-in page offers it; any address gets the same answer; an account gets a link by email', async () => {
      const { app } = ctx()
      const owner = await newOwner(app)
      const browser = new WebClient(app)
      const signIn = await browser.get('/account/sign-in')
      assert.match(signIn.body, /href="\/account\/forgot-password">Forgot your password\?<\/a>/)

      const before = sentTo(owner.email)
      const known = await browser.post('/account/forgot-password', { email: owner.email.toUpperCase() })
      const unknown = await browser.post('/account/forgot-password', { email: 'nobody@example.com' })
      assert.deepEqual([known.statusCode, unknown.statusCode], [200, 200])
      const answer = (body: string, email: string) =>
        body.replace(email, 'EMAIL').replace(/value="[^"]+"/g, '')
      assert.equal(
        answer(known.body, owner.email.toUpperCase()),
        answer(unknown.body, 'nobody@example.com'),
        'the same page for an account and for none',
      )
      assert.match(known.body, /a link to choose a new password is on its way/)
      const link = await linkSentTo(owner.email, before)
      assert.equal(sentTo('nobody@example.com'), 0)

      // A session elsewhere, which the reset ends.
      const elsewhere = await WebClient.signedIn(app, owner.email)
      const page = await browser.get(link)
      assert.equal(page.statusCode, 200)
      assert.match(page.body, /Choose a new password/)
      const mismatch = await browser.post(link, {
        password: NEW_PASSWORD,
        confirm: 'something else entirely',
      })
      assert.equal(mismatch.statusCode, 400)
      const short = await browser.post(link, { password: 'short', confirm: 'short' })
      assert.equal(short.statusCode, 400)
      const reset = await browser.post(link, { password: NEW_PASSWORD, confirm: NEW_PASSWORD })
      assert.equal(reset.statusCode, 303)
      assert.equal(reset.headers.location, '/account/sign-in?reset=done')
      assert.match((await browser.get('/account/sign-in?reset=done')).body, /Your password was changed/)

      // Signed out elsewhere; the old password no longer works, the new one does.
      assert.equal((await elsewhere.get('/account/keys')).statusCode, 303)
      const old = await new WebClient(app).post('/account/sign-in', {
        email: owner.email,
        password: OWNER_PASSWORD,
      })
      assert.equal(old.statusCode, 401)
      await WebClient.signedIn(app, owner.email, NEW_PASSWORD)

      // The link worked once.
      assert.equal((await browser.get(link)).statusCode, 410)
      const again = await browser.post(
        link,
        {
          password: 'yet another passphrase',
          confirm: 'yet another passphrase',
        },
        '/account/forgot-password',
      )
      assert.equal(again.statusCode, 410)
      assert.match(again.body, /This link was used, has expired, or is not right/)
      await WebClient.signedIn(app, owner.email, NEW_PASSWORD)
    })

    test('a link stops working after 30 minutes, and when a later one is used', async () => {
      const { app } = ctx()
      const owner = await newOwner(app)
      const browser = new WebClient(app)
      const before = sentTo(owner.email)
      // Links ten minutes apart: one email at most every ten minutes.
      const tenMinutesAgo = () =>
        ctx()
          .db.kysely.updateTable('password_resets')
          .set({ created_at: Date.now() - RESET_EMAIL_INTERVAL_MS - 1 })
          .where('account_id', '=', owner.id)
          .execute()
      await browser.post('/account/forgot-password', { email: owner.email })
      const first = await linkSentTo(owner.email, before)
      await tenMinutesAgo()
      await browser.post('/account/forgot-password', { email: owner.email })
      const second = await linkSentTo(owner.email, before + 1)
      assert.notEqual(first, second)
      assert.equal(
        (await browser.post(second, { password: NEW_PASSWORD, confirm: NEW_PASSWORD })).statusCode,
        303,
      )
      assert.equal((await browser.get(first)).statusCode, 410, 'an older link goes with the one used')

      await browser.post('/account/forgot-password', { email: owner.email })
      const third = await linkSentTo(owner.email, before + 2)
      // As if 30 minutes had gone by: the link's row says when it stops working.
      await ctx()
        .db.kysely.updateTable('password_resets')
        .set({ expires_at: Date.now() - 1 })
        .where('account_id', '=', owner.id)
        .execute()
      assert.equal((await browser.get(third)).statusCode, 410)
      assert.equal(RESET_LINK_LIFETIME_MS, 30 * 60_000)
    })
  },
  { env: MAIL_ENV, logger: { ...logs.logger, level: 'debug' } },
)

// An app of its own: its limits count from zero.
describeEachEngine(
  'forgot your password, limits',
  (ctx) => {
    test('limited per client, alone and with the address asked for; one email at most every 10 minutes; the secret in no log', async () => {
      const { app } = ctx()
      const owner = await newOwner(app)
      const browser = new WebClient(app)
      const statuses: number[] = []
      for (let i = 0; i < 4; i++) {
        statuses.push((await browser.post('/account/forgot-password', { email: owner.email })).statusCode)
      }
      assert.deepEqual(statuses, [200, 200, 200, 429])
      // The same for an address without an account: the limit says nothing of who has one.
      const unknown: number[] = []
      for (let i = 0; i < 4; i++) {
        unknown.push(
          (await browser.post('/account/forgot-password', { email: 'ghost@example.com' })).statusCode,
        )
      }
      assert.deepEqual(unknown, [200, 200, 200, 429])
      // Per client: ten in all from one address, whatever they ask for.
      const perClient: number[] = []
      for (let i = 0; i < 3; i++) {
        perClient.push(
          (await browser.post('/account/forgot-password', { email: `x${i}@example.com` })).statusCode,
        )
      }
      assert.deepEqual(perClient, [200, 200, 429])
      await smtp.to(owner.email, 1)
      const queued = await ctx()
        .db.kysely.selectFrom('mail_outbox')
        .select('to_address')
        .where('to_address', '=', owner.email)
        .execute()
      assert.equal(queued.length, 1, 'one link sent for three asks within ten minutes')
      // Once sent, a message's body (the link) is not kept.
      for (let i = 0; ; i++) {
        const rows = await ctx()
          .db.kysely.selectFrom('mail_outbox')
          .select(['state', 'text_body'])
          .where('to_address', '=', owner.email)
          .execute()
        if (rows.every((row) => row.state === 'sent')) {
          assert.deepEqual(
            rows.map((row) => row.text_body),
            [''],
          )
          break
        }
        assert.ok(i < 100, 'the messages are marked sent')
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const secrets = smtp.messages.flatMap(
        (message) => /coffer_reset_[0-9A-Za-z_-]+/.exec(message.text ?? '') ?? [],
      )
      assert.ok(secrets.length >= 1)
      for (const secret of secrets) assert.ok(!logs.text().includes(secret), 'a reset secret in the log')
    })

    test('strangers who ask for an owner’s link neither keep the owner from asking nor flood the inbox', async () => {
      const { app } = ctx()
      const owner = await newOwner(app)
      // Three strangers, each from an address of its own, ask again and again for the owner's address.
      for (const address of ['10.31.0.1', '10.31.0.2', '10.31.0.3']) {
        const stranger = new WebClient(app)
        for (let i = 0; i < 3; i++) {
          const asked = await postFrom(stranger, address, '/account/forgot-password', { email: owner.email })
          assert.equal(asked.statusCode, 200)
        }
      }
      // The owner asks from home, and is answered as anyone: the link sent a moment ago is in the inbox.
      const own = await postFrom(new WebClient(app), '192.0.2.7', '/account/forgot-password', {
        email: owner.email,
      })
      assert.equal(own.statusCode, 200)
      assert.match(own.body, /a link to choose a new password is on its way/)
      const queued = await ctx()
        .db.kysely.selectFrom('mail_outbox')
        .select('to_address')
        .where('to_address', '=', owner.email)
        .execute()
      assert.equal(queued.length, 1, 'ten asks, one email')
      // Once that link is used, or ten minutes have passed, the next ask sends another.
      await ctx()
        .db.kysely.updateTable('password_resets')
        .set({ created_at: Date.now() - RESET_EMAIL_INTERVAL_MS - 1 })
        .execute()
      assert.equal(
        (await postFrom(new WebClient(app), '192.0.2.7', '/account/forgot-password', { email: owner.email }))
          .statusCode,
        200,
      )
      const again = await ctx()
        .db.kysely.selectFrom('mail_outbox')
        .select('to_address')
        .where('to_address', '=', owner.email)
        .execute()
      assert.equal(again.length, 2)
    })
  },
  { env: MAIL_ENV, logger: { ...logs.logger, level: 'debug' } },
)

describeEachEngine('without email', (ctx) => {
  test('no "Forgot your password?" link, and no such page', async () => {
    const { app } = ctx()
    const browser = new WebClient(app)
    assert.doesNotMatch((await browser.get('/account/sign-in')).body, /Forgot your password/)
    assert.equal((await browser.get('/account/forgot-password')).statusCode, 404)
    assert.equal((await browser.get('/account/reset-password/coffer_reset_x')).statusCode, 404)
  })
})

test('SMTP_URL and MAIL_FROM: both or neither, an smtp URL and an address; credentials in no message', () => {
  const withPassword = 'smtp://user:hunter2-secret@mail.example.com:587'
  assert.deepEqual(loadConfig({ SMTP_URL: withPassword, MAIL_FROM: 'Coffer <c@example.com>' }).mail, {
    smtpUrl: withPassword,
    from: 'Coffer <c@example.com>',
  })
  assert.equal(loadConfig({}).mail, undefined)
  for (const [env, message] of [
    [{ SMTP_URL: withPassword }, /SMTP_URL is set without MAIL_FROM/],
    [{ MAIL_FROM: 'c@example.com' }, /MAIL_FROM is set without SMTP_URL/],
    [
      { SMTP_URL: 'http://user:hunter2-secret@mail.example.com', MAIL_FROM: 'c@example.com' },
      /SMTP_URL must use smtp: or smtps:/,
    ],
    [{ SMTP_URL: withPassword, MAIL_FROM: 'not an address' }, /MAIL_FROM must be an email address/],
  ] as const) {
    assert.throws(
      () => loadConfig(env),
      (error: Error) =>
        error instanceof ConfigError && message.test(error.message) && !error.message.includes('hunter2'),
    )
  }
})
