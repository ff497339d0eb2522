// The SDK (coffer/client) against a real server on both engines: every operation through its method, failures
// as CofferErrors with the envelope's code, message and hint, lists followed to the end, retries after 429,
// uploads of every kind of source through the real @vercel/blob client, and OAuth tokens that refresh
// themselves (and a replayed refresh token reported as such). Its types are checked against the server's
// document in sdk-types.test.ts.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream, openAsBlob } from 'node:fs'
import { mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { setDefaultCACertificates } from 'node:tls'
import { promisify } from 'node:util'
import { Coffer, CofferError, type OAuthTokens } from '../src/clients/sdk/index.ts'
import { browserMissing, launchBrowser, newContext } from './support/browser.ts'
import { createAccount, ENGINES } from './support/harness.ts'
import {
  authorizationUrl,
  consent,
  exchange,
  followInBrowser,
  register,
  signInIfAsked,
} from './support/oauth.ts'
import { samplePng } from './support/sample-files.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const ROOT = path.resolve(import.meta.dirname, '..')

const MiB = 1024 * 1024

/** The SHA-256 of a download's bytes, and how many there were. */
async function digestOf(response: Response): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256')
  let size = 0
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk)
    size += chunk.byteLength
  }
  return { sha256: hash.digest('hex'), size }
}

/** Every item of an async iterable. */
async function collect<Item>(items: AsyncIterable<Item>): Promise<Item[]> {
  const all: Item[] = []
  for await (const item of items) all.push(item)
  return all
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** Fails unless `promise` rejects with a CofferError of `status` and `code` that carries a message and a hint. */
async function assertCofferError(
  promise: Promise<unknown>,
  status: number,
  code: string,
): Promise<CofferError> {
  const error = await promise.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  )
  assert.ok(error instanceof CofferError, String(error))
  assert.equal(error.code, code, error.message)
  assert.equal(error.status, status)
  assert.ok(error.message.length > 0)
  return error
}

for (const engine of ENGINES) {
  describe(`SDK [${engine}]`, () => {
    let ctx: ListeningContext
    let dir: string
    /** A receiver for the webhooks' pings. */
    let receiver: Server
    let receiverUrl: string

    before(async () => {
      ctx = await startListening(engine, { env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } })
      dir = await mkdtemp(path.join(tmpdir(), 'coffer-sdk-'))
      receiver = createServer((request, response) => {
        request.resume()
        request.on('end', () => response.end())
      })
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
      receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
    })
    after(async () => {
      receiver?.close()
      await ctx?.stop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    const clientFor = async (scopes?: Parameters<Awaited<ReturnType<typeof createAccount>>['key']>[0]) => {
      const account = await createAccount(ctx.app)
      const apiKey = scopes ? await account.key(scopes) : account.token
      return { account, coffer: new Coffer({ url: ctx.base, credentials: { apiKey } }) }
    }

    test('files: uploads from a path, bytes, a Blob and a stream; list, search, get, rename, move, download, delete', async () => {
      const { coffer } = await clientFor()
      const folder = await coffer.folders.create('Invoices')

      const onDisk = path.join(dir, 'report.pdf')
      const pdf = randomBytes(3000)
      await writeFile(onDisk, pdf)
      const progress: number[] = []
      const fromPath = await coffer.files.upload(onDisk, {
        folderId: folder.id,
        onProgress: ({ loaded, total }) => {
          assert.equal(total, pdf.length)
          progress.push(loaded)
        },
      })
      assert.deepEqual(
        [fromPath.name, fromPath.contentType, fromPath.size],
        ['report.pdf', 'application/pdf', 3000],
      )
      assert.equal(fromPath.folderId, folder.id)
      assert.equal(progress.at(-1), pdf.length, 'the last progress is every byte')

      const bytes = await coffer.files.upload(Buffer.from('hello, world'), { name: 'hello.txt' })
      assert.equal(bytes.contentType, 'text/plain')
      const blob = await coffer.files.upload(
        new File([new Uint8Array(await samplePng())], 'pixel.png', { type: 'image/png' }),
      )
      assert.deepEqual([blob.name, blob.contentType], ['pixel.png', 'image/png'])
      const streamed = await coffer.files.upload(Readable.from([Buffer.from('a stream')]), {
        name: 'streamed.bin',
        size: 8,
      })
      assert.equal(streamed.size, 8)

      const all = await collect(coffer.files.list({ limit: 2 }))
      assert.deepEqual(
        all.map((f) => f.id),
        [streamed.id, blob.id, bytes.id, fromPath.id],
        'every file, newest first, over two pages',
      )
      const found = await collect(coffer.files.list({ query: 'HELLO' }))
      assert.deepEqual(
        found.map((f) => f.id),
        [bytes.id],
      )
      const inFolder = await coffer.files.page({ folderId: folder.id })
      assert.deepEqual(
        [inFolder.data.map((f) => f.id), inFolder.pagination.nextCursor],
        [[fromPath.id], null],
      )

      assert.equal((await coffer.files.get(bytes.id)).name, 'hello.txt')
      const moved = await coffer.files.update(bytes.id, { name: 'greeting.txt', folderId: folder.id })
      assert.deepEqual([moved.name, moved.folderId], ['greeting.txt', folder.id])

      const whole = await coffer.files.download(fromPath.id)
      assert.equal(whole.status, 200)
      assert.deepEqual(await digestOf(whole), { sha256: sha256(pdf), size: pdf.length })
      const rest = await coffer.files.download(fromPath.id, { from: 1000 })
      assert.equal(rest.status, 206)
      assert.deepEqual(await digestOf(rest), { sha256: sha256(pdf.subarray(1000)), size: 2000 })

      assert.deepEqual(await coffer.files.delete(streamed.id), { id: streamed.id })
      assert.deepEqual(await coffer.files.deleteMany([blob.id, bytes.id]), [blob.id, bytes.id])
      const error = await assertCofferError(coffer.files.get(blob.id), 404, 'not_found')
      assert.ok(error.hint.length > 0, 'the hint of the envelope')
    })

    test('downloads to a file: whole, resumed from an offset, refused without a file, cancelled', async () => {
      const { coffer } = await clientFor()
      const content = randomBytes(3 * MiB + 17)
      const file = await coffer.files.upload(content, { name: 'big.bin' })
      const target = path.join(dir, `saved-${engine}.bin`)
      const seen: number[] = []
      const whole = await coffer.files.downloadTo(file.id, target, { onProgress: (n) => seen.push(n) })
      assert.deepEqual(whole, { bytes: content.length, resumed: false })
      assert.ok((await readFile(target)).equals(content))
      assert.equal(seen.at(-1), content.length, 'progress reaches the end')

      await writeFile(target, content.subarray(0, 1000))
      const resumed = await coffer.files.downloadTo(file.id, target, { from: 1000 })
      assert.deepEqual(resumed, { bytes: content.length - 1000, resumed: true })
      assert.ok((await readFile(target)).equals(content), 'appended to the first 1000 bytes')

      const missing = path.join(dir, `missing-${engine}.bin`)
      await assertCofferError(
        coffer.files.downloadTo('fil_0000000000000000000000000', missing),
        404,
        'not_found',
      )
      await assert.rejects(stat(missing), 'a refusal writes no file')
      const nowhere = path.join(dir, 'no-such-directory', 'saved.bin')
      const unwritable = await assertCofferError(coffer.files.downloadTo(file.id, nowhere), 0, 'write_failed')
      assert.match(unwritable.message, /ENOENT/)

      const controller = new AbortController()
      controller.abort()
      await assertCofferError(
        coffer.files.downloadTo(file.id, missing, { signal: controller.signal }),
        0,
        'aborted',
      )

      // A fetch of the caller's own carries the download too (a proxy, a test double of theirs).
      const sent: string[] = []
      const own = new Coffer({
        url: ctx.base,
        credentials: { apiKey: (await createAccount(ctx.app)).token },
        fetch: (input, init) => {
          sent.push(input instanceof Request ? input.url : String(input))
          return fetch(input, init)
        },
      })
      const theirs = await own.files.upload(content.subarray(0, 5000), { name: 'small.bin' })
      sent.length = 0
      await own.files.downloadTo(theirs.id, target)
      assert.ok((await readFile(target)).equals(content.subarray(0, 5000)))
      assert.deepEqual(sent, [`${ctx.base}/api/v1/files/${theirs.id}/download`])
    })

    test('uploads at the multipart switch: 5 MiB in one request, 5 MiB + 1 in parts; 0 bytes refused clearly', async () => {
      const { coffer } = await clientFor()
      for (const size of [5 * MiB, 5 * MiB + 1]) {
        const content = randomBytes(size)
        const onDisk = path.join(dir, `switch-${size}.bin`)
        await writeFile(onDisk, content)
        const cases = [
          ['path', () => coffer.files.upload(onDisk)],
          ['stream', () => coffer.files.upload(createReadStream(onDisk), { name: 'streamed.bin', size })],
          ['Blob', () => coffer.files.upload(new Blob([content]), { name: 'blob.bin' })],
        ] as const
        for (const [source, send] of cases) {
          const file = await send()
          assert.equal(file.size, size, `${source}, ${size} bytes`)
          const downloaded = await digestOf(await coffer.files.download(file.id))
          assert.equal(downloaded.sha256, sha256(content), `${source}, ${size} bytes`)
        }
      }
      const empty = await assertCofferError(
        coffer.files.upload(Buffer.alloc(0), { name: 'empty.txt' }),
        400,
        'invalid_request',
      )
      assert.match(empty.message, /size/)
      await assertCofferError(coffer.files.upload(Readable.from([]), { name: 'x' }), 0, 'invalid_argument')
      await assertCofferError(coffer.files.upload(path.join(dir, 'missing')), 0, 'invalid_argument')
    })

    test('an upload cancelled by its signal rejects as aborted', async () => {
      const { coffer } = await clientFor()
      const controller = new AbortController()
      const content = randomBytes(12 * MiB)
      const upload = coffer.files.upload(new Blob([content]), {
        name: 'big.bin',
        signal: controller.signal,
        onProgress: ({ loaded }) => {
          if (loaded > 0) controller.abort()
        },
      })
      await assertCofferError(upload, 0, 'aborted')
    })

    test('folders, shares, requests, submissions, analytics and webhooks through their methods', async () => {
      const { coffer } = await clientFor()
      const capabilities = await coffer.capabilities()
      assert.equal(capabilities.name, 'Coffer')

      const folder = await coffer.folders.create('Clients')
      assert.equal((await coffer.folders.get(folder.id)).name, 'Clients')
      assert.equal((await coffer.folders.rename(folder.id, 'Customers')).name, 'Customers')
      const other = await coffer.folders.create('Other')
      assert.deepEqual(
        (await collect(coffer.folders.list({ limit: 1 }))).map((f) => f.id).sort(),
        [folder.id, other.id].sort(),
      )
      assert.equal((await coffer.folders.delete(other.id)).id, other.id)

      const file = await coffer.files.upload(Buffer.from('shared'), {
        name: 'shared.txt',
        folderId: folder.id,
      })
      const share = await coffer.shares.create({ fileId: file.id })
      assert.equal(share.isActive, true)
      const page = await fetch(share.publicUrl)
      assert.equal(page.status, 200)
      await page.arrayBuffer()
      assert.equal((await coffer.shares.get(share.id)).file.name, 'shared.txt')
      assert.deepEqual(
        (await collect(coffer.shares.list())).map((s) => s.id),
        [share.id],
      )
      // shares.share applies settings to the link that is on, which shares.create leaves as it is.
      assert.equal((await coffer.shares.create({ fileId: file.id, maxDownloads: 2 })).maxDownloads, null)
      const limited = await coffer.shares.share(file.id, { maxDownloads: 2, password: 'open sesame' })
      assert.deepEqual([limited.id, limited.maxDownloads, limited.hasPassword], [share.id, 2, true])
      assert.equal((await coffer.shares.share(file.id, { password: null })).hasPassword, false)
      assert.equal((await coffer.shares.update(share.id, { isActive: false })).isActive, false)
      // A link that is off is turned on again, with the settings given.
      const again = await coffer.shares.share(file.id, { maxDownloads: null })
      assert.deepEqual([again.id, again.state, again.maxDownloads], [share.id, 'active', null])
      assert.equal((await coffer.shares.update(share.id, { isActive: false })).isActive, false)

      const request = await coffer.requests.create({
        title: 'Tax papers',
        folderId: folder.id,
        collectEmail: false,
      })
      assert.equal((await coffer.requests.get(request.id)).title, 'Tax papers')
      assert.equal((await coffer.requests.update(request.id, { description: 'Scans' })).description, 'Scans')
      assert.equal((await coffer.requests.setLimits(request.id, { maxFiles: 3 })).maxFiles, 3)
      assert.equal((await coffer.requests.limits(request.id)).maxFiles, 3)
      assert.deepEqual(
        (await collect(coffer.requests.list())).map((r) => r.id),
        [request.id],
      )

      // The public side, as a submitter's page: without a credential.
      const publicId = new URL(request.publicUrl).pathname.split('/').at(-1) as string
      const submitter = new Coffer({ url: ctx.base })
      assert.equal((await submitter.publicRequests.get(publicId)).title, 'Tax papers')
      const { uploads } = await submitter.publicRequests.prepareUploads(publicId, {
        files: [{ name: 'w2.pdf', type: 'application/pdf', size: 10 }],
      })
      const [grant] = uploads
      assert.ok(grant)
      const handle = [{ intentId: grant.intentId, grant: grant.clientPayload.grant }]
      const status = await submitter.publicRequests.uploadStatus(publicId, { uploads: handle })
      assert.equal(status[0]?.status, 'pending')
      await submitter.publicRequests.cancelUploads(publicId, { uploads: handle })
      assert.deepEqual(await collect(coffer.requests.submissions(request.id)), [])

      const totals = await coffer.analytics.get()
      assert.ok('activeShares' in totals && totals.views === 1, JSON.stringify(totals))
      const ofShare = await coffer.analytics.get({ shareId: share.id })
      assert.ok('shareId' in ofShare && ofShare.shareId === share.id)
      assert.ok('days' in (await coffer.analytics.daily()))
      assert.deepEqual(
        (await coffer.analytics.topShares()).mostViewed.map((s) => s.shareId),
        [share.id],
      )

      const webhook = await coffer.webhooks.create({ url: receiverUrl, events: ['file.created'] })
      assert.ok(webhook.secret.length > 0)
      assert.equal((await coffer.webhooks.get(webhook.id)).url, receiverUrl)
      assert.equal((await coffer.webhooks.update(webhook.id, { description: 'CI' })).description, 'CI')
      assert.notEqual((await coffer.webhooks.rotateSecret(webhook.id)).secret, webhook.secret)
      const ping = await coffer.webhooks.ping(webhook.id)
      const deliveries = await collect(coffer.webhooks.deliveries(webhook.id))
      const delivery = deliveries.find((d) => d.eventId === ping.eventId)
      assert.ok(delivery)
      await coffer.webhooks.retryDelivery(webhook.id, delivery.id)
      assert.deepEqual(
        (await collect(coffer.webhooks.list())).map((w) => w.id),
        [webhook.id],
      )
      await coffer.webhooks.delete(webhook.id)
      await assertCofferError(coffer.webhooks.get(webhook.id), 404, 'not_found')
    })

    test("folderShares: create, get, list, update; share makes, applies settings to, and turns on a folder's link", async () => {
      const { coffer } = await clientFor()
      const folder = await coffer.folders.create('Handouts')
      const other = await coffer.folders.create('Slides')
      await coffer.files.upload(Buffer.from('week one'), { name: 'week-1.txt', folderId: folder.id })

      const share = await coffer.folderShares.create({ folderId: folder.id })
      assert.deepEqual(
        [share.folderId, share.folder.name, share.state, share.hasPassword, share.maxDownloads],
        [folder.id, 'Handouts', 'active', false, null],
      )
      const page = await fetch(share.publicUrl)
      assert.equal(page.status, 200)
      assert.match(await page.text(), /week-1\.txt/)
      assert.equal((await coffer.folderShares.get(share.id)).viewCount, 1)
      const second = await coffer.folderShares.create({ folderId: other.id })
      assert.deepEqual(
        (await collect(coffer.folderShares.list({ limit: 1 }))).map((s) => s.id).sort(),
        [share.id, second.id].sort(),
      )
      assert.equal((await coffer.folderShares.page({ limit: 1 })).data.length, 1)
      assert.equal((await coffer.folderShares.ofFolder(other.id))?.id, second.id)
      assert.equal(await coffer.folderShares.ofFolder('fld_0000000000000000'), undefined)

      // create answers the link that is on unchanged; share applies the settings given, keeping the others.
      assert.equal(
        (await coffer.folderShares.create({ folderId: folder.id, maxDownloads: 2 })).maxDownloads,
        null,
      )
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString()
      const limited = await coffer.folderShares.share(folder.id, { maxDownloads: 2, password: 'open sesame' })
      assert.deepEqual([limited.id, limited.maxDownloads, limited.hasPassword], [share.id, 2, true])
      assert.match(await (await fetch(share.publicUrl)).text(), /This link is protected/)
      const dated = await coffer.folderShares.share(folder.id, { expiresAt })
      assert.deepEqual(
        [dated.maxDownloads, dated.hasPassword, Date.parse(dated.expiresAt ?? '')],
        [2, true, Date.parse(expiresAt)],
      )
      const open = await coffer.folderShares.share(folder.id, { password: null, maxDownloads: null })
      assert.deepEqual([open.hasPassword, open.maxDownloads, open.expiresAt], [false, null, dated.expiresAt])
      assert.equal(
        (await coffer.folderShares.share(folder.id)).id,
        share.id,
        'no settings: the link as it is',
      )

      // A link that is off is turned on again, with the settings given (a new password too).
      const off = await coffer.folderShares.update(share.id, { isActive: false })
      assert.deepEqual([off.isActive, off.state], [false, 'disabled'])
      assert.equal((await fetch(share.publicUrl)).status, 410)
      const again = await coffer.folderShares.share(folder.id, { password: 'second secret', maxDownloads: 3 })
      assert.deepEqual(
        [again.id, again.state, again.hasPassword, again.maxDownloads, again.expiresAt],
        [share.id, 'active', true, 3, null],
      )
      // A limit below the downloads so far: the link is on, and its state says it does not open.
      const zip = await fetch(`${second.publicUrl}/zip`)
      assert.equal(zip.status, 200)
      await zip.arrayBuffer()
      const exhausted = await coffer.folderShares.share(other.id, { maxDownloads: 1 })
      assert.deepEqual([exhausted.isActive, exhausted.state], [true, 'exhausted'])

      await assertCofferError(coffer.folderShares.share('fld_0000000000000000'), 404, 'not_found')
      await assertCofferError(
        coffer.folderShares.get(share.id.replace(/.$/, (c) => (c === '0' ? '1' : '0'))),
        404,
        'not_found',
      )
    })

    test('trash: a deleted file listed page after page, restored with its link, deleted for good, emptied', async () => {
      const { coffer } = await clientFor()
      assert.equal((await coffer.capabilities()).trash.retentionDays, 30)
      const folder = await coffer.folders.create('Drafts')
      const kept = await coffer.files.upload(Buffer.from('kept'), { name: 'kept.txt', folderId: folder.id })
      const share = await coffer.shares.create({ fileId: kept.id })
      const names = ['a.txt', 'b.txt', 'c.txt']
      const others = []
      for (const name of names) others.push(await coffer.files.upload(Buffer.from(name), { name }))
      assert.deepEqual(await collect(coffer.trash.list()), [])

      assert.deepEqual(await coffer.files.delete(kept.id), { id: kept.id })
      assert.deepEqual(
        (await coffer.files.deleteMany(others.map((f) => f.id))).sort(),
        others.map((f) => f.id).sort(),
      )
      await assertCofferError(coffer.files.get(kept.id), 404, 'not_found')
      // Every one, followed page after page; each with when it was deleted and when it goes for good.
      const trashed = await collect(coffer.trash.list({ limit: 2 }))
      assert.deepEqual(trashed.map((f) => f.id).sort(), [kept.id, ...others.map((f) => f.id)].sort())
      const first = await coffer.trash.page({ limit: 2 })
      assert.equal(first.data.length, 2)
      assert.ok(first.pagination.nextCursor)
      const inTrash = trashed.find((f) => f.id === kept.id)
      assert.ok(inTrash)
      assert.equal(inTrash.name, 'kept.txt')
      const days = (Date.parse(inTrash.purgeAt) - Date.parse(inTrash.deletedAt)) / 86_400_000
      assert.equal(Math.round(days), 30)

      const restored = await coffer.trash.restore(kept.id)
      assert.deepEqual(
        [restored.id, restored.folderId, restored.share?.publicUrl],
        [kept.id, folder.id, share.publicUrl],
      )
      assert.equal((await coffer.files.get(kept.id)).name, 'kept.txt')
      await assertCofferError(coffer.trash.restore(kept.id), 404, 'not_found')

      assert.deepEqual(await coffer.trash.delete(others[0]?.id ?? ''), { id: others[0]?.id })
      await assertCofferError(coffer.trash.delete(others[0]?.id ?? ''), 404, 'not_found')
      assert.equal(await coffer.trash.empty(), 2)
      assert.deepEqual(await collect(coffer.trash.list()), [])
      assert.equal(await coffer.trash.empty(), 0)
      assert.deepEqual(
        (await collect(coffer.files.list())).map((f) => f.id),
        [kept.id],
      )
    })

    test('trash: with a read-only key, listed but not restored, emptied or deleted from', async () => {
      const { account, coffer } = await clientFor(['files:read'])
      const writer = new Coffer({ url: ctx.base, credentials: { apiKey: account.token } })
      const file = await writer.files.upload(Buffer.from('x'), { name: 'x.txt' })
      await writer.files.delete(file.id)
      assert.deepEqual(
        (await collect(coffer.trash.list())).map((f) => f.id),
        [file.id],
      )
      await assertCofferError(coffer.trash.restore(file.id), 403, 'insufficient_scope')
      await assertCofferError(coffer.trash.delete(file.id), 403, 'insufficient_scope')
      await assertCofferError(coffer.trash.empty(), 403, 'insufficient_scope')
    })

    test('refusals are CofferErrors: a missing scope, a bad argument, an unknown key', async () => {
      const { coffer } = await clientFor(['files:read'])
      const scope = await assertCofferError(coffer.folders.create('Nope'), 403, 'insufficient_scope')
      assert.match(scope.message, /folders:write/)
      await assertCofferError(coffer.files.page({ limit: 0 }), 400, 'invalid_request')
      const stranger = new Coffer({ url: ctx.base, credentials: { apiKey: `coffer_${'x'.repeat(43)}` } })
      await assertCofferError(stranger.files.page(), 401, 'unauthorized')
      const nowhere = new Coffer({ url: 'http://127.0.0.1:9', credentials: { apiKey: 'x' } })
      await assertCofferError(nowhere.files.page(), 0, 'network_error')
    })

    test('429 is retried after its Retry-After; with no retries left, it is a CofferError', async () => {
      // A server of its own with a limit of 3 requests a second per credential.
      const limited = await startListening(engine, {
        env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_SECONDS: '1' },
      })
      try {
        const account = await createAccount(limited.app)
        const patient = new Coffer({ url: limited.base, credentials: { apiKey: account.token } })
        const started = Date.now()
        for (let i = 0; i < 7; i++) assert.deepEqual((await patient.folders.page()).data, [])
        assert.ok(Date.now() - started >= 1000, 'the seven requests waited for the window to pass')
        const hasty = new Coffer({ url: limited.base, credentials: { apiKey: account.token }, retries: 0 })
        const refusals = await Promise.allSettled(Array.from({ length: 5 }, () => hasty.folders.page()))
        const refused = refusals.find((r) => r.status === 'rejected')
        assert.ok(refused, 'five requests at once, three allowed')
        assert.ok(refused.reason instanceof CofferError)
        assert.deepEqual([refused.reason.status, refused.reason.code], [429, 'rate_limited'])
      } finally {
        await limited.stop()
      }
    })

    test('OAuth tokens refresh themselves (rotated, stored by onRefresh); a replayed refresh token is reported', {
      skip: browserMissing,
    }, async () => {
      const email = `sdk-${engine}-${randomBytes(4).toString('hex')}@example.com`
      const password = 'correct horse battery staple'
      await ctx.app.services.accounts.create({ email, password })
      const oc = await register(ctx.base, { client_name: 'SDK test' })
      const authorization = await authorizationUrl(oc, ['files:read', 'folders:read', 'folders:write'])
      const browser = await launchBrowser()
      let tokens: Awaited<ReturnType<typeof exchange>>
      try {
        const page = await (await newContext(browser)).newPage()
        const back = await followInBrowser(page, authorization.url, async (p) => {
          await signInIfAsked(p, email, password)
          await consent(p, ['files:read', 'folders:read', 'folders:write'])
        })
        tokens = await exchange(oc, authorization, back)
      } finally {
        await browser.close()
      }
      const first: OAuthTokens = {
        accessToken: tokens.access_token,
        refreshToken: tokens.refresh_token as string,
        // Expired, as far as the SDK knows: it refreshes before the first request.
        expiresAt: Date.now() - 1,
      }
      const stored: OAuthTokens[] = []
      const coffer = new Coffer({
        url: ctx.base,
        credentials: {
          oauth: { clientId: oc.client.client_id, tokens: first, onRefresh: (t) => void stored.push(t) },
        },
      })
      // Requests at once share one refresh: a second use of the refresh token would end the grant.
      await Promise.all([coffer.folders.create('A'), coffer.folders.create('B'), coffer.files.page()])
      assert.equal(stored.length, 1, 'one refresh for three requests')
      const [second] = stored
      assert.ok(
        second && second.accessToken !== first.accessToken && second.refreshToken !== first.refreshToken,
      )
      assert.ok((second.expiresAt ?? 0) > Date.now())
      assert.equal((await collect(coffer.folders.list())).length, 2)

      // A copy of the old token set (a second process that missed the rotation) refreshes with the spent
      // refresh token: the server ends the grant, and the SDK says what happened and what to do.
      const stale = new Coffer({
        url: ctx.base,
        credentials: { oauth: { clientId: oc.client.client_id, tokens: first } },
      })
      const replay = await assertCofferError(stale.files.page(), 401, 'refresh_failed')
      assert.match(replay.message, /used already/)
      assert.match(replay.hint, /coffer login/)
      // The grant is gone: the first client's token is refused, and so is its refresh.
      await assertCofferError(coffer.files.page(), 401, 'refresh_failed')
    })

    test('the browser build: a page uploads a File and lists it, with an API key', {
      skip: browserMissing,
    }, async () => {
      const { account } = await clientFor()
      const manifest = JSON.parse(await readFile(path.join(ROOT, 'dist', 'manifest.json'), 'utf8'))
      const sdk = `/assets/${manifest.files['sdk.js']}`
      const browser = await launchBrowser()
      try {
        const page = await (await newContext(browser)).newPage()
        // A page of the server's own origin (the API sends no CORS headers), without the CSP of Coffer's
        // pages, which allow their own scripts only: served by the browser's interception, as a site's page.
        await page.route(`${ctx.base}/sdk-page`, (route) =>
          route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>SDK</title>' }),
        )
        await page.goto(`${ctx.base}/sdk-page`)
        const result = await page.evaluate(
          async ({ sdk, base, apiKey }) => {
            const { Coffer } = await import(sdk)
            const coffer = new Coffer({ url: base, credentials: { apiKey } })
            const loaded: number[] = []
            const file = await coffer.files.upload(
              new File(['made in a browser'], 'page.txt', { type: 'text/plain' }),
              {
                onProgress: ({ loaded: sent }: { loaded: number }) => loaded.push(sent),
              },
            )
            const listed = []
            for await (const item of coffer.files.list()) listed.push(item.id)
            const text = await (await coffer.files.download(file.id)).text()
            return { id: file.id, name: file.name, listed, text, loaded: loaded.at(-1) }
          },
          { sdk, base: ctx.base, apiKey: account.token },
        )
        assert.deepEqual(result, {
          id: result.id,
          name: 'page.txt',
          listed: [result.id],
          text: 'made in a browser',
          loaded: 17,
        })
      } finally {
        await browser.close()
      }
    })
  })
}

// What downloadTo's own HTTP/1.1 reader (sdk/save.ts) meets beyond Coffer's answers: a head and body in separate
// reads, bodies it leaves to fetch (chunked, behind a redirect), a connection cut short, an error envelope,
// and TLS. A server of the test's own, since Coffer gives none of these on demand.
describe('SDK: downloads to a file, the answers of other servers', () => {
  const body = randomBytes(300_000)
  let dir: string
  let plain: Server
  let secure: HttpsServer
  const serve = (request: IncomingMessage, response: ServerResponse) => {
    const id = /^\/api\/v1\/files\/(\w+)\/download$/.exec(request.url ?? '')?.[1]
    if (request.headers.authorization !== 'Bearer coffer_test') {
      response.writeHead(401).end()
      return
    }
    if (id === 'split') {
      response.writeHead(200, { 'content-length': body.length }).flushHeaders()
      setTimeout(() => response.end(body), 50)
    } else if (id === 'chunked') {
      response.write(body.subarray(0, 1000))
      setTimeout(() => response.end(body.subarray(1000)), 20)
    } else if (id === 'moved') {
      response.writeHead(302, { location: '/api/v1/files/split/download', 'content-length': 0 }).end()
    } else if (id === 'stalled') {
      // Half the body, then nothing until the client goes.
      response.writeHead(200, { 'content-length': body.length }).write(body.subarray(0, 150_000))
    } else if (id === 'cut') {
      response.writeHead(200, { 'content-length': body.length }).write(body.subarray(0, 50_000))
      setTimeout(() => response.destroy(), 50)
    } else {
      const envelope = JSON.stringify({
        error: { code: 'not_found', message: 'No such file.', hint: 'Look.' },
      })
      response.writeHead(404, { 'content-type': 'application/json' }).end(envelope)
    }
  }

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-save-'))
    plain = createServer(serve)
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
    // A certificate for localhost made here, trusted by this process alone.
    const key = path.join(dir, 'key.pem')
    const cert = path.join(dir, 'cert.pem')
    await promisify(execFile)('openssl', [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1'],
      ...['-keyout', key, '-out', cert, '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'],
    ])
    secure = createHttpsServer({ key: await readFile(key), cert: await readFile(cert) }, serve)
    await new Promise<void>((resolve) => secure.listen(0, 'localhost', resolve))
    setDefaultCACertificates([await readFile(cert, 'utf8')])
  })
  after(async () => {
    plain?.close()
    secure?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  const coffer = (url: string) => new Coffer({ url, credentials: { apiKey: 'coffer_test' }, retries: 0 })

  test('a head and a body read apart, chunked and redirected bodies (through fetch), over HTTP and TLS', async () => {
    const origins = [
      `http://127.0.0.1:${(plain.address() as AddressInfo).port}`,
      `https://localhost:${(secure.address() as AddressInfo).port}`,
    ]
    for (const origin of origins) {
      for (const id of ['split', 'chunked', 'moved']) {
        const target = path.join(dir, `${id}.bin`)
        const saved = await coffer(origin).files.downloadTo(id, target)
        assert.deepEqual(saved, { bytes: body.length, resumed: false }, `${origin} ${id}`)
        assert.ok((await readFile(target)).equals(body), `${origin} ${id}`)
      }
    }
  })

  test('a connection cut short, a download cancelled, an error envelope and a file that cannot be written are CofferErrors', async () => {
    const origin = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`
    const cut = await assertCofferError(
      coffer(origin).files.downloadTo('cut', path.join(dir, 'cut.bin')),
      0,
      'network_error',
    )
    assert.match(cut.message, /closed after 50000 of 300000 bytes/)
    assert.equal((await stat(path.join(dir, 'cut.bin'))).size, 50_000, 'what came is kept, to resume from')
    const missing = await assertCofferError(
      coffer(origin).files.downloadTo('gone', path.join(dir, 'gone.bin')),
      404,
      'not_found',
    )
    assert.deepEqual([missing.message, missing.hint], ['No such file.', 'Look.'])
    // Cancelled part way (Ctrl-C in `coffer download`): the signal ends the transfer, and what came is kept.
    const controller = new AbortController()
    const stalled = path.join(dir, 'stalled.bin')
    const cancelled = coffer(origin).files.downloadTo('stalled', stalled, {
      signal: controller.signal,
      onProgress: (written) => {
        if (written >= 150_000) controller.abort()
      },
    })
    await assertCofferError(cancelled, 0, 'aborted')
    assert.equal((await stat(stalled)).size, 150_000)
    // Through fetch too (a chunked body), a file that cannot be written is said as such.
    const nowhere = path.join(dir, 'no-such-directory', 'chunked.bin')
    await assertCofferError(coffer(origin).files.downloadTo('chunked', nowhere), 0, 'write_failed')
  })
})

// The largest size, from each kind of source, once: the transfer does not depend on the database engine,
// and a GiB three times is most of a minute here. The bytes are checked by downloading each file back.
describe('SDK: 1 GiB uploads from a path, a stream and a Blob [sqlite]', () => {
  let ctx: ListeningContext
  let dir: string
  before(async () => {
    ctx = await startListening('sqlite')
    dir = await mkdtemp(path.join(tmpdir(), 'coffer-sdk-gib-'))
  })
  after(async () => {
    await ctx?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('each arrives whole, in parts, and downloads to a file again byte for byte', {
    timeout: 600_000,
  }, async () => {
    const coffer = new Coffer({
      url: ctx.base,
      credentials: { apiKey: (await createAccount(ctx.app)).token },
    })
    const source = path.join(dir, 'source.bin')
    const hash = createHash('sha256')
    const handle = await open(source, 'w')
    for (let i = 0; i < 64; i++) {
      const chunk = randomBytes(16 * MiB)
      hash.update(chunk)
      await handle.write(chunk)
    }
    await handle.close()
    const expected = hash.digest('hex')
    const size = 1024 * MiB
    const cases = [
      ['path', () => coffer.files.upload(source)],
      ['stream', () => coffer.files.upload(createReadStream(source), { name: 'streamed.bin', size })],
      ['Blob', async () => coffer.files.upload(await openAsBlob(source), { name: 'blob.bin' })],
    ] as const
    const copy = path.join(dir, 'copy.bin')
    for (const [kind, send] of cases) {
      const file = await send()
      assert.equal(file.size, size, kind)
      await coffer.files.downloadTo(file.id, copy)
      const copied = createHash('sha256')
      for await (const chunk of createReadStream(copy)) copied.update(chunk)
      assert.equal(copied.digest('hex'), expected, kind)
      await coffer.files.delete(file.id)
    }
  })
})
