// Protected share links, Coffer's extension of POST and PATCH /shares: a password the public page asks for
// before it shows anything, with a pass (a signed, HttpOnly, path-scoped cookie) for the browser that gave
// it and limited guesses; and a download limit that holds exactly, and that ranges cannot step around.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { App } from '../src/app.ts'
import { PAGE_CSP } from '../src/platform/web/web.ts'
import {
  assertError,
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  ENGINES,
  type TestAccount,
  type TestContext,
} from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const NAME = 'Board minutes 2026.txt'
const CONTENT = 'the minutes of the board'

async function protectedShare(c: TestContext, a: TestAccount, extra: Record<string, unknown>) {
  const file = await createFile(c, a.id, { name: NAME, content: CONTENT })
  const res = await call(c.app, 'POST', '/api/v1/shares', {
    token: a.token,
    body: { fileId: file.id, ...extra },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  const page = new URL(res.body.data.publicUrl).pathname
  return {
    id: res.body.data.id as string,
    fileId: file.id,
    page,
    download: `${page}/download`,
    body: res.body.data,
  }
}

const inject = (
  app: App,
  method: 'GET' | 'POST' | 'HEAD',
  url: string,
  options: {
    cookie?: string
    form?: Record<string, string>
    ip?: string
    headers?: Record<string, string>
  } = {},
) =>
  app.inject({
    method,
    url,
    remoteAddress: options.ip ?? '127.0.0.1',
    headers: {
      ...options.headers,
      ...(options.cookie ? { cookie: options.cookie } : {}),
      ...(options.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    payload: options.form ? new URLSearchParams(options.form).toString() : undefined,
  })

/** The name=value of the Set-Cookie header, asserting its attributes. */
function passCookie(setCookie: unknown, path: string): string {
  const header = String(Array.isArray(setCookie) ? setCookie[0] : setCookie)
  assert.match(header, /; HttpOnly/i)
  assert.match(header, /; SameSite=Lax/i)
  assert.match(header, new RegExp(`; Path=${path.replaceAll('/', '\\/')}(;|$)`))
  assert.match(header, /; Max-Age=\d+/)
  return header.split(';')[0] as string
}

function assertShowsNothing(body: string, what: string, fileId: string) {
  for (const secret of [NAME, CONTENT, fileId]) assert.ok(!body.includes(secret), `${what} shows ${secret}`)
}

async function counts(c: TestContext, a: TestAccount, shareId: string) {
  const res = await call(c.app, 'GET', `/api/v1/shares/${shareId}`, { token: a.token })
  return { views: res.body.data.viewCount as number, downloads: res.body.data.downloadCount as number }
}

describeEachEngine('protected share links', (ctx) => {
  test('a password: set, changed and removed through the API, never returned, shown as hasPassword', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const share = await protectedShare(c, a, { password: 'correct horse', maxDownloads: 3 })
    assert.equal(share.body.hasPassword, true)
    assert.equal(share.body.maxDownloads, 3)
    assert.ok(!JSON.stringify(share.body).includes('correct horse'))
    const stored = await c.db.kysely
      .selectFrom('shares')
      .select('password_hash')
      .where('id', '=', share.id)
      .executeTakeFirstOrThrow()
    assert.match(String(stored.password_hash), /^scrypt\$/)

    const patch = (body: unknown) =>
      call(c.app, 'PATCH', `/api/v1/shares/${share.id}`, { token: a.token, body })
    assert.equal((await patch({ maxDownloads: null })).body.data.maxDownloads, null)
    assert.equal((await patch({ password: null })).body.data.hasPassword, false)
    assert.equal((await patch({ password: 'another one' })).body.data.hasPassword, true)
    // Reactivating keeps the password unless the body says otherwise.
    await patch({ isActive: false })
    const reactivated = await call(c.app, 'POST', '/api/v1/shares', {
      token: a.token,
      body: { fileId: share.fileId },
    })
    assert.equal(reactivated.body.data.hasPassword, true)
    const listed = await call(c.app, 'GET', '/api/v1/shares', { token: a.token })
    assert.equal(listed.body.data[0].hasPassword, true)

    for (const [body, message] of [
      [{ password: 'abc' }, /"password" must be at least 4 characters long/],
      [{ password: chars(257) }, /"password" must be at most 256 characters/],
      [{ password: 12345 }, /"password" must be a string/],
      [{ maxDownloads: 0 }, /"maxDownloads" must be at least 1\./],
      [{ maxDownloads: 1_000_000_001 }, /"maxDownloads" must be at most 1000000000\./],
      [{ maxDownloads: 1.5 }, /"maxDownloads" must be an integer/],
    ] as const) {
      assert.match(assertError(await patch(body), 400, 'invalid_request'), message, JSON.stringify(body))
      const file = await createFile(c, a.id)
      const created = await call(c.app, 'POST', '/api/v1/shares', {
        token: a.token,
        body: { fileId: file.id, ...body },
      })
      assert.match(assertError(created, 400, 'invalid_request'), message, JSON.stringify(body))
    }
  })

  test('a protected page shows nothing before its password; the right one gives this browser a pass', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const share = await protectedShare(c, a, { password: 'correct horse' })

    const form = await inject(c.app, 'GET', share.page)
    assert.equal(form.statusCode, 200)
    assert.equal(form.headers['content-security-policy'], PAGE_CSP)
    assert.match(form.body, /This link is protected/)
    assert.match(form.body, /<form method="post"/)
    assertShowsNothing(form.body, 'the password form', share.fileId)
    for (const path of [share.download, `${share.page}/preview`]) {
      const refused = await inject(c.app, 'GET', path)
      assert.equal(refused.statusCode, 403, path)
      assertShowsNothing(refused.body, path, share.fileId)
    }

    const wrong = await inject(c.app, 'POST', share.page, { form: { password: 'wrong horse' } })
    assert.equal(wrong.statusCode, 403)
    assert.match(wrong.body, /That is not the password of this link/)
    assert.match(wrong.body, /aria-invalid="true"/)
    assert.equal(wrong.headers['set-cookie'], undefined)
    assertShowsNothing(wrong.body, 'a wrong password', share.fileId)
    assert.deepEqual(await counts(c, a, share.id), { views: 0, downloads: 0 })

    const right = await inject(c.app, 'POST', share.page, { form: { password: 'correct horse' } })
    assert.equal(right.statusCode, 303)
    assert.equal(right.headers.location, share.page)
    const cookie = passCookie(right.headers['set-cookie'], share.page)
    assert.ok(!cookie.includes('correct horse'))

    const opened = await inject(c.app, 'GET', share.page, { cookie })
    assert.equal(opened.statusCode, 200)
    assert.ok(opened.body.includes(NAME))
    const bytes = await inject(c.app, 'GET', share.download, { cookie })
    assert.equal(bytes.statusCode, 200)
    assert.equal(bytes.body, CONTENT)
    assert.deepEqual(await counts(c, a, share.id), { views: 1, downloads: 1 })

    // A pass is for its own link, and only while the password is the one it was given for.
    const other = await protectedShare(c, a, { password: 'correct horse' })
    assert.equal((await inject(c.app, 'GET', other.download, { cookie })).statusCode, 403)
    const forged = `${cookie.split('=')[0]}=${Math.floor(Date.now() / 1000) + 3600}.${chars(43, 'A')}`
    assert.equal((await inject(c.app, 'GET', share.download, { cookie: forged })).statusCode, 403)
    await call(c.app, 'PATCH', `/api/v1/shares/${share.id}`, {
      token: a.token,
      body: { password: 'new password' },
    })
    const after = await inject(c.app, 'GET', share.page, { cookie })
    assert.match(after.body, /This link is protected/)
    assertShowsNothing(after.body, 'after a new password', share.fileId)
    await call(c.app, 'PATCH', `/api/v1/shares/${share.id}`, { token: a.token, body: { password: null } })
    assert.ok((await inject(c.app, 'GET', share.page)).body.includes(NAME), 'open again without a password')
  })

  test('password guesses are limited per link and per address, before any is checked', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const share = await protectedShare(c, a, { password: 'correct horse' })
    for (let i = 0; i < 10; i++) {
      const guess = await inject(c.app, 'POST', share.page, {
        form: { password: `guess ${i}` },
        ip: '10.0.0.1',
      })
      assert.equal(guess.statusCode, 403, `guess ${i}`)
    }
    const limited = await inject(c.app, 'POST', share.page, {
      form: { password: 'correct horse' },
      ip: '10.0.0.1',
    })
    assert.equal(limited.statusCode, 429)
    assert.ok(Number(limited.headers['retry-after']) >= 1)
    assert.match(limited.body, /Too many passwords were tried for this link/)
    assert.equal(limited.headers['set-cookie'], undefined)
    // The link's own limit holds for every address.
    const elsewhere = await inject(c.app, 'POST', share.page, {
      form: { password: 'correct horse' },
      ip: '10.0.0.2',
    })
    assert.equal(elsewhere.statusCode, 429)
    // The guesses spent on that link leave the address its other links.
    const other = await protectedShare(c, a, { password: 'correct horse' })
    assert.equal(
      (await inject(c.app, 'POST', other.page, { form: { password: 'correct horse' }, ip: '10.0.0.1' }))
        .statusCode,
      303,
    )

    // The address's own, looser limit holds for every link: thirty guesses spread over links.
    const links = await Promise.all(
      Array.from({ length: 5 }, () => protectedShare(c, a, { password: 'correct horse' })),
    )
    for (let i = 0; i < 30; i++) {
      const link = links[i % links.length] as (typeof links)[number]
      assert.equal(
        (await inject(c.app, 'POST', link.page, { form: { password: 'nope' }, ip: '10.0.0.3' })).statusCode,
        403,
      )
    }
    const fresh = await protectedShare(c, a, { password: 'correct horse' })
    assert.equal(
      (await inject(c.app, 'POST', fresh.page, { form: { password: 'correct horse' }, ip: '10.0.0.3' }))
        .statusCode,
      429,
    )
    assert.equal(
      (await inject(c.app, 'POST', fresh.page, { form: { password: 'correct horse' }, ip: '10.0.0.4' }))
        .statusCode,
      303,
    )
  })

  test('a bad password form is the page again, 400, the field marked, and is no guess', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const share = await protectedShare(c, a, { password: 'correct horse' })
    for (let i = 0; i < 6; i++) {
      for (const form of [{}, { password: '' }, { password: chars(257) }] as Record<string, string>[]) {
        const refused = await inject(c.app, 'POST', share.page, { form, ip: '10.6.0.1' })
        assert.equal(refused.statusCode, 400, JSON.stringify(form))
        assert.match(String(refused.headers['content-type']), /^text\/html/)
        assert.match(refused.body, /<input id="field-password"[^>]*aria-invalid="true"/)
        assert.match(
          refused.body,
          /id="field-password-error">(Enter the password you were given\.|Use at most 256)/,
        )
        assert.equal(refused.headers['set-cookie'], undefined)
        assertShowsNothing(refused.body, 'a refused form', share.fileId)
      }
    }
    const unknownField = await inject(c.app, 'POST', share.page, {
      form: { password: 'correct horse', more: 'x' },
      ip: '10.6.0.1',
    })
    assert.equal(unknownField.statusCode, 400)
    assert.match(unknownField.body, /id="form-error">This form has no field named/)
    // Eighteen refused forms were no guesses: the limit is ten.
    const right = await inject(c.app, 'POST', share.page, {
      form: { password: 'correct horse' },
      ip: '10.6.0.1',
    })
    assert.equal(right.statusCode, 303)
    // A link that does not work is its own page whatever the form; a link without a password, its page.
    assert.equal((await inject(c.app, 'POST', '/s/nosuchlink', { form: {} })).statusCode, 404)
    const open = await protectedShare(c, a, {})
    const unprotected = await inject(c.app, 'POST', open.page, { form: {} })
    assert.equal(unprotected.statusCode, 303)
    assert.equal(unprotected.headers.location, open.page)
  })

  test('the rules are those of the public-shares service: guesses and downloads through it count on the pages', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const { publicShares } = c.app.services
    const share = await protectedShare(c, a, { password: 'correct horse', maxDownloads: 3 })
    const publicId = share.page.split('/').pop() as string
    for (let i = 0; i < 10; i++) {
      const guess = await publicShares.unlock({
        target: 'file',
        publicId,
        password: `guess ${i}`,
        client: 'ip:10.7.0.1',
      })
      assert.equal(guess.kind, 'wrong')
    }
    const limited = await inject(c.app, 'POST', share.page, {
      form: { password: 'correct horse' },
      ip: '10.7.0.2',
    })
    assert.equal(limited.statusCode, 429, "the link's own limit, counted by the service")
    const throttled = await publicShares.unlock({
      target: 'file',
      publicId,
      password: 'correct horse',
      client: 'ip:10.7.0.3',
    })
    assert.equal(throttled.kind, 'throttled')
    assert.ok(throttled.kind === 'throttled' && throttled.retryAfterSeconds >= 1)

    const state = await publicShares.open(publicId)
    assert.ok(state.kind === 'open')
    const { link } = state
    const size = Buffer.byteLength(CONTENT)
    const ask = (start: number, downloadPass?: string, length = size - start) =>
      publicShares.admitDownload(link, { start, length, downloadPass })
    assert.deepEqual(await ask(4), { kind: 'start-from-beginning' })
    const first = await ask(0, undefined, 1)
    assert.ok(first.kind === 'admitted' && first.pass)
    assert.equal(first.length, 1)
    // The pass holds the rest of the file: given once, then no more.
    const rest = await ask(4, first.pass.token)
    assert.ok(rest.kind === 'admitted')
    assert.equal(rest.length, size - 4)
    const more = await ask(1, first.pass.token)
    assert.ok(more.kind === 'admitted')
    assert.equal(more.length, 3, 'what the pass had left')
    assert.deepEqual(await ask(1, first.pass.token), { kind: 'start-from-beginning' })
    // Bytes given back (a client that went away) may be asked for again.
    await rest.unsent?.(10)
    const again = await ask(1, first.pass.token)
    assert.ok(again.kind === 'admitted')
    assert.equal(again.length, 10)
    assert.deepEqual(await counts(c, a, share.id), { views: 0, downloads: 1 })
    await ask(0)
    await ask(0)
    assert.deepEqual(await ask(0), { kind: 'exhausted' })
    const page = await inject(c.app, 'GET', share.download)
    assert.equal(page.statusCode, 410)
    assert.deepEqual(await counts(c, a, share.id), { views: 0, downloads: 3 })
  })

  test('a download limit: exact under concurrency, then 410 pages; ranges past byte 0 only with a granted download', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const share = await protectedShare(c, a, { maxDownloads: 5 })
    const answers = await Promise.all(Array.from({ length: 40 }, () => inject(c.app, 'GET', share.download)))
    const statuses = answers.map((answer) => answer.statusCode).sort()
    assert.deepEqual(statuses, [...Array(5).fill(200), ...Array(35).fill(410)])
    for (const answer of answers.filter((x) => x.statusCode === 200)) assert.equal(answer.body, CONTENT)
    for (const answer of answers.filter((x) => x.statusCode === 410)) {
      assert.match(answer.body, /downloaded as many times as its owner allowed/)
      assertShowsNothing(answer.body, 'an exhausted download', share.fileId)
    }
    assert.deepEqual(await counts(c, a, share.id), { views: 0, downloads: 5 })
    const page = await inject(c.app, 'GET', share.page)
    assert.equal(page.statusCode, 410)
    assertShowsNothing(page.body, 'an exhausted page', share.fileId)
    assert.deepEqual(await counts(c, a, share.id), { views: 0, downloads: 5 })
    // Raising the limit opens the link again.
    await call(c.app, 'PATCH', `/api/v1/shares/${share.id}`, { token: a.token, body: { maxDownloads: 7 } })

    // A range that skips byte 0 needs the pass of a download this browser was granted.
    const skipping = await inject(c.app, 'GET', share.download, { headers: { range: 'bytes=4-' } })
    assert.equal(skipping.statusCode, 403)
    assert.doesNotMatch(skipping.body, /minutes/)
    const start = await inject(c.app, 'GET', share.download, { headers: { range: 'bytes=0-3' } })
    assert.equal(start.statusCode, 206)
    const cookie = passCookie(start.headers['set-cookie'], share.download)
    const rest = await inject(c.app, 'GET', share.download, { headers: { range: 'bytes=4-' }, cookie })
    assert.equal(rest.statusCode, 206)
    assert.equal(rest.body, CONTENT.slice(4))
    assert.deepEqual(await counts(c, a, share.id), { views: 0, downloads: 6 })
    // HEAD sends no bytes and is always answered.
    assert.equal((await inject(c.app, 'HEAD', share.download)).statusCode, 200)
  })

  test('a download pass covers the bytes of one download: a range of the first byte does not open the file to every range', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const share = await protectedShare(c, a, { maxDownloads: 3 })
    const size = Buffer.byteLength(CONTENT)
    const first = await inject(c.app, 'GET', share.download, { headers: { range: 'bytes=0-0' } })
    assert.equal(first.statusCode, 206)
    const cookie = passCookie(first.headers['set-cookie'], share.download)
    // The rest of the file, once; then every further range is refused, from any address.
    const rest = await inject(c.app, 'GET', share.download, { headers: { range: 'bytes=1-' }, cookie })
    assert.equal(rest.statusCode, 206)
    assert.equal(rest.body, CONTENT.slice(1))
    for (let i = 0; i < 20; i++) {
      const again = await inject(c.app, 'GET', share.download, {
        headers: { range: 'bytes=1-' },
        cookie,
        ip: `10.9.0.${i + 1}`,
      })
      assert.equal(again.statusCode, 403, `range ${i + 1} after the whole file`)
    }
    assert.deepEqual(await counts(c, a, share.id), { views: 0, downloads: 1 })

    // A player seeking within one download: ranges go on while the pass has bytes, the last one cut to what
    // is left (a 206 that says so), and the sum of their bytes is the file's size.
    const second = await inject(c.app, 'GET', share.download, { headers: { range: 'bytes=0-9' } })
    const seeking = passCookie(second.headers['set-cookie'], share.download)
    let received = 10
    const seeks = ['bytes=20-', 'bytes=5-9', 'bytes=10-']
    for (const range of seeks) {
      const answer = await inject(c.app, 'GET', share.download, { headers: { range }, cookie: seeking })
      assert.equal(answer.statusCode, 206, range)
      const [from, to] = (/^bytes (\d+)-(\d+)\/\d+$/.exec(String(answer.headers['content-range'])) ?? [])
        .slice(1)
        .map(Number)
      assert.equal(answer.body, CONTENT.slice(from, (to as number) + 1), range)
      received += answer.body.length
    }
    assert.equal(received, size, 'the pass gave the bytes of one download, no more')
    const past = await inject(c.app, 'GET', share.download, {
      headers: { range: 'bytes=15-' },
      cookie: seeking,
    })
    assert.equal(past.statusCode, 403)
    const over = await inject(c.app, 'GET', share.download, {
      headers: { range: 'bytes=0-' },
      cookie: seeking,
    })
    assert.equal(over.statusCode, 206, 'from byte 0 is a new download, counted')
    assert.equal(over.body, CONTENT)
    assert.deepEqual(await counts(c, a, share.id), { views: 0, downloads: 3 })
  })
})

for (const engine of ENGINES) {
  describe(`a download pass over a real socket [${engine}]`, () => {
    let c: ListeningContext
    before(async () => {
      c = await startListening(engine)
    })
    after(async () => {
      await c?.stop()
    })

    test('a client that goes away in the middle of a range gets back the bytes it did not take', async () => {
      const a = await createAccount(c.app)
      const content = randomBytes(32 * 1024 * 1024)
      const file = await createFile(c, a.id, { name: 'film.bin', content })
      const made = await call(c.app, 'POST', '/api/v1/shares', {
        token: a.token,
        body: { fileId: file.id, maxDownloads: 1 },
      })
      const download = `${c.base}${new URL(made.body.data.publicUrl).pathname}/download`
      const first = await fetch(download, { headers: { range: 'bytes=0-0' } })
      assert.equal(first.status, 206)
      await first.arrayBuffer()
      const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0] as string
      // The player reads a little of the rest and seeks away: it closes the connection.
      const controller = new AbortController()
      const seeking = await fetch(download, {
        headers: { range: 'bytes=1-', cookie },
        signal: controller.signal,
      })
      assert.equal(seeking.status, 206)
      const reader = (seeking.body as ReadableStream<Uint8Array>).getReader()
      await reader.read()
      controller.abort()
      await reader.read().catch(() => {})
      // Most of the file never left: the pass has it back (what the kernel's buffers took counts as sent), so
      // the player's next range gets most of the file, where without it the pass would be spent.
      await new Promise((resolve) => setTimeout(resolve, 200))
      const rest = await fetch(download, { headers: { range: 'bytes=1-', cookie } })
      assert.equal(rest.status, 206)
      const [from, to] = (/^bytes (\d+)-(\d+)\//.exec(rest.headers.get('content-range') ?? '') ?? [])
        .slice(1)
        .map(Number)
      assert.equal(from, 1)
      assert.ok((to as number) > content.length / 2, `bytes 1-${to} of ${content.length} given back`)
      assert.ok(Buffer.from(await rest.arrayBuffer()).equals(content.subarray(1, (to as number) + 1)))
    })
  })
}
