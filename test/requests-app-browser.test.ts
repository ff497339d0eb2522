/// <reference lib="dom" />
// The owner's file request pages as a person uses them, in Chromium: a new account's empty list, a request
// made with the form (by keyboard, a mistake first, then right), its public page opened and a file sent there
// as a submitter does, the submission seen on the request's page with a link to the file's page; the public
// link copied; edit, disable (the public page then 410), enable, move. Every page and state is screenshotted
// on a phone and a desktop, light and dark (.cache/screenshots/requests-app-*), and checked with axe-core. The
// callbacks passed to `evaluate` run in the browser, hence the DOM types.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import {
  browserMissing,
  checkEveryLook,
  launchBrowser,
  newContext,
  recordRequests,
} from './support/browser.ts'
import { ALL, call, ENGINES } from './support/harness.ts'
import { newFolder, REQUESTS } from './support/requests-helpers.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, signInBrowser } from './support/web-client.ts'

/** Drops files on a public request page's drop zone, as a person dragging them from their desktop would. */
async function dropFiles(page: Page, files: { name: string; type: string; text: string }[]): Promise<void> {
  await page.evaluate((files) => {
    const transfer = new DataTransfer()
    for (const file of files) transfer.items.add(new File([file.text], file.name, { type: file.type }))
    const zone = document.querySelector('[data-dropzone]') as HTMLElement
    zone.dispatchEvent(
      new DragEvent('dragenter', { dataTransfer: transfer, bubbles: true, cancelable: true }),
    )
    zone.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }))
  }, files)
}

/** The id (or text) of the element that has the focus. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement as HTMLElement | null
    return element?.id || element?.textContent?.trim() || element?.tagName || ''
  })

/** The day `days` from today, as a date input holds it. */
const dayFromNow = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)

for (const engine of ENGINES) {
  describe(`file request pages of the app in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let c: ListeningContext
    let browser: Browser
    let context: BrowserContext
    let page: Page
    let token: string
    let requests: string[]
    const shot = (name: string) => checkEveryLook(page, `requests-app-${engine}-${name}`, engine)

    before(async () => {
      c = await startListening(engine)
      browser = await launchBrowser()
      const owner = await newOwner(c.app)
      token = (await c.app.services.apiKeys.create({ accountId: owner.id, name: 'test', scopes: ALL })).secret
      context = await newContext(browser, 'desktop', 'light')
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: c.base })
      requests = recordRequests(context)
      page = await context.newPage()
      await signInBrowser(page, c.base, owner.email, { returnTo: '/requests' })
    })
    after(async () => {
      await browser?.close()
      await c?.stop()
    })

    test('the empty list says what a file request is; the form, by keyboard, a mistake first', async () => {
      assert.equal(new URL(page.url()).pathname, '/requests')
      assert.equal(await page.getByRole('heading', { name: 'No file requests yet' }).count(), 1)
      assert.equal(
        await page.getByRole('link', { name: 'File requests' }).getAttribute('aria-current'),
        'page',
      )
      await shot('empty')

      await newFolder(c.app, token, 'Clients')
      await page.getByRole('link', { name: 'New request' }).click()
      await page.waitForURL(`${c.base}/requests/new`)
      await shot('new')

      // The form in the order of the page, each field reached with Tab.
      await page.getByRole('link', { name: 'File requests' }).first().focus()
      const order: string[] = []
      for (let i = 0; i < 30 && !order.includes('Cancel'); i++) {
        await page.keyboard.press('Tab')
        const now = await focused(page)
        if (order.at(-1) !== now) order.push(now)
      }
      assert.deepEqual(
        order.filter((id) => id.startsWith('field-') || id === 'Create request' || id === 'Cancel'),
        [
          'field-title',
          'field-description',
          'field-folderId',
          'field-email',
          'field-deadline',
          'field-maxFiles',
          'field-maxFileSize',
          'field-allowedTypes',
          'Create request',
          'Cancel',
        ],
      )
      // A mistake: no title. Sent with Enter; the page comes back with the field marked and focused.
      await page.getByLabel('Maximum files').focus()
      await page.keyboard.type('5')
      const refused = page.waitForResponse(
        (response) => response.url() === `${c.base}/requests` && response.request().method() === 'POST',
      )
      await page.keyboard.press('Enter')
      assert.equal((await refused).status(), 400)
      await page.waitForURL(`${c.base}/requests`)
      assert.equal(await focused(page), 'field-title')
      assert.equal(await page.locator('#field-title').getAttribute('aria-invalid'), 'true')
      assert.equal(await page.locator('#field-title-error').textContent(), 'Fill this in.')
      assert.equal(await page.getByLabel('Maximum files').inputValue(), '5')
      await shot('new-error')

      // Then right, by keyboard alone: the title, a description, the folder, the email, a deadline.
      await page.keyboard.type('Documents for the audit')
      await page.keyboard.press('Tab')
      await page.keyboard.type('Bank statements and invoices.\nPDF if you can.')
      await page.keyboard.press('Tab')
      await page.keyboard.press('ArrowDown')
      assert.equal(await page.locator('#field-folderId option:checked').textContent(), 'Clients')
      await page.keyboard.press('Tab')
      await page.keyboard.press('ArrowDown')
      assert.equal(await page.locator('#field-email').inputValue(), 'optional')
      await page.getByLabel('Deadline').fill(dayFromNow(14))
      await page.getByLabel('Allowed types').focus()
      await page.keyboard.type('.pdf, .txt')
      await page.keyboard.press('Enter')
      await page.waitForURL(/\/requests\/req_[a-z0-9]+\?done=created$/)
      assert.match(String(await page.locator('.inline-notice').textContent()), /File request created/)
      assert.equal(await page.locator('h1').innerText(), 'Documents for the audit Active')
      await shot('created')

      const id = new URL(page.url()).pathname.split('/')[2] as string
      const r = (await call(c.app, 'GET', `${REQUESTS}/${id}`, { token })).body.data
      assert.equal(r.folder.name, 'Clients')
      assert.equal(r.emailRequired, false)
      const limits = (await call(c.app, 'GET', `${REQUESTS}/${id}/limits`, { token })).body.data
      assert.deepEqual(limits, {
        // The end of the day chosen in the browser's zone (this machine's, UTC): the next day's first instant.
        deadline: `${dayFromNow(15)}T00:00:00.000Z`,
        maxFiles: 5,
        maxFileSize: null,
        allowedTypes: ['.pdf', '.txt'],
      })
    })

    test('the public page opens; a file sent there shows on the request’s page with a link to it', async () => {
      const url = String(await page.locator('.req-url').textContent())
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/r\/[0-9a-z]{32}$/)
      // Copied with the button.
      await page.getByRole('button', { name: /^Copy link of / }).click()
      await page.locator('[data-copy-status]').filter({ hasText: 'copied' }).waitFor()
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), url)
      assert.equal(await page.getByRole('link', { name: 'Open the public page' }).getAttribute('href'), url)

      const submitter = await context.newPage()
      await submitter.goto(url)
      assert.equal(await submitter.locator('h1').textContent(), 'Documents for the audit')
      await submitter.getByLabel('Your name').fill('Grace Hopper')
      await submitter.getByLabel('Your email').fill('grace@example.com')
      await submitter.getByLabel('Message').fill('The statements, as asked.\nMore next week.')
      await dropFiles(submitter, [{ name: 'statements.txt', type: 'text/plain', text: 'January: 12.00\n' }])
      await submitter.getByRole('button', { name: 'Send files' }).click()
      await submitter.locator('[data-summary]').waitFor({ state: 'visible', timeout: 30_000 })
      await submitter.close()

      await page.reload()
      const item = page.locator('.req-sub')
      assert.equal(await item.count(), 1)
      const text = await item.innerText()
      assert.match(text, /statements\.txt/)
      assert.match(text, /From Grace Hopper · grace@example\.com · /)
      assert.match(text, /The statements, as asked\.\nMore next week\./)
      const id = new URL(page.url()).pathname.split('/')[2] as string
      const [submission] = (await call(c.app, 'GET', `${REQUESTS}/${id}/submissions`, { token })).body.data
      assert.equal(
        await item.getByRole('link', { name: 'statements.txt' }).getAttribute('href'),
        `/files/${submission.file.id}`,
      )
      assert.match(await page.locator('.req-stats').innerText(), /Files received\s+1[\s\S]*1 of 5/)
      await shot('with-submission')
      const list = await page.goto(`${c.base}/requests`)
      assert.equal(list?.status(), 200)
      assert.match(
        await page.locator('.req-item').innerText(),
        /Documents for the audit[\s\S]*Clients[\s\S]*1\s+file received/,
      )
      await shot('list')
      await page.getByRole('link', { name: 'Documents for the audit' }).click()
      await page.waitForURL(`${c.base}/requests/${id}`)
    })

    test('edit, disable (the public page then 410), enable, move', async () => {
      const id = new URL(page.url()).pathname.split('/')[2] as string
      const url = String(await page.locator('.req-url').textContent())
      await page.getByRole('link', { name: 'Edit' }).click()
      await page.waitForURL(`${c.base}/requests/${id}/edit`)
      assert.equal(await page.getByLabel('Title').inputValue(), 'Documents for the audit')
      assert.equal(await page.getByLabel('Allowed types').inputValue(), '.pdf, .txt')
      await shot('edit')
      await page.getByLabel('Title').fill('Audit documents')
      await page.getByLabel('Maximum files').fill('')
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.waitForURL(`${c.base}/requests/${id}?done=saved`)
      assert.equal(await page.locator('h1').innerText(), 'Audit documents Active')
      assert.match(await page.locator('.req-stats').innerText(), /No limit/)

      await page.getByRole('button', { name: 'Disable' }).click()
      await page.waitForURL(`${c.base}/requests/${id}?done=disabled`)
      assert.equal(await page.locator('h1').innerText(), 'Audit documents Closed · Disabled')
      assert.equal((await fetch(url)).status, 410)
      await shot('disabled')

      await page.getByRole('button', { name: 'Enable' }).click()
      await page.waitForURL(`${c.base}/requests/${id}?done=enabled`)
      assert.equal((await fetch(url)).status, 200)

      const archive = await newFolder(c.app, token, 'Archive')
      await page.reload()
      await page.getByLabel('Move to folder').selectOption({ label: 'Archive' })
      await page.getByRole('button', { name: 'Move', exact: true }).click()
      await page.waitForURL(`${c.base}/requests/${id}?done=moved`)
      assert.match(await page.locator('.req-facts').innerText(), /Folder\s+Archive/)
      assert.equal((await call(c.app, 'GET', `${REQUESTS}/${id}`, { token })).body.data.folderId, archive.id)
      await shot('moved')

      // Nothing was fetched from elsewhere, in all of it.
      assert.deepEqual(
        requests.filter((request) => !request.startsWith(c.base) && !request.startsWith('data:')),
        [],
      )
    })

    test('a hostile title and description run nothing', async () => {
      const hostile = '<img src=x onerror="window.ran=1"><script>window.ran=2</script> 📦'
      const made = await call(c.app, 'POST', REQUESTS, {
        token,
        body: { title: hostile, description: hostile },
      })
      await page.goto(`${c.base}/requests`)
      assert.equal(await page.getByRole('link', { name: hostile.trim() }).count(), 1)
      await page.goto(`${c.base}/requests/${made.body.data.id}`)
      assert.equal(await page.locator('.description').textContent(), hostile)
      await page.goto(`${c.base}/requests/${made.body.data.id}/edit`)
      assert.equal(await page.getByLabel('Title').inputValue(), hostile.trim())
      assert.equal(await page.evaluate(() => (window as unknown as { ran?: number }).ran), undefined)
    })
  })
}
