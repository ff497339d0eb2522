// The account pages over HTTP, where a browser is not needed to see the rule: the session cookie's attributes,
// its idle and absolute expiry, the first-run link's single use under concurrency, sign-up only when open, a
// disabled account's session, and that no password, session secret or setup link reaches the log.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { ALL_SCOPES } from '../src/platform/auth/scopes.ts'
import { SESSION_IDLE_MS, SESSION_MAX_AGE_MS } from '../src/resources/accounts/sessions.service.ts'
import { captureLogs, describeEachEngine, type TestContext } from './support/harness.ts'
import { newOwner, OWNER_PASSWORD, WebClient } from './support/web-client.ts'

const PASSWORD = OWNER_PASSWORD

/** A signed-in browser of the account with `email`. */
const signIn = (app: App, email: string, password = PASSWORD) => WebClient.signedIn(app, email, password)

const signedIn = async (browser: WebClient) => (await browser.get('/account/keys')).statusCode === 200

async function newAccount(
  ctx: TestContext,
  email = `user-${Math.random().toString(36).slice(2)}@example.com`,
) {
  await newOwner(ctx.app, email)
  return email
}

/** Asserts that the page shows `field` marked invalid, with `message` beside it. */
function assertMarked(body: string, field: string, message: RegExp): void {
  const input = new RegExp(`<input id="field-${field}"[^>]*>`).exec(body)?.[0]
  assert.ok(input, `the page has the field ${field}`)
  assert.match(input, /aria-invalid="true"/, `${field} is marked invalid`)
  assert.match(input, new RegExp(`aria-describedby="[^"]*field-${field}-error`), `${field} names its error`)
  const error = new RegExp(`<p class="field-error" id="field-${field}-error">([^<]*)</p>`).exec(body)?.[1]
  assert.ok(error, `${field} has its message`)
  assert.match(error, message)
  const marked = [...body.matchAll(/<input id="field-([^"]+)"[^>]*aria-invalid="true"/g)].map((m) => m[1])
  assert.deepEqual(marked, [field], 'only that field is marked')
}

/** Asserts a refused form: 400, a page, the field marked. */
function assertRefused(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  field: string,
  message: RegExp,
): void {
  assert.equal(response.statusCode, 400, response.body)
  assert.match(String(response.headers['content-type']), /^text\/html/)
  assertMarked(response.body, field, message)
}

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
    const age = async (browser: WebClient, column: 'last_seen_at' | 'expires_at', by: number) => {
      const rows = await db.kysely.selectFrom('sessions').select(['id', column]).execute()
      const { hashSecret } = await import('../src/platform/auth/secrets.ts')
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
    const again = await new WebClient(app).post('/account/sign-in', { email, password: PASSWORD })
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
    const nulEmail = await new WebClient(app).post('/account/sign-in', {
      email: 'a\u0000@example.com',
      password: PASSWORD,
    })
    assert.equal(nulEmail.statusCode, 400)
    assert.match(String(nulEmail.headers['content-type']), /^text\/html/)
    // Bytes that are not UTF-8: the page says what was wrong with what was sent.
    const browserOut = new WebClient(app)
    const token = await browserOut.csrfToken('/account/sign-in')
    const notUtf8 = await browserOut.send(
      'POST',
      '/account/sign-in',
      `email=a%FF%FE%40example.com&password=x&_csrf=${encodeURIComponent(token)}`,
      { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
    )
    assert.equal(notUtf8.statusCode, 400)
    assert.match(notUtf8.body, /<h1 id="notice-title">This request could not be used<\/h1>/)
    assert.match(notUtf8.body, /A form field is not valid text\. Go back and try again\./)
  })

  test('signing in leads to the home page, or back to the page asked for; /account to the API keys', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const browser = new WebClient(app)
    const out = await browser.get('/account')
    assert.equal(out.statusCode, 303)
    assert.equal(out.headers.location, '/account/sign-in?return_to=%2Faccount')
    const home = await browser.post('/account/sign-in', { email, password: PASSWORD })
    assert.equal(home.statusCode, 303)
    assert.equal(home.headers.location, '/')
    assert.equal((await browser.get('/account')).headers.location, '/account/keys')
    assert.equal((await browser.get('/account/sign-in')).headers.location, '/', 'already signed in')
    const back = await new WebClient(app).post('/account/sign-in', {
      email,
      password: PASSWORD,
      return_to: '/account/password',
    })
    assert.equal(back.headers.location, '/account/password')
    const elsewhere = await new WebClient(app).post('/account/sign-in', {
      email,
      password: PASSWORD,
      return_to: '//evil.example/',
    })
    assert.equal(elsewhere.headers.location, '/')
  })

  test('a bad field of the sign-in form is the page again, 400, that field marked, and counts no failure', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const browser = new WebClient(app)
    for (let i = 0; i < 6; i++) {
      const missing = await browser.post('/account/sign-in', {
        email: '',
        password: PASSWORD,
        return_to: '/account/apps',
      })
      assertRefused(missing, 'email', /^Fill this in\.$/)
      assert.match(missing.body, /name="return_to" value="\/account\/apps"/, 'where to go is kept')
      assert.ok(!missing.body.includes(PASSWORD), 'a password is never shown again')
      const long = await browser.post('/account/sign-in', { email, password: 'x'.repeat(1025) })
      assertRefused(long, 'password', /at most 1024 characters/)
      assert.match(long.body, new RegExp(`id="field-email"[^>]*value="${email}"`), 'the email is kept')
    }
    const unknown = await browser.post('/account/sign-in', { email, password: PASSWORD, admin: 'yes' })
    assert.equal(unknown.statusCode, 400)
    assert.match(unknown.body, /id="form-error">This form has no field named &#34;admin&#34;/)
    // Twelve refused forms counted nothing: the limit is ten failures.
    const right = await browser.post('/account/sign-in', { email, password: PASSWORD })
    assert.equal(right.statusCode, 303)
  })

  test('the API key form: each bad field is marked and nothing is made; a good one shows its secret once', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const browser = await signIn(app, email)
    const accountId = (await app.services.accounts.getByEmail(email)).id
    const post = (form: Record<string, string | string[]>) =>
      browser.post('/account/keys/new', form, '/account/keys')
    const scopesMarked = (body: string, message: RegExp) => {
      const boxes = [...body.matchAll(/<input type="checkbox" name="scopes"[^>]*>/g)].map((m) => m[0])
      assert.equal(boxes.length, ALL_SCOPES.length)
      for (const box of boxes) assert.match(box, /aria-invalid="true" aria-describedby="field-scopes-error"/)
      assert.match(/id="field-scopes-error">([^<]*)</.exec(body)?.[1] ?? '', message)
    }

    const none = await post({ name: 'no scopes' })
    assert.equal(none.statusCode, 400)
    scopesMarked(none.body, /Choose at least one scope/)
    assert.match(none.body, /id="field-name"[^>]*value="no scopes"/, 'the name is kept')
    assert.doesNotMatch(none.body, /name="scopes"[^>]* checked/, 'nothing ticked, as sent')
    const unknown = await post({ name: 'k', scopes: ['files:read', 'admin:all'] })
    assert.equal(unknown.statusCode, 400)
    scopesMarked(unknown.body, /Choose at least one scope from the list/)
    assert.match(unknown.body, /value="files:read" checked/, 'what was ticked stays ticked')
    assertRefused(
      await post({ name: 'k', scopes: 'files:read', expires: '2030-02-30' }),
      'expires',
      /YYYY-MM-DD/,
    )
    assertRefused(await post({ name: 'k', scopes: 'files:read', expires: 'soon' }), 'expires', /YYYY-MM-DD/)
    assertRefused(
      await post({ name: 'k', scopes: 'files:read', expires: '2020-01-01' }),
      'expires',
      /Choose today or a later day/,
    )
    // Every problem at once: an ended day is said with the others.
    const both = await post({ name: 'x'.repeat(101), scopes: 'files:read', expires: '2020-01-01' })
    assert.match(both.body, /id="field-name"[^>]*aria-invalid="true"/)
    assert.match(both.body, /id="field-expires"[^>]*aria-invalid="true"/)
    assertRefused(await post({ name: 'x'.repeat(101), scopes: 'files:read' }), 'name', /at most 100/)
    assertRefused(await post({ name: '   ', scopes: 'files:read' }), 'name', /1 to 100 characters/)
    assertRefused(await post({ scopes: 'files:read' }), 'name', /Fill this in/)
    assert.deepEqual(await app.services.apiKeys.list(accountId), [], 'no key was made')

    // Made, then a redirect: a reload or Back sends nothing again. The secret follows it sealed, and is shown once.
    // The day chosen works to its end, in the zone the form was drawn in (the browser's, kept in a cookie).
    browser.cookies.set('coffer_tz', encodeURIComponent('Asia/Tokyo'))
    const form = await browser.get('/account/keys')
    assert.match(form.body, /<input type="hidden" name="timeZone" value="Asia\/Tokyo">/)
    assert.match(form.body, /stops working at the end of this day, Asia\/Tokyo time\./)
    const made = await post({
      name: 'backup',
      scopes: ['files:read', 'files:write'],
      expires: '2999-01-01',
      timeZone: 'Asia/Tokyo',
    })
    assert.equal(made.statusCode, 303)
    assert.equal(made.headers.location, '/account/keys')
    const shown = await browser.get('/account/keys')
    assert.equal(shown.statusCode, 200)
    assert.equal(shown.headers['cache-control'], 'no-store')
    const secret = /id="new-key-secret">([^<]+)</.exec(shown.body)?.[1]
    assert.match(secret ?? '', /^coffer_/)
    assert.ok(
      !made.headers['set-cookie']?.toString().includes((secret as string).slice('coffer_'.length)),
      'the cookie does not carry the secret readable',
    )
    const reloaded = await browser.get('/account/keys')
    assert.doesNotMatch(reloaded.body, /new-key-secret/, 'shown once')
    assert.equal(
      (await app.services.apiKeys.list(accountId)).length,
      1,
      'one key, however often the page loads',
    )
    // A note sealed for one account opens for no other.
    const sealed = await app.services.apiKeys.notes.seal(accountId, { keyId: 'x', secret: 'y' })
    assert.deepEqual(await app.services.apiKeys.notes.open(accountId, sealed), { keyId: 'x', secret: 'y' })
    assert.equal(await app.services.apiKeys.notes.open('acc_other', sealed), undefined)
    assert.equal(await app.services.apiKeys.notes.open(accountId, `${sealed}x`), undefined)
    const [key] = await app.services.apiKeys.list(accountId)
    assert.deepEqual(key?.scopes, ['files:read', 'files:write'])
    // Tokyo is 9 hours ahead of UTC: its Jan 2 starts at 15:00 UTC on Jan 1.
    assert.equal(key?.expiresAt, Date.parse('2999-01-01T15:00:00Z'))
    assert.match(
      (await browser.get('/account/keys')).body,
      /Works until<\/dt><dd><time datetime="2999-01-01T15:00:00.000Z" data-local="until" title="Asia\/Tokyo time">Jan 1, 2999<\/time>/,
    )
  })

  test('the password form: each bad field is marked and the password stays', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const browser = await signIn(app, email)
    const post = (form: Record<string, string>) => browser.post('/account/password', form)
    const next = `${PASSWORD} and more`
    assertRefused(
      await post({ current: PASSWORD, password: 'short', confirm: 'short' }),
      'password',
      /at least 8/,
    )
    assertRefused(
      await post({ current: PASSWORD, password: next, confirm: 'other' }),
      'confirm',
      /not the same/,
    )
    assertRefused(await post({ current: 'not it', password: next, confirm: next }), 'current', /not right/)
    assertRefused(await post({ password: next, confirm: next }), 'current', /Fill this in/)
    assert.ok(await app.services.accounts.verifyPassword(email, PASSWORD), 'the password is unchanged')
    assert.equal(await signedIn(browser), true)
  })

  test('failed sign-ins are limited through the accounts service: per account and address, then per address', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const browser = new WebClient(app)
    for (let i = 0; i < 10; i++) {
      const wrong = await postFrom(browser, '10.1.0.1', '/account/sign-in', { email, password: `wrong ${i}` })
      assert.equal(wrong.statusCode, 401)
      assert.match(wrong.body, /The email or the password is not right/)
    }
    const limited = await postFrom(browser, '10.1.0.1', '/account/sign-in', { email, password: PASSWORD })
    assert.equal(limited.statusCode, 429, 'refused before the password is checked')
    assert.ok(Number(limited.headers['retry-after']) >= 1)
    assert.match(limited.body, /id="form-error">Too many attempts\. Try again in \d+ minutes?\./)
    assert.doesNotMatch(String(limited.headers['set-cookie'] ?? ''), /coffer_session/)
    // The guesser's address is locked out of the account, not its owner, from another address.
    const ownSignIn = await postFrom(new WebClient(app), '10.1.0.9', '/account/sign-in', {
      email,
      password: PASSWORD,
    })
    assert.equal(ownSignIn.statusCode, 303, 'the owner signs in from elsewhere')
    // And sees the failed sign-ins, with the address they came from, on the password page.
    const page = (await (await WebClient.signedIn(app, email)).get('/account/password')).body
    assert.match(page, /<h2>Failed sign-ins<\/h2>/)
    assert.equal(page.match(/<code>10\.1\.0\.1<\/code>/g)?.length, 10, 'the latest ten, with their address')

    // Thirty failures from one address, each for another email, known or not: the address is then refused
    // for every account, and the accounts are not.
    const other = await newAccount(ctx())
    for (let i = 0; i < 30; i++) {
      const wrong = await postFrom(browser, '10.2.0.1', '/account/sign-in', {
        email: `nobody-${i}@example.com`,
        password: 'wrong',
      })
      assert.equal(wrong.statusCode, 401, `failure ${i}`)
    }
    const fromThere = await postFrom(browser, '10.2.0.1', '/account/sign-in', {
      email: other,
      password: PASSWORD,
    })
    assert.equal(fromThere.statusCode, 429)
    const fromElsewhere = await postFrom(new WebClient(app), '10.3.0.1', '/account/sign-in', {
      email: other,
      password: PASSWORD,
    })
    assert.equal(fromElsewhere.statusCode, 303)
    const quiet = (await (await WebClient.signedIn(app, other)).get('/account/password')).body
    assert.match(quiet, /No wrong password was given for your account in the last 30 days\./)
  })

  test('guesses at the same moment cannot overrun a limit; sign-ins that succeed count nothing', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const { accounts } = app.services
    // Nine failures, then sign-ins with the right password: each takes its place while its password is
    // checked, and gives it back.
    for (let i = 0; i < 9; i++) {
      assert.equal(
        (await accounts.signIn({ email, password: `wrong ${i}`, client: 'ip:10.7.0.1' })).kind,
        'wrong',
      )
    }
    for (let i = 0; i < 5; i++) {
      assert.equal((await accounts.signIn({ email, password: PASSWORD, client: 'ip:10.7.0.1' })).kind, 'ok')
    }
    // Twenty-five guesses at once from an address with one failure left: one is checked, the rest wait,
    // however their password checks interleave.
    const guesses = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        accounts.signIn({ email, password: `at once ${i}`, client: 'ip:10.7.0.1' }),
      ),
    )
    assert.deepEqual(
      guesses.map((guess) => guess.kind).sort(),
      ['wrong', ...Array(24).fill('throttled')].sort(),
    )
  })

  test('guesses spread over many addresses meet the account’s own, looser limit: 100', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const started = performance.now()
    const guesses = Array.from({ length: 100 }, (_, i) =>
      app.services.accounts.signIn({ email, password: `wrong ${i}`, client: `ip:10.4.${i >> 8}.${i & 255}` }),
    )
    for (const guess of await Promise.all(guesses)) assert.equal(guess.kind, 'wrong')
    // The account's bucket gives back one guess every 36 s: on a machine slow enough to take that long over the
    // 100 (each checks a password hash), those come back first.
    const refilled = Math.floor((performance.now() - started) / 36_000)
    for (let i = 0; i < refilled; i++) {
      const late = await app.services.accounts.signIn({ email, password: 'late', client: `ip:10.6.0.${i}` })
      assert.equal(late.kind, 'wrong')
    }
    const next = await app.services.accounts.signIn({ email, password: PASSWORD, client: 'ip:10.5.0.1' })
    assert.equal(next.kind, 'throttled', 'the next, from any address, waits')
  })

  test('strangers who use up the account’s limit do not lock out the owner’s browser, from any address', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    // The owner signed in once from this browser: it keeps a token that names the account, for sign-ins only.
    const owner = new WebClient(app)
    const first = await postFrom(owner, '10.7.0.1', '/account/sign-in', { email, password: PASSWORD })
    assert.equal(first.statusCode, 303)
    owner.keepCookies(first)
    const device = [first.headers['set-cookie'] ?? []].flat().join('\n')
    assert.match(
      device,
      /coffer_device=acc_[^;]+; Max-Age=31536000; Path=\/account\/sign-in; HttpOnly; SameSite=Lax/,
    )
    await owner.post('/account/sign-out', {}, '/account/keys')
    assert.equal(await signedIn(owner), false)

    // 110 wrong passwords from 11 addresses (ten IPv6 /64s and one IPv4): the account's own limit, 100, is used
    // up, and the last ten are refused unchecked.
    const strangers = [...Array.from({ length: 10 }, (_, i) => `2001:db8:${i}::1`), '10.8.0.1']
    const answers: number[] = []
    for (const address of strangers) {
      for (let i = 0; i < 10; i++) {
        const wrong = await postFrom(new WebClient(app), address, '/account/sign-in', {
          email,
          password: `x${i}`,
        })
        answers.push(wrong.statusCode)
      }
    }
    assert.deepEqual(answers.slice(0, 100), Array(100).fill(401))
    assert.ok(answers.slice(100).includes(429))
    // The account's allowance gives back a guess every 36 s: on a slow machine some come back while this test
    // goes on, so each check of a refusal below first uses up what came back, from addresses never seen.
    let lateGuesses = 0
    const useUpWhatCameBack = async () => {
      for (;;) {
        const i = lateGuesses++
        const late = await postFrom(
          new WebClient(app),
          `10.8.${1 + (i >> 8)}.${i & 255}`,
          '/account/sign-in',
          {
            email,
            password: 'y',
          },
        )
        if (late.statusCode === 429) return
        assert.equal(late.statusCode, 401)
      }
    }
    await useUpWhatCameBack()
    const stranger = await postFrom(new WebClient(app), '10.9.0.1', '/account/sign-in', {
      email,
      password: PASSWORD,
    })
    assert.equal(stranger.statusCode, 429, 'a new browser waits, the right password or not')
    // The owner's browser, from an address of the day, is let in with the right password.
    const back = await postFrom(owner, '192.0.2.44', '/account/sign-in', { email, password: PASSWORD })
    assert.equal(back.statusCode, 303, back.body)
    owner.keepCookies(back)
    assert.equal(await signedIn(owner), true)
    // A token is the account's alone: another account's browser is a stranger to this one.
    const other = await newAccount(ctx())
    const otherBrowser = new WebClient(app)
    const theirs = await postFrom(otherBrowser, '10.7.0.2', '/account/sign-in', {
      email: other,
      password: PASSWORD,
    })
    assert.equal(theirs.statusCode, 303)
    otherBrowser.keepCookies(theirs)
    await otherBrowser.post('/account/sign-out', {}, '/account/keys')
    await useUpWhatCameBack()
    const elsewhere = await postFrom(otherBrowser, '10.7.0.2', '/account/sign-in', {
      email,
      password: PASSWORD,
    })
    assert.equal(elsewhere.statusCode, 429)
    // Nor does a token made up, or tampered with, help.
    await useUpWhatCameBack()
    const forged = await app.services.accounts.signIn({
      email,
      password: PASSWORD,
      client: 'ip:10.9.0.2',
      device: device
        .replace(/^.*coffer_device=([^;]+);.*$/s, '$1')
        .replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
    })
    assert.equal(forged.kind, 'throttled')
  })

  test('every form of the account pages refuses a post without its CSRF token, and changes nothing', async () => {
    const { app } = ctx()
    const email = await newAccount(ctx())
    const browser = await signIn(app, email)
    const accountId = (await app.services.accounts.getByEmail(email)).id
    const key = await app.services.apiKeys.create({ accountId, name: 'kept', scopes: ['files:read'] })
    const forms: [string, Record<string, string>][] = [
      ['/account/sign-in', { email, password: PASSWORD }],
      ['/account/sign-out', {}],
      ['/account/sign-out-everywhere', {}],
      ['/account/keys/new', { name: 'forged', scopes: 'files:read' }],
      [`/account/keys/${key.key.id}/revoke`, {}],
      ['/account/apps/grant/revoke', {}],
      ['/account/password', { current: PASSWORD, password: 'forged password', confirm: 'forged password' }],
      [
        '/account/setup/coffer_setup_x',
        { email: 'forged@example.com', password: PASSWORD, confirm: PASSWORD },
      ],
    ]
    for (const [url, form] of forms) {
      for (const token of [{ _csrf: 'forged' }, {}] as Record<string, string>[]) {
        const body = new URLSearchParams({ ...form, ...token }).toString()
        const response = await browser.send('POST', url, body, {
          accept: 'text/html',
          'content-type': 'application/x-www-form-urlencoded',
        })
        assert.equal(response.statusCode, 403, `${url} ${JSON.stringify(token)}`)
        assert.match(String(response.headers['content-type']), /^text\/html/)
      }
    }
    const keys = await app.services.apiKeys.list(accountId)
    assert.deepEqual(
      keys.map((k) => [k.name, k.revokedAt]),
      [['kept', null]],
    )
    assert.ok(await app.services.accounts.verifyPassword(email, PASSWORD))
    assert.equal(await signedIn(browser), true, 'still signed in')
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

    // A bad field shows the form again, marked, and uses nothing up.
    const tooShort = await new WebClient(app).post(`/account/setup/${secret}`, {
      email: 'one@example.com',
      password: 'short',
      confirm: 'short',
    })
    assertRefused(tooShort, 'password', /at least 8 characters/)
    assert.match(tooShort.body, /id="field-email"[^>]*value="one@example.com"/)
    const badEmail = await new WebClient(app).post(`/account/setup/${secret}`, {
      email: 'not an email',
      password: PASSWORD,
      confirm: PASSWORD,
    })
    assertRefused(badEmail, 'email', /is not a valid email address/)
    assert.equal(await app.services.setup.pending(), true)

    const first = new WebClient(app)
    const second = new WebClient(app)
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
    assert.equal([a, b].find((r) => r.statusCode === 303)?.headers.location, '/', 'to the home page')
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
      const browser = new WebClient(app)
      const created = await browser.post('/account/sign-up', {
        email: 'new@example.com',
        password: PASSWORD,
        confirm: PASSWORD,
      })
      assert.equal(created.statusCode, 303)
      assert.equal(await signedIn(browser), true)
      const taken = await new WebClient(app).post('/account/sign-up', {
        email: 'NEW@example.com',
        password: PASSWORD,
        confirm: PASSWORD,
      })
      assert.equal(taken.statusCode, 400)
      assert.match(
        taken.body,
        /id="field-email-error">An account with the email new@example.com already exists/,
      )
      const mismatch = await new WebClient(app).post('/account/sign-up', {
        email: 'other@example.com',
        password: PASSWORD,
        confirm: 'something else',
      })
      assertRefused(mismatch, 'confirm', /The two passwords are not the same/)
      assertRefused(
        await new WebClient(app).post('/account/sign-up', {
          email: 'x@',
          password: PASSWORD,
          confirm: PASSWORD,
        }),
        'email',
        /is not a valid email address/,
      )
      assertRefused(
        await new WebClient(app).post('/account/sign-up', {
          email: 'short@example.com',
          password: 'short',
          confirm: 'short',
        }),
        'password',
        /at least 8 characters/,
      )
      assert.equal((await app.services.accounts.list()).length, 1)
    })

    test('new accounts are limited per address through the accounts service', async () => {
      const { app } = ctx()
      const browser = new WebClient(app)
      const signUp = (n: number, address: string) =>
        postFrom(browser, address, '/account/sign-up', {
          email: `many-${n}@example.com`,
          password: PASSWORD,
          confirm: PASSWORD,
          return_to: '/account/apps',
        })
      for (let n = 0; n < 5; n++) {
        const made = await signUp(n, '10.4.0.1')
        assert.equal(made.statusCode, 303)
        assert.equal(made.headers.location, '/account/apps')
      }
      const limited = await signUp(5, '10.4.0.1')
      assert.equal(limited.statusCode, 429)
      assert.ok(Number(limited.headers['retry-after']) >= 60)
      assert.match(limited.body, /id="form-error">Too many attempts\. Try again in \d+ minutes?\./)
      assert.match(limited.body, /id="field-email"[^>]*value="many-5@example.com"/)
      assert.equal(await app.services.accounts.findByEmail('many-5@example.com'), undefined)
      assert.equal((await signUp(5, '10.5.0.1')).statusCode, 303)
    })
  },
  { env: { SIGNUP: 'open' } },
)

describeEachEngine(
  'sign-up when SIGNUP=open for SIGNUP_EMAIL_DOMAINS',
  (ctx) => {
    test('an address at a listed domain makes its account; another is told which domains are taken', async () => {
      const { app } = ctx()
      const made = await new WebClient(app).post('/account/sign-up', {
        email: 'someone@Example.org',
        password: PASSWORD,
        confirm: PASSWORD,
      })
      assert.equal(made.statusCode, 303)
      assert.equal((await app.services.accounts.getByEmail('someone@example.org')).role, 'member')
      assertRefused(
        await new WebClient(app).post('/account/sign-up', {
          email: 'someone@elsewhere.com',
          password: PASSWORD,
          confirm: PASSWORD,
        }),
        'email',
        /Accounts on this server are for addresses at example\.org, team\.example\.com\./,
      )
      // A subdomain is not its parent: the list names each domain taken.
      assertRefused(
        await new WebClient(app).post('/account/sign-up', {
          email: 'someone@sub.example.org',
          password: PASSWORD,
          confirm: PASSWORD,
        }),
        'email',
        /for addresses at/,
      )
      assert.equal(await app.services.accounts.findByEmail('someone@elsewhere.com'), undefined)
    })
  },
  { env: { SIGNUP: 'open', SIGNUP_EMAIL_DOMAINS: 'example.org, @Team.Example.com' } },
)

describeEachEngine('sign-up when SIGNUP=invite, the default', (ctx) => {
  test('there is no sign-up page, and the sign-in page offers none', async () => {
    const { app } = ctx()
    assert.equal((await new WebClient(app).get('/account/sign-up')).statusCode, 404)
    assert.doesNotMatch((await new WebClient(app).get('/account/sign-in')).body, /Create one/)
  })
})

describeEachEngine(
  'secure cookies behind https',
  (ctx) => {
    test('with an https PUBLIC_URL the session cookie is __Host- and Secure', async () => {
      const { app } = ctx()
      await app.services.accounts.create({ email: 'tls@example.com', password: PASSWORD })
      const browser = new WebClient(app)
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
      const browser = new WebClient(app)
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
