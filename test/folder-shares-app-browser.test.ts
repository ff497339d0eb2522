/// <reference lib="dom" />
// A folder's link as its owner and its recipients meet it, in Chromium (issue 44, 2): the folder's page with its
// Share panel (private, then shared, its settings refused and saved, turned off and on again), and the public
// page /sf/{publicId} with an image (its preview made by processing), a text and a PDF, each file's own page, and
// Download all. Every state is screenshotted on a phone and a desktop, light and dark (.cache/screenshots), and
// checked with axe-core; the counts the panel shows are what the recipients did; nothing is fetched from
// elsewhere. The callbacks passed to `evaluate` run in the browser, hence the DOM types.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import {
  browserMissing,
  checkEveryLook,
  checkEverywhere,
  launchBrowser,
  newContext,
  recordRequests,
} from './support/browser.ts'
import { ALL, call, ENGINES, type TestAccount } from './support/harness.ts'
import { samplePng } from './support/sample-files.ts'
import { startSharingApp, uploadFile } from './support/shares.ts'
import type { ListeningContext } from './support/uploads.ts'
import { newOwner, signInBrowser } from './support/web-client.ts'

/** A PDF made by Chromium, printing a page. */
async function samplePdf(browser: Browser): Promise<Buffer> {
  const context = await newContext(browser)
  try {
    const page = await context.newPage()
    await page.setContent('<h1>Itinerary</h1><p>Day 1: Alfama. Day 2: Belém. Day 3: Sintra.</p>')
    return Buffer.from(await page.pdf({ format: 'A5' }))
  } finally {
    await context.close()
  }
}

const stat = (page: Page, name: string) =>
  page.locator('.stats div').filter({ hasText: name }).locator('dd').innerText()

for (const engine of ENGINES) {
  describe(`a folder's link in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let browser: Browser
    let c: ListeningContext

    before(async () => {
      browser = await launchBrowser()
      c = await startSharingApp(engine)
    })
    after(async () => {
      await browser?.close()
      await c?.stop()
    })

    /**
     * Every look of the page, from its top: a change brings the browser back at the Share panel (#share), and
     * a full-page screenshot of a page scrolled down draws the sticky folders beside the list halfway down.
     */
    const looks = async (page: Page, name: string) => {
      await page.evaluate(() => window.scrollTo(0, 0))
      await checkEveryLook(page, name, engine)
    }

    test('Share folder on its page, the public page with its files, counts and chart, settings, off and on', async () => {
      const { id, email } = await newOwner(c.app)
      const { secret } = await c.app.services.apiKeys.create({ accountId: id, name: 't', scopes: ALL })
      const account: TestAccount = { id, email, token: secret, key: async () => secret }
      const api = (method: string, path: string, body?: unknown) =>
        call(c.app, method, `/api/v1${path}`, { token: secret, body })
      const folder = await c.app.services.folders.create(id, 'Trip to Lisbon')
      const uploads = [
        { name: 'Tram 28 at sunset.png', type: 'image/png', bytes: await samplePng() },
        {
          name: 'packing list.txt',
          type: 'text/plain',
          bytes: Buffer.from('passport\ncharger\nsunscreen\nwalking shoes\n'),
        },
        { name: 'itinerary.pdf', type: 'application/pdf', bytes: await samplePdf(browser) },
      ]
      for (const file of uploads) {
        const fileId = await uploadFile(c, account, file)
        assert.equal((await api('PATCH', `/files/${fileId}`, { folderId: folder.id })).status, 200)
      }

      const context = await newContext(browser, 'desktop', 'light')
      const requests = recordRequests(context)
      try {
        const page = await context.newPage()
        await signInBrowser(page, c.base, email)
        await page.goto(`${c.base}/folders/${folder.id}`)
        const panel = page.getByRole('region', { name: 'Share' })
        assert.match(await panel.innerText(), /This folder is private\./)
        await looks(page, `folder-share-${engine}-private`)

        // Share folder, beside the folder's other actions: the link at once, the page at its panel.
        await page.locator('.folder-actions').getByRole('button', { name: 'Share folder' }).click()
        await page.waitForURL(/done=folder-share-on#share$/)
        assert.match(await page.locator('.inline-notice').innerText(), /The folder’s share link works\./)
        const url = await page.getByLabel('Share link').inputValue()
        assert.match(url, new RegExp(`^${c.base}/sf/[a-z0-9]{32}$`))
        assert.equal(await page.locator('.share-head .badge').innerText(), 'Active')
        assert.equal(await page.getByRole('button', { name: 'Copy link' }).isVisible(), true)
        assert.equal(
          await page
            .locator('.folder-actions')
            .getByRole('link', { name: 'Folder share link: Shared' })
            .count(),
          1,
        )

        // Its recipients: the public page in every look (each a view), a file's page, a download and the zip.
        await checkEverywhere(browser, url, `folder-share-${engine}-public`, c.base, engine)
        const visitor = await newContext(browser, 'phone', 'light')
        const visit = await visitor.newPage()
        await visit.goto(url)
        assert.deepEqual(await visit.locator('.shared-file .file-link').allInnerTexts(), [
          'itinerary.pdf',
          'packing list.txt',
          'Tram 28 at sunset.png',
        ])
        assert.equal(await visit.locator('.shared-file img.thumb').count(), 1, 'the image shows its preview')
        await visit.getByRole('link', { name: 'packing list.txt', exact: true }).click()
        await visit.waitForURL(/\/files\//)
        assert.match(await visit.locator('main').innerText(), /sunscreen/)
        await checkEveryLook(visit, `folder-share-${engine}-public-file`, engine)
        const zip = await fetch(`${url}/zip`)
        assert.equal(zip.status, 200)
        await zip.arrayBuffer()
        await visitor.close()

        await page.reload()
        const views = Number(await stat(page, 'Views'))
        assert.ok(views >= 2, `views counted: ${views}`)
        assert.equal(await stat(page, 'Downloads'), '1')
        assert.equal(await page.locator('.share-panel .chart-title').innerText(), 'Last 30 days')
        await looks(page, `folder-share-${engine}-shared`)

        // A refused setting comes back beside its field, with the focus on it; then the settings are saved.
        await page.locator('.share-settings summary').click()
        await page.getByLabel('Maximum downloads').fill('0')
        await page.getByRole('button', { name: 'Save settings' }).click()
        assert.equal(await page.getByLabel('Maximum downloads').getAttribute('aria-invalid'), 'true')
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'field-maxDownloads')
        await looks(page, `folder-share-${engine}-refused`)
        await page.locator('#field-password').fill('pastel de nata')
        await page.getByLabel('Maximum downloads').fill('10')
        await page.getByRole('button', { name: 'Save settings' }).click()
        await page.waitForURL(/done=share-saved#share$/)
        assert.match(await page.locator('.share-panel .meta').innerText(), /Asks for a password/)
        assert.match(await page.locator('.share-panel .meta').innerText(), /1 of 10 downloads used/)
        assert.match(await (await fetch(url)).text(), /protected/i, 'the public page asks for the password')

        // Off: the badge says so, the public page is gone; on again: the same address.
        await page.getByRole('button', { name: 'Turn the link off' }).click()
        await page.waitForURL(/done=folder-share-off#share$/)
        assert.equal(await page.locator('.share-head .badge').innerText(), 'Turned off')
        assert.equal(
          await page
            .locator('.folder-actions')
            .getByRole('link', { name: 'Folder share link: Link off' })
            .count(),
          1,
        )
        await looks(page, `folder-share-${engine}-off`)
        assert.equal((await fetch(url)).status, 410)
        await page.getByRole('button', { name: 'Turn the link on again' }).click()
        await page.waitForURL(/done=folder-share-on#share$/)
        assert.equal(await page.getByLabel('Share link').inputValue(), url)
        assert.equal((await fetch(url)).status, 200)

        const elsewhere = requests.filter(
          (request) => !request.startsWith(c.base) && !request.startsWith('data:'),
        )
        assert.deepEqual(elsewhere, [], 'nothing fetched from elsewhere')
      } finally {
        await context.close()
      }
    })
  })
}
