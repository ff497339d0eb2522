/// <reference lib="dom" />
// A file request's page as a submitter meets it, in Chromium: the form filled in, three files dropped (a text
// file, a PNG and a 12 MiB file that goes up in parts), their progress bars, the summary; then the owner's API
// holds three submissions with what was typed and three files in the request's folder, byte for byte. Also:
// no email field when none is collected, a required email refused before anything is sent, files over the
// size limit or of a type not accepted, cancelling and retrying one file, the closed and unknown links, hostile
// names rendered as text. Screenshots go to .cache/screenshots; axe-core checks every page. The callbacks
// passed to `evaluate` run in the browser, hence the DOM types.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import {
  assertAccessible,
  browserMissing,
  checkEverywhere,
  launchBrowser,
  newContext,
  recordRequests,
  screenshot,
  throttleUploads,
} from './support/browser.ts'
import { call, createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import { newFolder, newRequest, publicIdOf, REQUESTS } from './support/requests-helpers.ts'
import { samplePng } from './support/sample-files.ts'
import { type ListeningContext, sha256, startListening } from './support/uploads.ts'

const BIG_SIZE = 12 * 1024 * 1024

/** The bytes of the big file, made the same way here and in the browser (see `dropFiles`). */
function bigBytes(): Buffer {
  const bytes = Buffer.alloc(BIG_SIZE)
  for (let i = 0; i < BIG_SIZE; i++) bytes[i] = (i * 31 + (i >>> 13)) & 255
  return bytes
}

interface DroppedFile {
  name: string
  type: string
  /** Small files' bytes, passed in. */
  bytes?: number[]
  /** Or made in the browser: `size` bytes of `fill`, or of the big file's pattern (see `bigBytes`). */
  size?: number
  fill?: number
}

/** Drops files on the page's drop zone, as a person dragging them from their desktop would. */
async function dropFiles(page: Page, files: DroppedFile[]): Promise<void> {
  await page.evaluate(
    ({ files, bigSize }) => {
      const transfer = new DataTransfer()
      for (const file of files) {
        let bytes: Uint8Array
        if (file.bytes) bytes = new Uint8Array(file.bytes)
        else if (file.fill !== undefined) bytes = new Uint8Array(file.size ?? 0).fill(file.fill)
        else {
          bytes = new Uint8Array(file.size ?? bigSize)
          for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >>> 13)) & 255
        }
        transfer.items.add(new File([bytes as BlobPart], file.name, { type: file.type }))
      }
      const zone = document.querySelector('[data-dropzone]') as HTMLElement
      zone.dispatchEvent(
        new DragEvent('dragenter', { dataTransfer: transfer, bubbles: true, cancelable: true }),
      )
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }))
    },
    { files, bigSize: BIG_SIZE },
  )
}

const itemState = (page: Page, name: string) =>
  page.locator('.file-item', { hasText: name }).getAttribute('data-state')

for (const engine of ENGINES) {
  describe(`file request pages in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let c: ListeningContext
    let a: TestAccount
    let browser: Browser
    before(async () => {
      c = await startListening(engine)
      a = await createAccount(c.app)
      browser = await launchBrowser()
    })
    after(async () => {
      await browser?.close()
      await c?.stop()
    })

    const pageOf = (request: { publicUrl: string }) => request.publicUrl

    test('a submitter sends three files, one of 12 MiB in parts; the owner receives them exactly', async () => {
      const folder = await newFolder(c.app, a.token)
      const r = await newRequest(c.app, a.token, {
        title: 'Photos from the trip',
        description: 'Send the best ones, please.\nOriginals if you can.',
        folderId: folder.id,
      })
      await checkEverywhere(browser, pageOf(r), `request-${engine}-form`, c.base, engine)

      const context = await newContext(browser, 'desktop', 'light')
      const requests = recordRequests(context)
      try {
        const page = await context.newPage()
        await page.goto(pageOf(r))
        await page.getByLabel('Your name').fill('Grace Hopper')
        await page.getByLabel('Your email').fill('grace@example.com')
        await page.getByLabel('Message').fill('Here they are.\nThe big one is the raw file.')
        const png = await samplePng()
        const text = 'Notes from the trip.\n'
        await dropFiles(page, [
          { name: 'notes.txt', type: 'text/plain', bytes: [...Buffer.from(text)] },
          { name: 'lake.png', type: 'image/png', bytes: [...png] },
          { name: 'raw-footage.bin', type: 'application/octet-stream' },
        ])
        assert.equal(await page.locator('.file-item').count(), 3)
        await throttleUploads(page, 3 * 1024 * 1024)
        await page.getByRole('button', { name: 'Send files' }).click()
        // The big file under way: its bar partly filled, its speed shown.
        const big = page.locator('.file-item', { hasText: 'raw-footage.bin' })
        await page.waitForFunction(() => {
          const bar = [...document.querySelectorAll('.file-item')]
            .find((item) => item.textContent?.includes('raw-footage.bin'))
            ?.querySelector('progress')
          return bar !== undefined && bar !== null && bar.value >= 15 && bar.value < 90
        })
        assert.match(
          String(await big.locator('.file-status').textContent()),
          /\d+ % · .* of 12\.6 MB · .*\/s/,
        )
        await screenshot(page, `request-${engine}-uploading`)
        await assertAccessible(page, 'the request page while uploading')
        await throttleUploads(page, -1)
        await page.locator('[data-summary]').waitFor({ state: 'visible', timeout: 60_000 })
        assert.equal(await page.locator('[data-summary-title]').textContent(), '3 files sent')
        for (const bar of await page.locator('.file-item progress').all()) {
          assert.equal(await bar.evaluate((element) => (element as HTMLProgressElement).value), 100)
        }
        // The summary takes the focus, so a screen reader reads it.
        assert.equal(await page.evaluate(() => document.activeElement?.hasAttribute('data-summary')), true)
        await screenshot(page, `request-${engine}-summary`)
        await assertAccessible(page, 'the request page after sending')

        // No grant ever went into a URL; nothing was fetched from elsewhere.
        assert.deepEqual(
          requests.filter((url) => url.includes('coffer_grant_')),
          [],
        )
        assert.deepEqual(
          requests.filter((url) => !url.startsWith(c.base) && !url.startsWith('data:')),
          [],
        )
        // The 12 MiB file went up in parts.
        assert.ok(requests.some((url) => url.startsWith(`${c.base}/blob/mpu`)))

        const subs = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
        const listed = subs.body.data as {
          submitterName: string
          submitterEmail: string
          message: string
          file: { id: string; name: string; size: number }
        }[]
        assert.deepEqual(listed.map((s) => s.file.name).sort(), ['lake.png', 'notes.txt', 'raw-footage.bin'])
        for (const s of listed) {
          assert.equal(s.submitterName, 'Grace Hopper')
          assert.equal(s.submitterEmail, 'grace@example.com')
          assert.equal(s.message, 'Here they are.\nThe big one is the raw file.')
        }
        const expected: Record<string, string> = {
          'notes.txt': sha256(text),
          'lake.png': sha256(png),
          'raw-footage.bin': sha256(bigBytes()),
        }
        const inFolder = await call(c.app, 'GET', `/api/v1/files?folderId=${folder.id}`, { token: a.token })
        assert.deepEqual(
          inFolder.body.data.map((f: { id: string }) => f.id).sort(),
          listed.map((s) => s.file.id).sort(),
        )
        for (const s of listed) {
          const download = await fetch(`${c.base}/api/v1/files/${s.file.id}/download`, {
            headers: { authorization: `Bearer ${a.token}` },
          })
          assert.equal(sha256(Buffer.from(await download.arrayBuffer())), expected[s.file.name], s.file.name)
        }
        const request = await call(c.app, 'GET', `${REQUESTS}/${r.id}`, { token: a.token })
        assert.equal(request.body.data.submissionCount, 3)
      } finally {
        await context.close()
      }
    })

    test('the email: no field when not collected; a required one refused before anything is sent', async () => {
      const notCollected = await newRequest(c.app, a.token, { collectEmail: false })
      const context = await newContext(browser, 'phone', 'dark')
      const requests = recordRequests(context)
      try {
        const page = await context.newPage()
        await page.goto(pageOf(notCollected))
        assert.equal(await page.getByLabel('Your email').count(), 0)
        await dropFiles(page, [{ name: 'a.txt', type: 'text/plain', bytes: [...Buffer.from('a')] }])
        await page.getByRole('button', { name: 'Send files' }).click()
        await page.locator('[data-summary]').waitFor({ state: 'visible' })
        await screenshot(page, `request-${engine}-no-email-summary`)

        const required = await newRequest(c.app, a.token)
        await page.goto(pageOf(required))
        await page.getByLabel('Your email').fill('not an email')
        await dropFiles(page, [{ name: 'a.txt', type: 'text/plain', bytes: [...Buffer.from('a')] }])
        const before = requests.length
        await page.getByRole('button', { name: 'Send files' }).click()
        const error = page.locator('#submitter-email-error')
        await error.waitFor({ state: 'visible' })
        assert.equal(await error.textContent(), 'This is not a valid email address.')
        assert.equal(await page.getByLabel('Your email').getAttribute('aria-invalid'), 'true')
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'submitter-email')
        await page.getByLabel('Your email').fill('')
        await page.getByRole('button', { name: 'Send files' }).click()
        assert.equal(await error.textContent(), 'Give your email address: this request asks for it.')
        await screenshot(page, `request-${engine}-email-required`)
        await assertAccessible(page, 'the request page with a field error')
        assert.deepEqual(
          requests.slice(before).filter((url) => url.includes('/uploads')),
          [],
          'nothing was prepared',
        )
        const count = await call(c.app, 'GET', `${REQUESTS}/${required.id}`, { token: a.token })
        assert.equal(count.body.data.submissionCount, 0)
      } finally {
        await context.close()
      }
    })

    test('files the request does not accept are refused on the page; one file cancelled, then retried alone', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      await call(c.app, 'PUT', `${REQUESTS}/${r.id}/limits`, {
        token: a.token,
        body: { maxFileSize: 8 * 1024 * 1024, allowedTypes: ['.txt', '.bin'] },
      })
      const context = await newContext(browser, 'desktop', 'dark')
      try {
        const page = await context.newPage()
        await page.goto(pageOf(r))
        assert.match(
          String(await page.locator('.meta').textContent()),
          /up to 8\.4 MB each.*Accepted: .txt or .bin/,
        )
        await dropFiles(page, [
          { name: 'big.txt', type: 'text/plain', size: 8 * 1024 * 1024 + 1, fill: 97 },
          { name: 'photo.png', type: 'image/png', bytes: [...(await samplePng(8, 8))] },
          { name: 'ok.txt', type: 'text/plain', bytes: [...Buffer.from('fine')] },
        ])
        assert.equal(await itemState(page, 'big.txt'), 'refused')
        assert.match(
          String(await page.locator('.file-item', { hasText: 'big.txt' }).textContent()),
          /Too large/,
        )
        assert.match(
          String(await page.locator('.file-item', { hasText: 'photo.png' }).textContent()),
          /Not accepted/,
        )
        await page.getByRole('button', { name: 'Send files' }).click()
        assert.match(String(await page.locator('#files-error').textContent()), /Remove the files/)
        await screenshot(page, `request-${engine}-refused-files`)
        await assertAccessible(page, 'the request page with refused files')
        await page.getByRole('button', { name: 'Remove big.txt' }).click()
        await page.getByRole('button', { name: 'Remove photo.png' }).click()

        // A larger file, held back by a slow link, is cancelled mid-way and sent again alone.
        await dropFiles(page, [
          {
            name: 'slow.bin',
            type: 'application/octet-stream',
            bytes: [...Buffer.alloc(3 * 1024 * 1024, 7)],
          },
        ])
        await throttleUploads(page, 512 * 1024)
        await page.getByRole('button', { name: 'Send files' }).click()
        await page.waitForFunction(() =>
          [...document.querySelectorAll('.file-item')].some(
            (item) =>
              item.textContent?.includes('slow.bin') && item.getAttribute('data-state') === 'uploading',
          ),
        )
        await page.getByRole('button', { name: 'Cancel the upload of slow.bin' }).click()
        assert.equal(await itemState(page, 'slow.bin'), 'cancelled')
        await page.locator('[data-summary]').waitFor({ state: 'visible' })
        assert.equal(await page.locator('[data-summary-title]').textContent(), '1 of 2 files sent')
        await throttleUploads(page, -1)
        await page.getByRole('button', { name: 'Retry the upload of slow.bin', exact: true }).click()
        await page.waitForFunction(() =>
          [...document.querySelectorAll('.file-item')].every(
            (item) => item.getAttribute('data-state') === 'done',
          ),
        )
        assert.equal(await page.locator('[data-summary-title]').textContent(), '2 files sent')
        const subs = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
        assert.deepEqual(subs.body.data.map((s: { file: { name: string } }) => s.file.name).sort(), [
          'ok.txt',
          'slow.bin',
        ])
      } finally {
        await context.close()
      }
    })

    test('a file whose grant ran out while it waited is prepared again when its turn comes', async () => {
      const r = await newRequest(c.app, a.token, { collectEmail: false })
      const context = await newContext(browser, 'desktop', 'light')
      const requests = recordRequests(context)
      try {
        const page = await context.newPage()
        await page.goto(pageOf(r))
        await dropFiles(page, [{ name: 'late.txt', type: 'text/plain', bytes: [...Buffer.from('late')] }])
        // The page's clock eleven minutes ahead: the grant it is given has, as far as it can tell, expired
        // (its ten minutes unused) before the file's turn comes.
        await page.clock.setFixedTime(Date.now() + 11 * 60_000)
        await page.getByRole('button', { name: 'Send files' }).click()
        await page.waitForFunction(
          () => document.querySelector('.file-item')?.getAttribute('data-state') === 'done',
        )
        const preparations = requests.filter((url) =>
          url.endsWith(`/public/requests/${publicIdOf(r)}/uploads`),
        )
        assert.equal(preparations.length, 2)
        // The first grant was never used: it stays unused until it expires; the second brought the file.
        const intents = await c.db.kysely
          .selectFrom('upload_intents')
          .select(['state', 'expires_at', 'created_at'])
          .where('request_id', '=', r.id)
          .orderBy('id')
          .execute()
        assert.deepEqual(
          intents.map((intent) => intent.state),
          ['uploading', 'complete'],
        )
        const [unused] = intents
        assert.equal(Number(unused?.expires_at) - Number(unused?.created_at), 600_000)
        const subs = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token: a.token })
        assert.deepEqual(
          subs.body.data.map((s: { file: { name: string } }) => s.file.name),
          ['late.txt'],
        )
      } finally {
        await context.close()
      }
    })

    test('closed and unknown links are pages that show nothing of the request', async () => {
      const disabled = await newRequest(c.app, a.token, { title: 'Secret project files' })
      await call(c.app, 'PATCH', `${REQUESTS}/${disabled.id}`, { token: a.token, body: { isActive: false } })
      const closed = await fetch(pageOf(disabled), { headers: { accept: 'text/html' } })
      assert.equal(closed.status, 410)
      const closedHtml = await closed.text()
      assert.match(closedHtml, /This request no longer accepts files/)
      assert.doesNotMatch(closedHtml, /Secret project/)
      await checkEverywhere(browser, pageOf(disabled), `request-${engine}-closed`, c.base, engine)

      const late = await newRequest(c.app, a.token, { title: 'Late files' })
      await c.db.kysely
        .updateTable('file_requests')
        .set({ deadline_at: Date.now() - 1 })
        .where('id', '=', late.id)
        .execute()
      assert.equal((await fetch(pageOf(late))).status, 410)

      const unknown = await fetch(`${c.base}/r/${'x'.repeat(32)}`)
      assert.equal(unknown.status, 404)
      assert.match(String(unknown.headers.get('content-type')), /text\/html/)
      await checkEverywhere(
        browser,
        `${c.base}/r/${'x'.repeat(32)}`,
        `request-${engine}-unknown`,
        c.base,
        engine,
      )
    })

    test('a hostile title, description and file name render as text', async () => {
      const hostile = '<script>window.ran=1</script><img src=x onerror="window.ran=2"> "q" \'q\' שלום 📦'
      const r = await newRequest(c.app, a.token, {
        title: hostile.slice(0, 100),
        description: hostile,
        collectEmail: false,
      })
      const context = await newContext(browser, 'phone', 'light')
      try {
        const page = await context.newPage()
        await page.goto(pageOf(r))
        await dropFiles(page, [{ name: `${hostile}.txt`, type: 'text/plain', bytes: [...Buffer.from('x')] }])
        assert.equal(await page.evaluate(() => (window as unknown as { ran?: number }).ran), undefined)
        assert.equal(await page.locator('h1').textContent(), hostile.slice(0, 100).trim())
        assert.equal(await page.locator('.description').textContent(), hostile)
        assert.equal(await page.locator('.file-name').textContent(), `${hostile}.txt`)
        await page.getByRole('button', { name: 'Send files' }).click()
        await page.locator('[data-summary]').waitFor({ state: 'visible' })
        assert.equal(await page.evaluate(() => (window as unknown as { ran?: number }).ran), undefined)
        await screenshot(page, `request-${engine}-hostile`)
      } finally {
        await context.close()
      }
    })

    test('by keyboard: name, email, message, Choose files, Send', async () => {
      const r = await newRequest(c.app, a.token)
      const context = await newContext(browser, 'desktop', 'light')
      try {
        const page = await context.newPage()
        await page.goto(pageOf(r))
        const order: string[] = []
        for (let i = 0; i < 5; i++) {
          await page.keyboard.press('Tab')
          order.push(
            await page.evaluate(() => {
              const element = document.activeElement as HTMLElement | null
              return element?.id || element?.textContent?.trim() || ''
            }),
          )
        }
        // Send stays disabled, out of the tab order, until a file is chosen.
        assert.deepEqual(order, ['Skip to content', 'submitter-name', 'submitter-email', 'message', 'files'])
        // The file input, hidden behind its label, shows its focus around the drop zone.
        await page.evaluate(() => (document.getElementById('files') as HTMLElement).focus())
        const outline = await page
          .locator('[data-dropzone]')
          .evaluate((zone) => getComputedStyle(zone).outlineStyle)
        assert.equal(outline, 'solid')
        await screenshot(page, `request-${engine}-keyboard-focus`)
      } finally {
        await context.close()
      }
    })
  })
}
