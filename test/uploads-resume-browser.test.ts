/// <reference lib="dom" />
// Uploads that resume in the browser (issue 44, 3), in Chromium on both engines (PostgreSQL's leg keeps its blobs
// in S3): on the owner's files page and on a file request's page, a 41 MiB upload (six parts) is reloaded away
// once two parts are stored (the others held back by the test), the page lists it as unfinished, and the same
// file chosen again sends only the missing parts; on both pages a transfer cut by the network (a TCP proxy that
// destroys its connections) goes on at Retry, sending only the missing parts. Forget ends an unfinished upload;
// records expired or unknown to the server are dropped; another account on the browser sees none of them (a
// database per account). The library's own retries of a broken part are turned off in the page for the cuts
// (VERCEL_BLOB_RETRIES, which it reads from `process.env`), as the SDK's test does in Node. The bytes are measured at
// the proxy every request of the browser goes through; each file made is byte for byte the one on disk. The
// list of unfinished uploads is screenshotted (phone and desktop, light and dark) and checked with axe-core.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page, Route } from 'playwright-core'
import {
  assertAccessible,
  browserMissing,
  checkEveryLook,
  launchBrowser,
  newContext,
  screenshot,
} from './support/browser.ts'
import { ALL, call, ENGINES } from './support/harness.ts'
import { freePort } from './support/ports.ts'
import { newFolder, newRequest, REQUESTS } from './support/requests-helpers.ts'
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts'
import { type ListeningContext, sha256, startListening } from './support/uploads.ts'
import { newOwner, signInBrowser } from './support/web-client.ts'

const MiB = 1024 * 1024
const PART = 8 * MiB
/** Six parts: five of 8 MiB and a short one. */
const SIZE = 5 * PART + 1_234_567
/** What goes beyond the parts' bytes once the file is chosen again: requests' heads, the page's calls. */
const OVERHEAD = 128 * 1024

interface KeptRecord {
  key: string
  name: string
  grant: { intentId: string; clientPayload: { grant: string } }
  parts?: { partNumber: number; size: number }[]
}

/** The records a page keeps in its IndexedDB database `name`. */
function recordsIn(page: Page, name: string): Promise<KeptRecord[]> {
  return page.evaluate(
    (name) =>
      new Promise<KeptRecord[]>((resolve, reject) => {
        const open = indexedDB.open(name)
        open.onerror = () => reject(open.error)
        open.onsuccess = () => {
          const db = open.result
          if (!db.objectStoreNames.contains('records')) {
            db.close()
            resolve([])
            return
          }
          const read = db.transaction('records', 'readonly').objectStore('records').getAll()
          read.onsuccess = () => {
            db.close()
            resolve(read.result as KeptRecord[])
          }
          read.onerror = () => reject(read.error)
        }
      }),
    name,
  )
}

/** Waits until the page's record of its upload lists at least `parts` parts stored. */
async function recordWithParts(page: Page, db: string, parts: number): Promise<KeptRecord> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const [record] = await recordsIn(page, db)
    if (record && (record.parts?.length ?? 0) >= parts) return record
    if (Date.now() > deadline) {
      const names = await page.evaluate(async () => (await indexedDB.databases()).map((each) => each.name))
      const shown = await page.locator('main').innerText()
      assert.fail(
        `no record with ${parts} parts in ${db} (${names.join(', ')}): ${JSON.stringify(record)}; ${shown}`,
      )
    }
    await page.waitForTimeout(100)
  }
}

/** Holds back the part requests numbered `from` and above, letting the others go; `release` sends them on. */
async function holdParts(page: Page, from: number) {
  const held: Route[] = []
  const matches = (url: URL) => url.pathname.startsWith('/blob/mpu')
  await page.route(matches, async (route) => {
    const headers = route.request().headers()
    if (headers['x-mpu-action'] === 'upload' && Number(headers['x-mpu-part-number']) >= from) held.push(route)
    else await route.continue()
  })
  return {
    held,
    /** Lets the held requests go, and the later ones. */
    async release() {
      await page.unroute(matches)
      for (const route of held.splice(0)) await route.continue().catch(() => undefined)
    },
    /** Drops the held requests (the page is gone), and lets the later ones go. */
    async drop() {
      await page.unroute(matches)
      for (const route of held.splice(0)) await route.abort().catch(() => undefined)
    },
  }
}

/** The part numbers the page sends from now on. */
function partsSent(page: Page): number[] {
  const sent: number[] = []
  page.on('request', (request) => {
    const headers = request.headers()
    if (headers['x-mpu-action'] === 'upload') sent.push(Number(headers['x-mpu-part-number']))
  })
  return sent
}

const storedBytes = (record: KeptRecord) => (record.parts ?? []).reduce((sum, part) => sum + part.size, 0)

for (const engine of ENGINES) {
  describe(`uploads that resume in Chromium [${engine}]`, { skip: browserMissing }, () => {
    let browser: Browser
    let c: ListeningContext
    let proxy: TcpProxy
    /** The server's address through the proxy: every request of the browser goes through it. */
    let base: string
    let dir: string
    let data: Buffer
    let onDisk: string

    before(async () => {
      const proxyPort = await freePort()
      base = `http://127.0.0.1:${proxyPort}`
      c = await startListening(engine, { env: { PUBLIC_URL: base } })
      proxy = await startTcpProxy(Number(new URL(c.base).port), proxyPort)
      browser = await launchBrowser()
      dir = await mkdtemp(path.join(tmpdir(), 'coffer-resume-browser-'))
      data = randomBytes(SIZE)
      onDisk = path.join(dir, 'holiday-video.bin')
      await writeFile(onDisk, data)
    })
    after(async () => {
      await browser?.close()
      await proxy?.close()
      await c?.stop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    async function signedIn() {
      const owner = await newOwner(c.app)
      const { secret } = await c.app.services.apiKeys.create({ accountId: owner.id, name: 't', scopes: ALL })
      const context = await newContext(browser, 'desktop', 'light')
      const page = await context.newPage()
      // Leaving a page with an upload under way asks first: the test reloads anyway.
      page.on('dialog', (dialog) => void dialog.accept())
      await signInBrowser(page, base, owner.email)
      return { ...owner, token: secret, context, page, db: `coffer-uploads ${base} ${owner.email}` }
    }

    async function downloadHash(token: string, fileId: string): Promise<string> {
      const response = await fetch(`${c.base}/api/v1/files/${fileId}/download`, {
        headers: { authorization: `Bearer ${token}` },
      })
      return sha256(Buffer.from(await response.arrayBuffer()))
    }

    /** The bytes the server holds of an upload, as its status lists them. */
    async function heldOnServer(token: string, intentId: string): Promise<number> {
      const status = await call(c.app, 'GET', `/api/v1/files/uploads/${intentId}`, { token })
      assert.equal(status.body.data.status, 'pending', JSON.stringify(status.body))
      const parts = (status.body.data.multipart?.parts ?? []) as { size: number }[]
      return parts.reduce((sum, part) => sum + part.size, 0)
    }

    test('files page: reloaded with two parts stored, the upload is listed, and the file chosen again sends only the rest', async (t) => {
      const o = await signedIn()
      try {
        const { page } = o
        const hold = await holdParts(page, 3)
        await page.setInputFiles('#upload-input', onDisk)
        const record = await recordWithParts(page, o.db, 2)
        assert.equal(record.name, 'holiday-video.bin')
        const stored = await heldOnServer(o.token, record.grant.intentId)
        assert.equal(stored, 2 * PART, 'two parts stored')

        // Reloaded as the held parts wait: they never reach the server.
        await page.reload()
        await hold.drop()
        const row = page.locator('.unfinished-item', { hasText: 'holiday-video.bin' })
        await row.waitFor({ timeout: 30_000 })
        assert.equal(
          (await row.locator('.unfinished-text').innerText()).replaceAll('\u00a0', ' ').trim(),
          'holiday-video.bin — 16.8 MB of 43.2 MB stored. Choose the file again to finish it.',
        )
        assert.equal(await page.getByRole('heading', { name: 'Unfinished uploads' }).isVisible(), true)
        await checkEveryLook(page, `resume-${engine}-files-unfinished`, engine)

        // The same file chosen again, with the row's button: only the parts the server lacks go.
        const sent = partsSent(page)
        proxy.reset()
        const chooser = page.waitForEvent('filechooser')
        await row
          .getByRole('button', { name: 'Choose file holiday-video.bin again to finish its upload' })
          .click()
        await (await chooser).setFiles(onDisk)
        const upload = page.locator('.file-item', { hasText: 'holiday-video.bin' })
        await upload.locator('.file-note').waitFor()
        assert.match(
          await upload.locator('.file-note').innerText(),
          /^Resuming: 16\.8 MB of 43\.2 MB already stored\.$/,
        )
        await screenshot(page, `resume-${engine}-files-resuming`)
        await assertAccessible(page, 'the files page resuming an upload')
        assert.equal(
          await page.locator('.unfinished').isVisible(),
          false,
          'the list of unfinished uploads went',
        )
        await page.locator('tbody tr', { hasText: 'holiday-video.bin' }).waitFor({ timeout: 60_000 })
        const resent = proxy.sent
        t.diagnostic(
          `[${engine}] files page, after a reload: ${stored} of ${SIZE} bytes stored; choosing the file again sent ${resent} bytes (${((100 * resent) / SIZE).toFixed(1)} % of the file; the missing parts hold ${SIZE - stored}); parts sent: ${[...sent].sort((a, b) => a - b).join(', ')}`,
        )
        assert.deepEqual(
          [...sent].sort((a, b) => a - b),
          [3, 4, 5, 6],
        )
        assert.ok(resent >= SIZE - stored, `${resent} bytes sent`)
        assert.ok(resent <= SIZE - stored + OVERHEAD, `${resent} bytes sent again`)

        const files = (await call(c.app, 'GET', '/api/v1/files', { token: o.token })).body.data as {
          id: string
          name: string
        }[]
        assert.deepEqual(
          files.map((f) => f.name),
          ['holiday-video.bin'],
        )
        assert.equal(await downloadHash(o.token, (files[0] as { id: string }).id), sha256(data))
        assert.deepEqual(await recordsIn(page, o.db), [], 'the record goes once the file is made')
        await page.reload()
        await page.locator('[data-uploader]').waitFor()
        assert.equal(await page.locator('.unfinished-item').count(), 0)
      } finally {
        await o.context.close()
      }
    })

    test('files page: an upload begun in a folder, chosen again on another page, goes on into its folder', async () => {
      const o = await signedIn()
      try {
        const { page } = o
        const folder = await newFolder(c.app, o.token, 'Holidays')
        await page.goto(`${base}/folders/${folder.id}`)
        const hold = await holdParts(page, 2)
        await page.setInputFiles('#upload-input', onDisk)
        await recordWithParts(page, o.db, 1)
        await page.goto(`${base}/`)
        await hold.drop()
        const row = page.locator('.unfinished-item', { hasText: 'holiday-video.bin' })
        await row.waitFor({ timeout: 30_000 })
        assert.match(
          (await row.locator('.unfinished-text').innerText()).replaceAll('\u00a0', ' '),
          /stored\. Choose the file again to finish it\. It goes to Holidays\.$/,
        )
        await page.setInputFiles('#upload-input', onDisk)
        const upload = page.locator('.file-item', { hasText: 'holiday-video.bin' })
        await upload.locator('.file-note').waitFor()
        assert.match(await upload.locator('.file-note').innerText(), /It goes to Holidays\.$/)
        // The page of all files shows it once made; it is in the folder it was going to.
        await page.locator('tbody tr', { hasText: 'holiday-video.bin' }).waitFor({ timeout: 60_000 })
        const inFolder = await call(c.app, 'GET', `/api/v1/files?folderId=${folder.id}`, { token: o.token })
        assert.deepEqual(
          inFolder.body.data.map((f: { name: string }) => f.name),
          ['holiday-video.bin'],
        )
        assert.equal(await downloadHash(o.token, inFolder.body.data[0].id), sha256(data))
      } finally {
        await o.context.close()
      }
    })

    test('files page: Forget ends an unfinished upload on the server and drops it from the list', async () => {
      const o = await signedIn()
      try {
        const { page } = o
        const hold = await holdParts(page, 2)
        await page.setInputFiles('#upload-input', onDisk)
        const record = await recordWithParts(page, o.db, 1)
        // Reloaded as the held parts wait: they never reach the server.
        await page.reload()
        await hold.drop()
        const row = page.locator('.unfinished-item', { hasText: 'holiday-video.bin' })
        await row.waitFor({ timeout: 30_000 })
        await row.getByRole('button', { name: 'Forget the unfinished upload of holiday-video.bin' }).click()
        await row.waitFor({ state: 'detached' })
        assert.equal(
          await page.locator('[data-upload-announce]').innerText(),
          'The unfinished upload of holiday-video.bin was forgotten.',
        )
        const status = await call(c.app, 'GET', `/api/v1/files/uploads/${record.grant.intentId}`, {
          token: o.token,
        })
        assert.equal(status.body.data.status, 'error', JSON.stringify(status.body))
        assert.deepEqual(await recordsIn(page, o.db), [])
      } finally {
        await o.context.close()
      }
    })

    test('files page: records whose grant expired or whose upload the server does not know are dropped; another account sees none', async () => {
      const o = await signedIn()
      try {
        const { page } = o
        const grant = (intentId: string, expiresAt: string) => ({
          intentId,
          contentType: 'application/octet-stream',
          size: SIZE,
          pathname: 'x',
          handleUploadUrl: `${base}/blob/handle-upload`,
          clientPayload: { intentId, name: 'x', grant: 'coffer_grant_x' },
          expiresAt,
        })
        const hour = new Date(Date.now() + 3_600_000).toISOString()
        const records = [
          {
            name: 'expired.bin',
            grant: grant('upl_100000000000000000000000', new Date(Date.now() - 1000).toISOString()),
          },
          { name: 'unknown.bin', grant: grant('upl_200000000000000000000000', hour) },
        ].map((each, i) => ({
          ...each,
          key: JSON.stringify([each.name, SIZE, i]),
          size: SIZE,
          lastModified: i,
          updatedAt: Date.now(),
        }))
        await page.evaluate(
          ({ name, records }) =>
            new Promise<void>((resolve, reject) => {
              const open = indexedDB.open(name, 1)
              open.onupgradeneeded = () => open.result.createObjectStore('records')
              open.onerror = () => reject(open.error)
              open.onsuccess = () => {
                const transaction = open.result.transaction('records', 'readwrite')
                for (const record of records) transaction.objectStore('records').put(record, record.key)
                transaction.oncomplete = () => {
                  open.result.close()
                  resolve()
                }
                transaction.onerror = () => reject(transaction.error)
              }
            }),
          { name: o.db, records },
        )
        assert.equal((await recordsIn(page, o.db)).length, 2)
        await page.reload()
        await page.locator('[data-uploader]').waitFor()
        await page.waitForFunction(
          async (name) => {
            const open = indexedDB.open(name)
            const db = await new Promise<IDBDatabase>((resolve) => {
              open.onsuccess = () => resolve(open.result)
            })
            const count = await new Promise<number>((resolve) => {
              const request = db.transaction('records', 'readonly').objectStore('records').count()
              request.onsuccess = () => resolve(request.result)
            })
            db.close()
            return count === 0
          },
          o.db,
          { timeout: 10_000 },
        )
        assert.equal(await page.locator('.unfinished-item').count(), 0)
        assert.equal(await page.locator('.unfinished').isVisible(), false)

        // Another account on the same browser: its own database, none of the first one's uploads.
        const hold = await holdParts(page, 2)
        await page.setInputFiles('#upload-input', onDisk)
        await recordWithParts(page, o.db, 1)
        await page.goto(`${base}/`)
        await hold.drop()
        const other = await newOwner(c.app)
        await page.context().clearCookies()
        await signInBrowser(page, base, other.email)
        await page.locator('[data-uploader]').waitFor()
        await page.waitForTimeout(500)
        assert.equal(await page.locator('.unfinished-item').count(), 0, 'another account sees none')
        assert.equal((await recordsIn(page, o.db)).length, 1, "the first account's record stays")
        assert.deepEqual(await recordsIn(page, `coffer-uploads ${base} ${other.email}`), [])
      } finally {
        await o.context.close()
      }
    })

    test('files page: where IndexedDB is refused (a private window), uploads go as before, kept in memory', async () => {
      const o = await signedIn()
      try {
        const { page } = o
        const errors: string[] = []
        page.on('pageerror', (error) => errors.push(error.message))
        await page.addInitScript(() => {
          IDBFactory.prototype.open = () => {
            throw new DOMException('The operation is insecure.', 'SecurityError')
          }
        })
        await page.reload()
        await page.locator('[data-uploader]').waitFor()
        const small = randomBytes(6 * MiB + 7)
        await page.setInputFiles('#upload-input', {
          name: 'private.bin',
          mimeType: 'application/octet-stream',
          buffer: small,
        })
        await page.locator('tbody tr', { hasText: 'private.bin' }).waitFor({ timeout: 60_000 })
        assert.equal(await page.locator('.unfinished').isVisible(), false)
        assert.deepEqual(errors, [])
        const files = (await call(c.app, 'GET', '/api/v1/files', { token: o.token })).body.data as {
          id: string
        }[]
        assert.equal(await downloadHash(o.token, (files[0] as { id: string }).id), sha256(small))
      } finally {
        await o.context.close()
      }
    })

    test('files page: a transfer cut by the network goes on at Retry, sending only the missing parts', async (t) => {
      const o = await signedIn()
      try {
        const { page } = o
        // The library would retry a broken part ten times over minutes; here it gives up at once.
        await page.addInitScript(() => {
          ;(globalThis as { process?: unknown }).process = { env: { VERCEL_BLOB_RETRIES: '0' } }
        })
        await page.reload()
        const hold = await holdParts(page, 3)
        await page.setInputFiles('#upload-input', onDisk)
        const record = await recordWithParts(page, o.db, 2)
        // The held parts go, and the network goes away 4 MiB into them.
        proxy.reset()
        const cut = proxy.cutAfter(4 * MiB)
        await hold.release()
        await cut
        const upload = page.locator('.file-item', { hasText: 'holiday-video.bin' })
        await page.waitForFunction(
          () => document.querySelector('.file-item')?.getAttribute('data-state') === 'failed',
          undefined,
          { timeout: 60_000 },
        )
        assert.equal(
          await upload.locator('.file-status').innerText(),
          'The connection was lost. Retry to send this file again.',
        )
        proxy.heal()
        const stored = await heldOnServer(o.token, record.grant.intentId)
        assert.ok(stored >= 2 * PART, `${stored} bytes stored before the cut`)

        const sent = partsSent(page)
        proxy.reset()
        await upload.getByRole('button', { name: 'Retry the upload of holiday-video.bin' }).click()
        await page.locator('tbody tr', { hasText: 'holiday-video.bin' }).waitFor({ timeout: 60_000 })
        const resent = proxy.sent
        t.diagnostic(
          `[${engine}] files page, Retry after a cut: ${stored} of ${SIZE} bytes stored; Retry sent ${resent} bytes (${((100 * resent) / SIZE).toFixed(1)} % of the file; the missing parts hold ${SIZE - stored}); parts sent: ${[...sent].sort((a, b) => a - b).join(', ')}`,
        )
        assert.ok(resent >= SIZE - stored, `${resent} bytes sent`)
        assert.ok(resent <= SIZE - stored + OVERHEAD, `${resent} bytes sent again`)
        assert.ok(!sent.includes(1) && !sent.includes(2), `parts ${sent} sent`)
        const files = (await call(c.app, 'GET', '/api/v1/files', { token: o.token })).body.data as {
          id: string
        }[]
        assert.equal(files.length, 1)
        assert.equal(await downloadHash(o.token, (files[0] as { id: string }).id), sha256(data))
      } finally {
        proxy.heal()
        await o.context.close()
      }
    })

    test("request page: reloaded with two parts stored, the file chosen again goes with the submitter's details, sending only the rest", async (t) => {
      const owner = await newOwner(c.app)
      const { secret: token } = await c.app.services.apiKeys.create({
        accountId: owner.id,
        name: 't',
        scopes: ALL,
      })
      const folder = await newFolder(c.app, token)
      const r = await newRequest(c.app, token, { title: 'Footage', folderId: folder.id })
      const publicUrl = r.publicUrl as string
      assert.ok(publicUrl.startsWith(base), publicUrl)
      const publicId = new URL(publicUrl).pathname.split('/').pop() as string
      const db = `coffer-request-uploads ${publicId}`
      const context = await newContext(browser, 'desktop', 'light')
      try {
        const page = await context.newPage()
        page.on('dialog', (dialog) => void dialog.accept())
        await page.goto(publicUrl)
        await page.getByLabel('Your name').fill('Ada Lovelace')
        await page.getByLabel('Your email').fill('ada@example.com')
        await page.getByLabel('Message').fill('The whole day, uncut.')
        await page.setInputFiles('input[type="file"]', onDisk)
        const hold = await holdParts(page, 3)
        await page.getByRole('button', { name: 'Send files' }).click()
        const record = await recordWithParts(page, db, 2)
        const stored = storedBytes(record)
        assert.equal(stored, 2 * PART)

        // Reloaded as the held parts wait: they never reach the server.
        await page.reload()
        await hold.drop()
        const row = page.locator('.unfinished-item', { hasText: 'holiday-video.bin' })
        await row.waitFor({ timeout: 30_000 })
        assert.equal(
          (await row.locator('.unfinished-text').innerText()).replaceAll('\u00a0', ' ').trim(),
          'holiday-video.bin — 16.8 MB of 43.2 MB stored. Choose the file again to finish it.',
        )
        await checkEveryLook(page, `resume-${engine}-request-unfinished`, engine)

        // Chosen again, with nothing typed this time: it goes at once, with what was typed the first time.
        const sent = partsSent(page)
        proxy.reset()
        await page.setInputFiles('input[type="file"]', onDisk)
        const upload = page.locator('.file-item', { hasText: 'holiday-video.bin' })
        await upload.locator('.file-note').waitFor()
        assert.equal(
          await upload.locator('.file-note').innerText(),
          'Resuming: 16.8 MB of 43.2 MB already stored. It goes with the details you gave the first time: no need to type them again.',
        )
        await screenshot(page, `resume-${engine}-request-resuming`)
        await page.locator('[data-summary]').waitFor({ timeout: 60_000 })
        assert.equal(await page.locator('[data-summary-title]').innerText(), '1 file sent')
        assert.equal(await upload.getAttribute('data-state'), 'done')
        const resent = proxy.sent
        t.diagnostic(
          `[${engine}] request page, after a reload: ${stored} of ${SIZE} bytes stored; choosing the file again sent ${resent} bytes (${((100 * resent) / SIZE).toFixed(1)} % of the file; the missing parts hold ${SIZE - stored}); parts sent: ${[...sent].sort((a, b) => a - b).join(', ')}`,
        )
        assert.deepEqual(
          [...sent].sort((a, b) => a - b),
          [3, 4, 5, 6],
        )
        assert.ok(resent >= SIZE - stored, `${resent} bytes sent`)
        assert.ok(resent <= SIZE - stored + OVERHEAD, `${resent} bytes sent again`)

        const subs = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token })
        const listed = subs.body.data as {
          submitterName: string
          submitterEmail: string
          message: string
          file: { id: string; name: string }
        }[]
        assert.equal(listed.length, 1)
        assert.equal(listed[0]?.submitterName, 'Ada Lovelace')
        assert.equal(listed[0]?.submitterEmail, 'ada@example.com')
        assert.equal(listed[0]?.message, 'The whole day, uncut.')
        assert.equal(await downloadHash(token, listed[0]?.file.id as string), sha256(data))
        assert.deepEqual(await recordsIn(page, db), [])
      } finally {
        await context.close()
      }
    })

    test('request page: a transfer cut by the network goes on at Retry, sending only the missing parts', async (t) => {
      const owner = await newOwner(c.app)
      const { secret: token } = await c.app.services.apiKeys.create({
        accountId: owner.id,
        name: 't',
        scopes: ALL,
      })
      const r = await newRequest(c.app, token, { title: 'Cut', collectEmail: false })
      const context = await newContext(browser, 'desktop', 'light')
      try {
        const page = await context.newPage()
        await page.addInitScript(() => {
          ;(globalThis as { process?: unknown }).process = { env: { VERCEL_BLOB_RETRIES: '0' } }
        })
        await page.goto(r.publicUrl as string)
        const publicId = new URL(r.publicUrl as string).pathname.split('/').pop() as string
        await page.getByLabel('Your name').fill('Ada Lovelace')
        await page.setInputFiles('input[type="file"]', onDisk)
        const hold = await holdParts(page, 3)
        await page.getByRole('button', { name: 'Send files' }).click()
        const record = await recordWithParts(page, `coffer-request-uploads ${publicId}`, 2)
        proxy.reset()
        const cut = proxy.cutAfter(4 * MiB)
        await hold.release()
        await cut
        const upload = page.locator('.file-item', { hasText: 'holiday-video.bin' })
        await page.waitForFunction(
          () => document.querySelector('.file-item')?.getAttribute('data-state') === 'failed',
          undefined,
          { timeout: 60_000 },
        )
        proxy.heal()
        const status = await call(c.app, 'POST', `/api/v1/public/requests/${publicId}/uploads/status`, {
          body: { uploads: [{ intentId: record.grant.intentId, grant: record.grant.clientPayload.grant }] },
        })
        const parts = (status.body.data[0]?.multipart?.parts ?? []) as { size: number }[]
        const stored = parts.reduce((sum, part) => sum + part.size, 0)
        assert.ok(stored >= 2 * PART, `${stored} bytes stored before the cut: ${JSON.stringify(status.body)}`)

        const sent = partsSent(page)
        proxy.reset()
        await upload.getByRole('button', { name: 'Retry the upload of holiday-video.bin' }).click()
        await page.locator('[data-summary]').waitFor({ timeout: 60_000 })
        const resent = proxy.sent
        t.diagnostic(
          `[${engine}] request page, Retry after a cut: ${stored} of ${SIZE} bytes stored; Retry sent ${resent} bytes (${((100 * resent) / SIZE).toFixed(1)} % of the file; the missing parts hold ${SIZE - stored}); parts sent: ${[...sent].sort((a, b) => a - b).join(', ')}`,
        )
        assert.equal(await upload.getAttribute('data-state'), 'done')
        assert.ok(resent >= SIZE - stored, `${resent} bytes sent`)
        assert.ok(resent <= SIZE - stored + OVERHEAD, `${resent} bytes sent again`)
        assert.ok(!sent.includes(1) && !sent.includes(2), `parts ${sent} sent`)
        const subs = await call(c.app, 'GET', `${REQUESTS}/${r.id}/submissions`, { token })
        const listed = subs.body.data as { submitterName: string; file: { id: string } }[]
        assert.equal(listed.length, 1)
        assert.equal(listed[0]?.submitterName, 'Ada Lovelace')
        assert.equal(await downloadHash(token, listed[0]?.file.id as string), sha256(data))
      } finally {
        proxy.heal()
        await context.close()
      }
    })
  })
}
