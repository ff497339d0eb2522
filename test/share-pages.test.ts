// The public page of a share link, over HTTP: what it shows and what it keeps to itself, its headers, what
// counts as a view or a download, the download served exactly as the API's, and the pages of links that do
// not work. The browser's view of the same pages is in share-pages-browser.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { PAGE_CSP } from '../src/platform/web/web.ts'
import {
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  type TestAccount,
  type TestContext,
} from './support/harness.ts'

const FUTURE = '2099-01-02T03:04:05.678Z'

/** A name with everything a page must escape: markup, both quotes, an ampersand, right-to-left text, emoji. */
const HOSTILE_NAME = `<script>alert("x")</script> & 'quotes' שלום 🎉.txt`

async function shareOf(c: TestContext, a: TestAccount, fileId: string, extra: Record<string, unknown> = {}) {
  const res = await call(c.app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId, ...extra } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  const page = new URL(res.body.data.publicUrl).pathname
  return { id: res.body.data.id as string, page, download: `${page}/download` }
}

const get = (app: App, url: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers })

async function counts(c: TestContext, a: TestAccount, shareId: string) {
  const res = await call(c.app, 'GET', `/api/v1/shares/${shareId}`, { token: a.token })
  return { views: res.body.data.viewCount as number, downloads: res.body.data.downloadCount as number }
}

/** The headers of a download answer that say what it is, without those of the moment or of the route. */
function downloadHeaders(headers: Record<string, unknown>) {
  const { date, connection, 'keep-alive': _k, ...rest } = headers
  for (const name of Object.keys(rest)) if (name.startsWith('ratelimit-')) delete rest[name]
  return rest
}

describeEachEngine('share pages', (ctx) => {
  test('the page shows the name, size, type and date, escaped, with link-preview tags and the page headers', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id, {
      name: HOSTILE_NAME,
      contentType: 'text/plain',
      content: 'x'.repeat(1500),
    })
    const share = await shareOf(c, a, file.id)

    const res = await get(c.app, share.page)
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers['content-security-policy'], PAGE_CSP)
    assert.match(PAGE_CSP, /frame-ancestors 'none'/)
    assert.match(PAGE_CSP, /script-src 'self';/)
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.equal(res.headers['referrer-policy'], 'no-referrer')
    assert.equal(res.headers['x-frame-options'], 'DENY')
    assert.equal(res.headers['cache-control'], 'no-store')

    const escaped = '&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;quotes&#39; שלום 🎉.txt'
    assert.ok(res.body.includes(`<h1 id="file-name">${escaped}</h1>`), res.body)
    assert.ok(!res.body.includes('<script>alert'), 'the name is never markup')
    assert.match(res.body, /<li>1\.5 kB<\/li>/)
    assert.match(res.body, /<li title="text\/plain">Text<\/li>/)
    assert.match(res.body, new RegExp(`<time datetime="${new Date(file.createdAt).toISOString()}"`))
    // A plain link: the answer's Content-Disposition saves the file, and a refusal is shown as its page.
    assert.ok(res.body.includes(`href="${share.download}">`))
    assert.ok(!res.body.includes(`href="${share.download}" download`))
    assert.ok(res.body.includes(`<meta property="og:title" content="${escaped}">`))
    assert.ok(res.body.includes('<meta property="og:description" content="1.5 kB · Text">'))
    assert.ok(res.body.includes(`<meta property="og:url" content="http://coffer.test${share.page}">`))
    assert.ok(res.body.includes('<meta name="twitter:card" content="summary">'))
    // Scripts and styles only from this server's own built files, nothing from elsewhere.
    const sources = [...res.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string)
    for (const source of sources) assert.match(source, /^(\/|#|data:|http:\/\/coffer\.test\/)/, source)
    assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc="\/assets\/)/, 'no inline script')
    assert.doesNotMatch(res.body, /<style|\bstyle="/, 'no inline style')
  })

  test('a text file shows its first 64 KiB, escaped; a binary one an icon', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const source = `const a = "<b>&</b>"\n${'// line\n'.repeat(10_000)}`
    const text = await createFile(c, a.id, {
      name: 'big.ts',
      contentType: 'application/octet-stream',
      content: source,
    })
    const page = (await get(c.app, (await shareOf(c, a, text.id)).page)).body
    const shown = /<pre [^>]*>([^<]*)<\/pre>/.exec(page)?.[1] ?? ''
    assert.ok(
      shown.startsWith('const a &#61; &#34;&#60;b&#62;&#38;&#60;/b&#62;&#34;\n// line\n'),
      shown.slice(0, 80),
    )
    const unescaped = shown.replace(/&#(\d+);/g, (_, code) => String.fromCharCode(Number(code)))
    assert.equal(unescaped, source.slice(0, 64 * 1024))
    assert.match(page, /The first 65\.5 kB are shown/)

    const binary = await createFile(c, a.id, {
      name: 'data.bin',
      contentType: 'application/octet-stream',
      content: Buffer.from([0, 1, 2, 255, 0]),
    })
    const binaryPage = (await get(c.app, (await shareOf(c, a, binary.id)).page)).body
    assert.doesNotMatch(binaryPage, /<pre/)
    assert.match(binaryPage, /<svg class="file-icon"[\s\S]*<text [^>]*>BIN<\/text>/)
  })

  test('a view is a GET of the page, not HEAD nor a prefetch; a download a GET from byte 0, not HEAD, a later range or a 304', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id, { content: '0123456789abcdef' })
    const share = await shareOf(c, a, file.id)
    const expect = async (views: number, downloads: number, what: string) =>
      assert.deepEqual(await counts(c, a, share.id), { views, downloads }, what)

    await expect(0, 0, 'new')
    assert.equal((await get(c.app, share.page)).statusCode, 200)
    await expect(1, 0, 'GET page')
    assert.equal((await c.app.inject({ method: 'HEAD', url: share.page })).statusCode, 200)
    const prefetches: Record<string, string>[] = [
      { 'sec-purpose': 'prefetch' },
      { 'sec-purpose': 'prefetch;prerender' },
      { purpose: 'prefetch' },
    ]
    for (const headers of prefetches) {
      assert.equal((await get(c.app, share.page, headers)).statusCode, 200)
    }
    await expect(1, 0, 'HEAD and prefetches')

    const whole = await get(c.app, share.download)
    assert.equal(whole.statusCode, 200)
    assert.equal(whole.body, '0123456789abcdef')
    await expect(1, 1, 'whole download')
    const first = await get(c.app, share.download, { range: 'bytes=0-3' })
    assert.equal(first.statusCode, 206)
    assert.equal(first.body, '0123')
    await expect(1, 2, 'a range from byte 0')
    const later = await get(c.app, share.download, { range: 'bytes=4-' })
    assert.equal(later.statusCode, 206)
    assert.equal(later.body, '456789abcdef')
    assert.equal((await c.app.inject({ method: 'HEAD', url: share.download })).statusCode, 200)
    const notModified = await get(c.app, share.download, { 'if-none-match': String(whole.headers.etag) })
    assert.equal(notModified.statusCode, 304)
    const unsatisfiable = await get(c.app, share.download, { range: 'bytes=99-' })
    assert.equal(unsatisfiable.statusCode, 416)
    await expect(1, 2, 'later ranges, HEAD, 304 and 416')
    // The inline address a media player uses counts the same way.
    assert.equal(
      (await get(c.app, `${share.download}?disposition=inline`, { range: 'bytes=0-' })).statusCode,
      206,
    )
    await expect(1, 3, 'inline from byte 0')

    const analytics = await call(c.app, 'GET', `/api/v1/analytics?shareId=${share.id}`, { token: a.token })
    assert.equal(analytics.body.data.views, 1)
    assert.equal(analytics.body.data.downloads, 3)
  })

  test("the download is the API's: the same bytes and headers, whole, ranged, inline, conditional", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id, {
      name: 'Résumé "final".pdf',
      contentType: 'application/pdf',
      content: '%PDF-1.4 fake',
    })
    const share = await shareOf(c, a, file.id)
    const api = `/api/v1/files/${file.id}/download`
    const cases: [string, Record<string, string>][] = [
      ['', {}],
      ['', { range: 'bytes=2-5' }],
      ['', { range: 'bytes=-3' }],
      ['?disposition=inline', {}],
      ['', { 'if-none-match': `"${file.sha256}"` }],
      ['', { 'if-range': '"other"', range: 'bytes=0-1' }],
    ]
    for (const [query, headers] of cases) {
      for (const method of ['GET', 'HEAD'] as const) {
        const viaApi = await c.app.inject({
          method,
          url: `${api}${query}`,
          headers: { ...headers, authorization: `Bearer ${a.token}` },
        })
        const viaLink = await c.app.inject({ method, url: `${share.download}${query}`, headers })
        const what = `${method} ${query} ${JSON.stringify(headers)}`
        assert.equal(viaLink.statusCode, viaApi.statusCode, what)
        assert.equal(viaLink.body, viaApi.body, what)
        assert.deepEqual(downloadHeaders(viaLink.headers), downloadHeaders(viaApi.headers), what)
      }
    }
    const whole = await get(c.app, share.download)
    assert.equal(
      whole.headers['content-disposition'],
      `attachment; filename="R_sum_ \\"final\\".pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22.pdf`,
    )
    assert.match(String(whole.headers['content-security-policy']), /sandbox/)
  })

  test('an unknown link is a 404 page; a disabled or expired one a 410 page; a deleted file’s link is gone: none shows the file', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id, { name: 'Secret plans.txt', content: 'the plans' })
    const share = await shareOf(c, a, file.id, { expiresAt: FUTURE })
    const pageOf = async (url: string, status: number, what: string) => {
      for (const path of [url, `${url}/download`, `${url}/preview`]) {
        const res = await get(c.app, path, { accept: 'text/html' })
        assert.equal(res.statusCode, status, `${what}: ${path}`)
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8', `${what}: ${path}`)
        assert.equal(res.headers['content-security-policy'], PAGE_CSP, `${what}: ${path}`)
        for (const secret of ['Secret plans', 'the plans', file.id, share.id]) {
          assert.ok(!res.body.includes(secret), `${what}: ${path} shows ${secret}`)
        }
      }
    }
    await pageOf(`/s/${chars(32, 'q')}`, 404, 'unknown')
    await pageOf(`/s/${chars(500, 'q')}`, 404, 'far too long')
    await call(c.app, 'PATCH', `/api/v1/shares/${share.id}`, { token: a.token, body: { isActive: false } })
    await pageOf(share.page, 410, 'disabled')
    assert.match((await get(c.app, share.page)).body, /This link is no longer available/)
    await call(c.app, 'PATCH', `/api/v1/shares/${share.id}`, { token: a.token, body: { isActive: true } })
    assert.equal((await get(c.app, share.page)).statusCode, 200)
    await c.db.kysely
      .updateTable('shares')
      .set({ expires_at: Date.now() - 1000 })
      .where('id', '=', share.id)
      .execute()
    await pageOf(share.page, 410, 'expired')
    assert.deepEqual(await counts(c, a, share.id), { views: 1, downloads: 0 })
    await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token })
    await pageOf(share.page, 404, 'deleted')
  })

  test('pages answer their failures as pages, the API in its envelope', async () => {
    const c = ctx()
    const unknownPage = await get(c.app, '/no/such/page', { accept: 'text/html,application/xhtml+xml' })
    assert.equal(unknownPage.statusCode, 404)
    assert.equal(unknownPage.headers['content-type'], 'text/html; charset=utf-8')
    assert.match(unknownPage.body, /Nothing here/)
    const unknownApi = await call(c.app, 'GET', '/api/v1/no/such/thing', { headers: { accept: 'text/html' } })
    assert.equal(unknownApi.status, 404)
    assert.equal(unknownApi.body.error.code, 'not_found')
    // Without asking for HTML, an unknown path keeps the envelope (curl, scripts).
    assert.equal((await call(c.app, 'GET', '/no/such/page')).body.error.code, 'not_found')

    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const share = await shareOf(c, a, file.id)
    const open = c.app.services.publicShares.open
    c.app.services.publicShares.open = async () => {
      throw new Error('a fault of the test')
    }
    try {
      const fault = await get(c.app, share.page)
      assert.equal(fault.statusCode, 500)
      assert.equal(fault.headers['content-type'], 'text/html; charset=utf-8')
      assert.match(fault.body, /Something went wrong/)
      assert.doesNotMatch(fault.body, /a fault of the test/)
    } finally {
      c.app.services.publicShares.open = open
    }
  })
})
