/// <reference lib="dom" />
// The page is checked in a real browser; the callbacks passed to `evaluate` run there, hence the DOM types.
import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { PAGE_CSP } from '../src/platform/web/web.ts'
import { docsPage, operationId, tagId } from '../src/resources/service-info/docs-page.ts'
import {
  assertAccessible,
  browserMissing,
  launchBrowser,
  newContext,
  recordRequests,
  type Scheme,
  VIEWPORTS,
  type Viewport,
} from './support/browser.ts'
import { startApp } from './support/harness.ts'

const SCREENSHOTS = path.resolve(import.meta.dirname, '../.cache/screenshots')

/**
 * What the window shows, as .cache/screenshots/<name>.png: the whole page is far too long for one picture
 * (support/browser.ts's `screenshot` takes the whole page).
 */
async function windowShot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) })
}

type Started = Awaited<ReturnType<typeof startApp>>

describe('API reference page', () => {
  let c: Started
  before(async () => {
    c = await startApp('sqlite')
  })
  after(async () => {
    await c.stop()
  })

  test('is a page of the common layout: its headers, the one stylesheet, no script or style of its own, rendered once', async () => {
    const res = await c.app.inject('/docs')
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.equal(res.headers['content-security-policy'], PAGE_CSP)
    assert.equal(res.headers['referrer-policy'], 'no-referrer')
    assert.doesNotMatch(res.body, /<style|\sstyle=|@import|url\(/i, 'no inline CSS')
    // The layout's own page module, and nothing else: no inline script, no script of this page.
    const scripts = res.body.match(/<script\b[^>]*>/g) ?? []
    assert.deepEqual(
      scripts.map((tag) => /src="\/assets\/page-[\w-]+\.js"/.test(tag) && /type="module"/.test(tag)),
      [true],
    )
    assert.doesNotMatch(res.body, /<script\b[^>]*>[^<]/, 'no inline script')
    const links = res.body.match(/<link [^>]*>/g) ?? []
    assert.deepEqual(
      links.map((link) => /rel="(icon|stylesheet)"/.exec(link)?.[1]),
      ['icon', 'stylesheet'],
    )
    assert.match(res.body, /<link rel="stylesheet" href="\/assets\/styles-[\w-]+\.css">/)
    assert.match(res.body, /<a class="skip-link" href="#main">/, 'the layout')
    // Rendered once: served again as it was without the document being read again.
    const swagger = c.app.swagger
    ;(c.app as any).swagger = () => {
      throw new Error('the page was rendered again')
    }
    try {
      assert.equal((await c.app.inject('/docs')).body, res.body)
    } finally {
      ;(c.app as any).swagger = swagger
    }
  })

  test('escapes every text of the document: no HTML or script from descriptions', () => {
    const evil = '<img src=x onerror=alert(1)>'
    const { title, main: html } = docsPage({
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
    assert.match(html, /&#60;img src&#61;x onerror&#61;alert\(1\)&#62;/)
    assert.equal(title, `T${evil} reference`, 'the layout escapes the title')
    assert.match(html, /<a href="https:\/\/example.org\/a&#34;b">ok<\/a>/, 'safe links stay links, escaped')
    assert.match(html, /\[click\]\(javascript:alert\(1\)\)/, 'unsafe links stay text')
    assert.doesNotMatch(html, /href="\/\//, 'no protocol-relative links')
  })

  test('renders in a real browser: headings, scopes, parameters, anchors, no errors, nothing external', {
    skip: browserMissing,
  }, async (t) => {
    await c.app.listen({ port: 0, host: '127.0.0.1' })
    const address = c.app.server.address()
    assert.ok(address && typeof address === 'object')
    const origin = `http://127.0.0.1:${address.port}`
    const doc = c.app.swagger() as any

    const browser = await launchBrowser()
    t.after(() => browser.close())
    const page = await (await newContext(browser, 'desktop', 'light')).newPage()
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

    // The one stylesheet is applied: the contents stay beside the reference as it scrolls.
    assert.equal(await page.locator('.docs-nav').evaluate((nav) => getComputedStyle(nav).position), 'sticky')

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
      await page.locator('#errors + p + .docs-scroll td code', { hasText: 'insufficient_scope' }).isVisible(),
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

    assert.deepEqual(problems, [], 'no console errors or warnings')
    const foreign = requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'))
    assert.deepEqual(foreign, [], 'no request leaves the server')
    assert.ok(requests.includes(`${origin}/docs`))

    // Every look, on a phone and a desktop, light and dark: the top and an operation screenshotted, the
    // whole page checked with axe, nothing fetched from elsewhere.
    for (const viewport of Object.keys(VIEWPORTS) as Viewport[]) {
      for (const scheme of ['light', 'dark'] as Scheme[]) {
        const context = await newContext(browser, viewport, scheme)
        const seen = recordRequests(context)
        const look = await context.newPage()
        await look.goto(`${origin}/docs`, { waitUntil: 'load' })
        await windowShot(look, `docs-${viewport}-${scheme}`)
        await assertAccessible(look, `the API reference (${viewport}, ${scheme})`)
        await look.goto(`${origin}/docs#${operationId('get', '/files')}`, { waitUntil: 'load' })
        await windowShot(look, `docs-operation-${viewport}-${scheme}`)
        assert.deepEqual(
          seen.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:')),
          [],
        )
        await context.close()
      }
    }
  })
})
