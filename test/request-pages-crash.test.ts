/// <reference lib="dom" />
// The server killed (SIGKILL) while a submitter's multipart upload from a request's page is half done, then
// started again on the same port: the page either resumes (the @vercel/blob client retries the parts that
// failed) or says the file failed and sends it again on Retry; either way the file arrives once, byte for
// byte, with its submission, and after the start-up sweep of a second restart no blob is left without its
// file and nothing is left staged. The kill point is checked: parts of the upload had been stored, and not all
// of them. Blobs on the local disk on SQLite's leg, in a bucket of Ceph's object store on PostgreSQL's.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser } from 'playwright-core'
import type { BlobStore } from '../src/platform/blob/blob-store.ts'
import { filesUnder } from './support/blob-store-helpers.ts'
import { browserMissing, launchBrowser, newContext, screenshot, throttleUploads } from './support/browser.ts'
import { newAccount, newKey, type Storage } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { type BlobStorage, blobStorageFor, keysIn, leftoversIn } from './support/s3.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'

/**
 * Four parts of 8 MiB (the page's @vercel/blob client's) and a last one of 4 MiB, all sent at once and sharing
 * the throttled bandwidth: the small one is stored seconds before the others, when the server is killed.
 */
const SIZE = 36 * 1024 * 1024
/** The file's bytes, made the same way in the browser. */
function fileBytes(): Buffer {
  const bytes = Buffer.alloc(SIZE)
  for (let i = 0; i < SIZE; i++) bytes[i] = (i * 7 + (i >>> 11)) & 255
  return bytes
}

async function api(server: ServerProcess, token: string, method: string, url: string, body?: unknown) {
  const response = await fetch(`${server.base}/api/v1${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: response.status, body: (await response.json()) as any }
}

for (const engine of ENGINES) {
  describe(`a file request upload across a server crash [${engine}]`, { skip: browserMissing }, () => {
    let dataDir: string
    let database: Awaited<ReturnType<typeof freshDatabase>>
    let storage: Storage
    let blobs: BlobStorage
    let store: BlobStore
    let server: ServerProcess
    let browser: Browser
    const env = () => ({ DATA_DIR: dataDir, DATABASE_URL: database.url ?? '', ...blobs.env })
    before(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-crash-'))
      database = await freshDatabase(engine, dataDir)
      blobs = await blobStorageFor(engine, dataDir)
      store = await blobs.open()
      storage = { dataDir, databaseUrl: database.url, blobEnv: blobs.env }
      server = await startServer(env())
      browser = await launchBrowser()
    })
    after(async () => {
      await browser?.close()
      await server?.stop()
      await database?.drop()
      await blobs?.drop()
      await rm(dataDir, { recursive: true, force: true })
    })

    /**
     * Bytes of the parts stored whole: on disk, each whole write in its slot is named `<n>-<w>-<size>.slotted`
     * (blob/local-multipart.ts); S3 lists them.
     */
    const bytesStored = async () => {
      if (blobs.kind === 's3') return (await leftoversIn(store)).reduce((sum, upload) => sum + upload.size, 0)
      return (await filesUnder(path.join(dataDir, 'blobs')))
        .map((file) => /^\.tmp\/[^/]+\.mpu\/\d+-[^/]+-(\d+)\.slotted$/.exec(file)?.[1])
        .reduce((sum, size) => sum + Number(size ?? 0), 0)
    }

    test('killed mid-way and restarted: the file arrives once, with its submission; nothing is left over', async () => {
      const account = await newAccount(storage)
      const { key: token } = await newKey(storage, account.email, 'all')
      const folder = await api(server, token, 'POST', '/folders', { name: 'Crash test' })
      const created = await api(server, token, 'POST', '/requests', {
        title: 'Footage',
        collectEmail: false,
        folderId: folder.body.data.id,
      })
      const request = created.body.data

      const context = await newContext(browser)
      try {
        const page = await context.newPage()
        await page.goto(request.publicUrl)
        await page.getByLabel('Your name').fill('Margaret')
        await page.evaluate((size) => {
          const bytes = new Uint8Array(size)
          for (let i = 0; i < size; i++) bytes[i] = (i * 7 + (i >>> 11)) & 255
          const transfer = new DataTransfer()
          transfer.items.add(new File([bytes], 'footage.bin', { type: 'application/octet-stream' }))
          const zone = document.querySelector('[data-dropzone]') as HTMLElement
          zone.dispatchEvent(
            new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }),
          )
        }, SIZE)
        await throttleUploads(page, 4 * 1024 * 1024)
        await page.getByRole('button', { name: 'Send files' }).click()
        // The kill point: some parts stored whole, not all of them.
        for (let i = 0; i < 600 && (await bytesStored()) === 0; i++) {
          await new Promise((resolve) => setTimeout(resolve, 25))
        }
        const stored = await bytesStored()
        assert.ok(stored > 0 && stored < SIZE, `${stored} of ${SIZE} bytes stored in whole parts at the kill`)
        await server.kill()
        assert.deepEqual(await keysIn(store), [], 'no file had been assembled when the server was killed')
        await new Promise((resolve) => setTimeout(resolve, 500))
        server = await startServer(env(), server.port)
        await throttleUploads(page, -1)

        // Resumed by the client's retries, or failed: then sent again on Retry.
        const state = async () => page.locator('.file-item').getAttribute('data-state')
        await page.waitForFunction(
          () =>
            ['done', 'failed'].includes(
              document.querySelector('.file-item')?.getAttribute('data-state') ?? '',
            ),
          undefined,
          { timeout: 120_000 },
        )
        const outcome = await state()
        if (outcome === 'failed') {
          await screenshot(page, `request-${engine}-crash-failed`)
          await page.getByRole('button', { name: 'Send footage.bin again' }).click()
          await page.waitForFunction(
            () => document.querySelector('.file-item')?.getAttribute('data-state') === 'done',
            undefined,
            { timeout: 120_000 },
          )
        }
        await screenshot(page, `request-${engine}-crash-done`)
      } finally {
        await context.close()
      }

      // Once, byte for byte, with its submission; the submission and the file each have the other.
      const submissions = await api(server, token, 'GET', `/requests/${request.id}/submissions`)
      assert.equal(submissions.body.data.length, 1)
      const [submission] = submissions.body.data
      assert.equal(submission.submitterName, 'Margaret')
      const files = await api(server, token, 'GET', `/files?folderId=${folder.body.data.id}`)
      assert.deepEqual(
        files.body.data.map((f: { id: string }) => f.id),
        [submission.file.id],
      )
      const download = await fetch(`${server.base}/api/v1/files/${submission.file.id}/download`, {
        headers: { authorization: `Bearer ${token}` },
      })
      const digest = createHash('sha256')
        .update(Buffer.from(await download.arrayBuffer()))
        .digest('hex')
      assert.equal(digest, createHash('sha256').update(fileBytes()).digest('hex'))
      assert.equal((await api(server, token, 'GET', `/requests/${request.id}`)).body.data.submissionCount, 1)

      // A second restart runs the start-up sweep; then every blob is the file's, nothing is staged.
      await server.stop()
      server = await startServer(env(), server.port)
      await new Promise((resolve) => setTimeout(resolve, 1000))
      assert.deepEqual(await keysIn(store), [`files/${account.id}/${submission.file.id}`])
      assert.deepEqual(await leftoversIn(store), [])
      if (blobs.kind === 'local') {
        assert.deepEqual(await filesUnder(path.join(dataDir, 'blobs')), [
          `files/${account.id}/${submission.file.id}.blob`,
        ])
      }
    })
  })
}
