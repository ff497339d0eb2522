// The trash as a person uses it, in Chromium (issue 44, 1): files deleted from the files page, the notice's
// Undo bringing them back; the Trash page reached from the folders beside the list, with its size and each
// file's dates, a file restored, one deleted forever, the rest emptied after a confirmation, and its empty
// state. Every page and state is screenshotted on a phone and a desktop, light and dark, and checked with
// axe-core; nothing is fetched from elsewhere.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import {
  browserMissing,
  checkEveryLook,
  launchBrowser,
  newContext,
  recordRequests,
} from './support/browser.ts'
import { ALL, call, createFile, ENGINES } from './support/harness.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, signInBrowser } from './support/web-client.ts'

const rowNames = (page: Page) => page.locator('tbody[data-file-rows] a.file-link').allInnerTexts()
const trashNames = (page: Page) => page.locator('.trash-item .item-title').allInnerTexts()

for (const engine of ENGINES) {
  describe(`the trash in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let browser: Browser
    let c: ListeningContext

    before(async () => {
      browser = await launchBrowser()
      c = await startListening(engine)
    })
    after(async () => {
      await browser?.close()
      await c?.stop()
    })

    const looks = (page: Page, name: string) => checkEveryLook(page, name, engine)

    test('delete, Undo, then the Trash page: restore, delete forever, empty after a confirmation', async () => {
      const owner = await newOwner(c.app)
      const { secret } = await c.app.services.apiKeys.create({ accountId: owner.id, name: 't', scopes: ALL })
      const context = await newContext(browser, 'desktop', 'light')
      const requests = recordRequests(context)
      try {
        const page = await context.newPage()
        await signInBrowser(page, c.base, owner.email)
        const api = (method: string, path: string) => call(c.app, method, `/api/v1${path}`, { token: secret })
        const folder = await c.app.services.folders.create(owner.id, 'Invoices')
        await createFile(c, owner.id, {
          name: 'March invoice.pdf',
          folderId: folder.id,
          content: 'x'.repeat(48_000),
        })
        await createFile(c, owner.id, {
          name: 'holiday photo with a rather long name.jpg',
          content: 'y'.repeat(2_500_000),
        })
        await createFile(c, owner.id, { name: 'notes.txt', content: 'a few words' })
        await createFile(c, owner.id, { name: 'keep me.txt' })

        // Two deleted from the list: the notice says where they went and offers an Undo.
        await page.goto(`${c.base}/`)
        await page.getByRole('checkbox', { name: 'Select notes.txt' }).check()
        await page.getByRole('checkbox', { name: 'Select March invoice.pdf' }).check()
        await page.getByRole('button', { name: 'Delete…' }).click()
        await page.waitForURL(`${c.base}/files/bulk`)
        assert.match(
          await page.locator('main p').first().innerText(),
          /They move to the trash, where they can be restored for 30 days/,
        )
        await page.getByRole('button', { name: 'Delete 2 files' }).click()
        await page.waitForURL(/done=trashed&n=2&undo=/)
        assert.match(await page.locator('.inline-notice').innerText(), /2 files moved to the trash\./)
        assert.deepEqual((await rowNames(page)).sort(), [
          'holiday photo with a rather long name.jpg',
          'keep me.txt',
        ])
        await looks(page, `trash-${engine}-undo-notice`)
        await page.getByRole('button', { name: 'Undo' }).click()
        await page.waitForURL(/done=restored&n=2$/)
        assert.match(await page.locator('.inline-notice').innerText(), /2 files restored\./)
        assert.equal(await page.getByRole('button', { name: 'Undo' }).count(), 0)
        assert.equal((await rowNames(page)).length, 4)
        assert.equal((await api('GET', `/folders/${folder.id}`)).body.data.fileCount, 1)

        // Deleted again, three of them, then found in the trash through the link beside the folders.
        for (const name of ['notes.txt', 'March invoice.pdf', 'holiday photo with a rather long name.jpg']) {
          await page.getByRole('checkbox', { name: `Select ${name}` }).check()
        }
        await page.getByRole('button', { name: 'Delete…' }).click()
        await page.getByRole('button', { name: 'Delete 3 files' }).click()
        await page.waitForURL(/done=trashed&n=3/)
        await page.getByRole('navigation', { name: 'Folders' }).getByRole('link', { name: 'Trash' }).click()
        await page.waitForURL(`${c.base}/trash`)
        assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Trash')
        assert.equal(await page.locator('[data-trash-size]').innerText(), '3 files, 2.5 MB')
        // Deleted together, so in one order of the trash's (the HTTP test checks deleted last first).
        assert.deepEqual((await trashNames(page)).sort(), [
          'March invoice.pdf',
          'holiday photo with a rather long name.jpg',
          'notes.txt',
        ])
        assert.match(
          await page.locator('.trash-item').first().innerText(),
          /Deleted for good\s.+\(in 30 days\)/,
        )
        await looks(page, `trash-${engine}-list`)

        // Restore one: back in its folder.
        await page.getByRole('button', { name: 'Restore March invoice.pdf' }).click()
        await page.waitForURL(/done=restored&n=1/)
        assert.match(
          await page.locator('.inline-notice').innerText(),
          /File restored: it is back in its folder\./,
        )
        assert.equal((await api('GET', `/folders/${folder.id}`)).body.data.fileCount, 1)

        // Delete one forever: a confirmation that names it first.
        await page.getByRole('link', { name: 'Delete notes.txt forever…' }).click()
        await page.waitForURL(/\/trash\/fil_[^/]+\/delete$/)
        assert.match(await page.locator('main').innerText(), /notes\.txt \(11 bytes\) is deleted for good/)
        await page.getByRole('button', { name: 'Delete forever' }).click()
        await page.waitForURL(/done=deleted-forever/)
        assert.deepEqual(await trashNames(page), ['holiday photo with a rather long name.jpg'])
        assert.equal(await page.locator('[data-trash-size]').innerText(), '1 file, 2.5 MB')

        // Empty: a confirmation first, Cancel keeps everything, then the trash is empty.
        await page.getByRole('link', { name: 'Empty trash…' }).click()
        await page.waitForURL(`${c.base}/trash/empty`)
        assert.match(
          await page.locator('main').innerText(),
          /The 1 file in the trash \(2.5 MB\) is deleted for good, with its bytes and share link\./,
        )
        await looks(page, `trash-${engine}-empty-confirm`)
        await page.getByRole('link', { name: 'Cancel' }).click()
        await page.waitForURL(`${c.base}/trash`)
        assert.equal((await trashNames(page)).length, 1)
        await page.getByRole('link', { name: 'Empty trash…' }).click()
        await page.getByRole('button', { name: 'Empty trash' }).click()
        await page.waitForURL(/done=emptied&n=1/)
        assert.match(
          await page.locator('.inline-notice').innerText(),
          /Trash emptied: 1 file deleted for good\./,
        )
        assert.match(await page.locator('.empty').innerText(), /The trash is empty/)
        await looks(page, `trash-${engine}-empty`)
        assert.deepEqual((await api('GET', '/trash')).body.data, [])
        const left = (await api('GET', '/files')).body.data.map((file: { name: string }) => file.name).sort()
        assert.deepEqual(left, ['March invoice.pdf', 'keep me.txt'])
        const elsewhere = requests.filter((url) => !url.startsWith(c.base) && !url.startsWith('data:'))
        assert.deepEqual(elsewhere, [], 'nothing fetched from elsewhere')
      } finally {
        await context.close()
      }
    })
  })
}

// Without a trash the page says so, in every look; the files page then has no link to it. One engine: the
// page shows nothing of the database.
describe('the trash page of a server that keeps none, in Chromium', { skip: browserMissing }, () => {
  let browser: Browser
  let c: ListeningContext

  before(async () => {
    browser = await launchBrowser()
    c = await startListening('sqlite', { env: { TRASH_RETENTION_DAYS: '0' } })
  })
  after(async () => {
    await browser?.close()
    await c?.stop()
  })

  test('says deletes are final', async () => {
    const owner = await newOwner(c.app)
    const context = await newContext(browser, 'desktop', 'light')
    try {
      const page = await context.newPage()
      await signInBrowser(page, c.base, owner.email)
      await page.goto(`${c.base}/`)
      assert.equal(await page.getByRole('link', { name: 'Trash' }).count(), 0)
      await page.goto(`${c.base}/trash`)
      assert.match(await page.locator('.empty').innerText(), /There is no trash on this server/)
      await checkEveryLook(page, 'trash-sqlite-none', 'sqlite')
    } finally {
      await context.close()
    }
  })
})
