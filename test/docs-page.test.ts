/// <reference lib="dom" />
// The page is checked in a real browser; the callbacks passed to `evaluate` run there, hence the DOM types.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { chromium } from 'playwright-core'
import { operationId, renderDocsPage, tagId } from '../src/meta/docs-page.ts'
import { startApp } from './support/harness.ts'

const CHROMIUM = '/usr/bin/chromium'

type Started = Awaited<ReturnType<typeof startApp>>

describe('API reference page', () => {
  let c: Started
  before(async () => {
    c = await startApp('sqlite')
  })
  after(async () => {
    await c.stop()
  })

  test('is served as HTML with a strict CSP, nosniff, and nothing external or executable', async () => {
    const res = await c.app.inject('/docs')
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    const csp = String(res.headers['content-security-policy'])
    assert.match(csp, /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; img-src data:;/)
    assert.match(csp, /frame-ancestors 'none'/)
    assert.doesNotMatch(res.body, /<script|\bsrc=|@import|url\(/i)
    assert.deepEqual(res.body.match(/<link [^>]*>/g)?.length, 1, 'only the inline icon')
    assert.match(res.body, /<link rel="icon" href="data:/)
    assert.equal((await c.app.inject('/docs')).body, res.body, 'rendered once, served the same')
  })

  test('escapes every text of the document: no HTML or script from descriptions', () => {
    const evil = '<img src=x onerror=alert(1)>'
    const html = renderDocsPage({
      info: {
        title: `T${evil}`,
        version: '1"><script>alert(1)</script>',
        description: `# Head ${evil}\n\nText ${evil} \`${evil}\` [click](javascript:alert(1)) [far](//evil.example/x) [ok](https://example.org/a"b)\n\n| a | b |\n|---|---|\n| ${evil} | x |\n\n- ${evil}\n\n\`\`\`\n${evil}\n\`\`\``,
      },
      servers: [{ url: 'http://x/api/v1' }],
      tags: [{ name: `t${evil}`, description: evil }],
      paths: {
        [`/p/{id}${evil}`]: {
          get: {
            summary: evil,
            description: evil,
            tags: [`t${evil}`],
            security: [{ bearer: [evil] }],
            parameters: [
              { name: evil, in: 'query', description: evil, schema: { type: 'string', pattern: evil } },
            ],
            responses: {
              '200': {
                description: evil,
                content: { 'application/json': { schema: { $ref: `#/x/${evil}` } } },
              },
            },
          },
        },
      },
      components: {
        schemas: {
          [evil]: {
            type: 'object',
            description: evil,
            properties: { [evil]: { type: 'string', description: evil } },
          },
        },
      },
    })
    assert.doesNotMatch(html, /<img|<script|href="javascript/i)
    assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/)
    assert.match(html, /<a href="https:\/\/example.org\/a&quot;b">ok<\/a>/, 'safe links stay links, escaped')
    assert.match(html, /\[click\]\(javascript:alert\(1\)\)/, 'unsafe links stay text')
    assert.doesNotMatch(html, /href="\/\//, 'no protocol-relative links')
  })

  test('renders in a real browser: headings, scopes, parameters, anchors, no errors, nothing external', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip('Chromium not installed: apt-get install chromium')
      return
    }
    await c.app.listen({ port: 0, host: '127.0.0.1' })
    const address = c.app.server.address()
    assert.ok(address && typeof address === 'object')
    const origin = `http://127.0.0.1:${address.port}`
    const doc = c.app.swagger() as any

    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
      ],
    })
    t.after(() => browser.close())
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const problems: string[] = []
    const requests: string[] = []
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(error.message))
    page.on('request', (request) => requests.push(request.url()))

    const response = await page.goto(`${origin}/docs`, { waitUntil: 'load' })
    assert.equal(response?.status(), 200)
    assert.equal(await page.title(), 'Coffer API reference')
    assert.equal(await page.locator('h1').textContent(), 'Coffer API reference')

    // The stylesheet is allowed by the CSP hash: the sidebar is laid out as designed.
    assert.equal(await page.locator('nav').evaluate((nav) => getComputedStyle(nav).position), 'fixed')

    // One section per tag that has operations, in the declared order.
    const used = new Set(
      Object.values(doc.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.tags[0])),
    )
    const expectedTags = doc.tags.map((tag: any) => tag.name).filter((name: string) => used.has(name))
    assert.ok(expectedTags.includes('folders') && expectedTags.includes('index'))
    const tagHeadings = await page.locator('section[id^="tag-"] > h2').allTextContents()
    assert.deepEqual(
      tagHeadings,
      expectedTags.map((name: string) => name.charAt(0).toUpperCase() + name.slice(1)),
    )

    // The description is rendered: its sections, the errors table, inline code.
    for (const heading of [
      'Authentication',
      'Scopes',
      'Errors',
      'Lists and pagination',
      'Uploads',
      'Rate limits',
    ]) {
      assert.ok(await page.getByRole('heading', { name: heading, exact: true }).isVisible(), heading)
    }
    assert.ok(
      await page.locator('#errors + p + table td code', { hasText: 'insufficient_scope' }).isVisible(),
    )

    // An operation shows its endpoint, both scope alternatives and its parameters with their bounds.
    const list = page.locator(`#${operationId('get', '/folders')}`)
    assert.equal(await list.locator('h3').textContent(), 'List folders')
    assert.equal(await list.locator('.endpoint').textContent(), 'GET /api/v1/folders')
    assert.equal(await list.locator('.auth').textContent(), 'Scopes: folders:read or files:read')
    const limitRow = list.locator('tr', { has: page.locator('td:first-child code', { hasText: /^limit$/ }) })
    assert.ok(await limitRow.isVisible())
    assert.deepEqual(await limitRow.locator('td').allTextContents(), [
      'limit',
      'query',
      'integer',
      'no',
      '1..100, default 25',
      'Page size (default 25).',
    ])
    assert.match((await list.locator('.responses').textContent()) ?? '', /400 401 403 404 409 429/)

    // A request body lists its fields with bounds; the index needs no credential.
    const create = page.locator(`#${operationId('post', '/folders')}`)
    assert.match(
      (await create.locator('table.fields').textContent()) ?? '',
      /name.*string.*yes.*1\.\.80 chars/,
    )
    assert.match((await create.locator('.note').textContent()) ?? '', /No other fields are allowed/)
    assert.equal(
      await page.locator(`#${operationId('get', '/')} .auth`).textContent(),
      'No authentication required.',
    )

    // Anchor navigation from the sidebar, then to a schema from a response.
    const target = operationId('delete', '/folders/{folderId}')
    await page.locator(`nav a[href="#${target}"]`).click()
    await page.waitForFunction((id) => location.hash === `#${id}`, target)
    const top = await page.locator(`#${target}`).evaluate((el) => el.getBoundingClientRect().top)
    assert.ok(top >= 0 && top < 40, `the operation scrolled to the top (top=${top})`)
    await page
      .locator(`#${operationId('get', '/folders')} .responses a[href="#schema-folder"]`)
      .first()
      .click()
    await page.waitForFunction(() => location.hash === '#schema-folder')
    assert.ok(await page.locator('#schema-folder').isVisible())
    await page.locator(`nav a[href="#${tagId('folders')}"]`).click()
    await page.waitForFunction((id) => location.hash === `#${id}`, tagId('folders'))

    await page.goto(`${origin}/docs`, { waitUntil: 'load' })
    await page.screenshot({ path: '/tmp/docs.png' })
    await page.locator(`#${operationId('get', '/folders')}`).scrollIntoViewIfNeeded()
    await page.screenshot({ path: '/tmp/docs-operation.png' })
    await page.setViewportSize({ width: 420, height: 900 })
    await page.screenshot({ path: '/tmp/docs-narrow.png' })

    assert.deepEqual(problems, [], 'no console errors or warnings')
    const foreign = requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))
    assert.deepEqual(foreign, [], 'no request leaves the server')
    assert.ok(requests.includes(`${origin}/docs`))
  })
})
