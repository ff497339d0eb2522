// The server killed (SIGKILL, as a power cut would) at chosen points, then started again, on each engine:
// what the crash interrupted is finished at start, and nothing acknowledged is lost. Each kill point is a
// fault point of the server (src/platform/fault-points.ts), armed through COFFER_FAULT_POINT; each test proves the
// point was hit (the process died by SIGKILL, and the state at that moment is the one the point leaves). The
// events of a change killed after its commit, and a webhook delivery whose sender died holding it, reach their
// receiver after the restart, once.
// Blobs on the local disk on SQLite's leg, in a bucket of Ceph's object store on PostgreSQL's.
// Also slow clients against the server as shipped: bodies that trickle on every small-body surface are cut off
// by its own limits while other clients are served (issue 23, item 9).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtemp, rm, utimes } from 'node:fs/promises'
import { createServer, get as httpGet } from 'node:http'
import { type AddressInfo, connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import type { BlobStore } from '../src/platform/blob/blob-store.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { filesUnder } from './support/blob-store-helpers.ts'
import { cli, newAccount, newKey, type Storage } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { type BlobStorage, blobStorageFor, keysIn, leftoversIn } from './support/s3.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'
import { prepareUploads, uploadWithGrant, waitForUpload } from './support/uploads.ts'

/** A kill point's test fails, rather than hangs the suite, when something never answers. */
const STEP_TIMEOUT_MS = 90_000

/** GET `target` from the local address `from`, on a connection of its own. */
function getFrom(from: string, port: number, target: string): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const request = httpGet(
      { host: '127.0.0.1', port, path: target, localAddress: from, agent: false },
      (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }))
      },
    )
    request.on('error', reject)
  })
}

/** A webhook receiver on 127.0.0.1: every event it got, by `webhook-id` and type; it answers 200. */
async function webhookReceiver() {
  const received: { id: string; type: string }[] = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const { type } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string }
      received.push({ id: String(request.headers['webhook-id']), type })
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    ofType: (type: string) => received.filter((event) => event.type === type),
    close: () => new Promise((resolve) => server.close(resolve)),
  }
}

/** Waits until `check` holds, or fails after `ms`. */
async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

for (const engine of ENGINES) {
  describe(`the server killed at fault points [${engine}]`, () => {
    let dataDir: string
    let database: Awaited<ReturnType<typeof freshDatabase>>
    let storage: Storage
    let blobs: BlobStorage
    /** The store the servers use, as the test sees it. */
    let store: BlobStore
    let token: string
    let server: ServerProcess | undefined
    const env = (faultPoint?: string) => ({
      DATA_DIR: dataDir,
      DATABASE_URL: database.url ?? '',
      ...blobs.env,
      // A hundred uploads by one key take more requests than the default limit allows in a minute.
      RATE_LIMIT_MAX: '100000',
      // Two thousand views at once from this one address, each on a connection of its own.
      MAX_CONNECTIONS_PER_ADDRESS: '0',
      // Webhooks to the test's receiver on 127.0.0.1.
      WEBHOOKS_ALLOW_PRIVATE: 'true',
      ...(faultPoint ? { COFFER_FAULT_POINT: faultPoint } : {}),
    })
    const db = () => openDatabase({ dataDir, databaseUrl: database.url, poolSize: 1 })

    before(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-faults-'))
      database = await freshDatabase(engine, dataDir)
      blobs = await blobStorageFor(engine, dataDir)
      store = await blobs.open()
      storage = { dataDir, databaseUrl: database.url, blobEnv: blobs.env }
      server = await startServer(env())
      const account = await newAccount(storage)
      token = (await newKey(storage, account.email, 'all')).key
      await server.stop()
      server = undefined
    })
    after(async () => {
      await server?.stop()
      await database?.drop()
      await blobs?.drop()
      await rm(dataDir, { recursive: true, force: true })
    })

    /** Deletes a test's webhook endpoint, so that the uploads of later tests send it nothing. */
    async function deleteEndpoint(on: ServerProcess, id: string): Promise<void> {
      const response = await fetch(`${on.base}/api/v1/webhooks/${id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}` },
      })
      assert.equal(response.status, 200)
    }

    /** Uploads `count` small files through the API of `on`; resolves with their ids. */
    async function uploadFiles(on: ServerProcess, count: number): Promise<string[]> {
      process.env.VERCEL_BLOB_API_URL = `${on.base}/blob`
      const grants = await prepareUploads(
        on.base,
        token,
        Array.from({ length: count }, (_, i) => ({ name: `f${i}.txt`, type: 'text/plain', size: 8 })),
      )
      const ids: string[] = []
      for (let i = 0; i < grants.length; i += 10) {
        const batch = grants.slice(i, i + 10)
        await Promise.all(
          batch.map((grant, j) =>
            uploadWithGrant(grant, Buffer.from(`file ${String(i + j).padStart(3, '0')}`)),
          ),
        )
        for (const grant of batch) {
          const status = await waitForUpload(grant, token)
          assert.equal(status.status, 'complete')
          if (status.status === 'complete') ids.push(status.result.id)
        }
      }
      return ids
    }

    test('the purge of files whose time in the trash is over, killed after its commit: the blobs go at the next start', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      server = await startServer(env())
      const ids = await uploadFiles(server, 20)
      const trashed = await fetch(`${server.base}/api/v1/files`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ fileIds: ids }),
      })
      assert.equal(trashed.status, 200)
      await server.stop()
      server = undefined
      const fileBlobs = async () => (await keysIn(store, 'files/')).length
      assert.equal(await fileBlobs(), 20)
      // Their time in the trash is over, as if the retention had passed while the server was down.
      const clock = db()
      try {
        await clock.kysely
          .updateTable('files')
          .set({ purge_at: Date.now() - 1000 })
          .where('id', 'in', ids)
          .execute()
      } finally {
        await clock.close()
      }

      // The purge runs as the server starts, and the server dies once it has committed.
      const started = await startServer(env('files-deleted')).catch((error: Error) => error)
      if (started instanceof Error) assert.match(started.message, /killed by SIGKILL/)
      else {
        await started.exited()
        assert.equal(started.child.signalCode, 'SIGKILL')
      }
      const reader = db()
      try {
        const rows = await reader.kysely.selectFrom('files').select('id').where('id', 'in', ids).execute()
        assert.deepEqual(rows, [], 'the purge committed')
        const recorded = await reader.kysely.selectFrom('blob_deletions').select('key').execute()
        assert.equal(recorded.length, 20)
      } finally {
        await reader.close()
      }
      assert.equal(await fileBlobs(), 20, 'killed before it removed a blob')

      server = await startServer(env())
      const after = db()
      try {
        const forgotten = async () =>
          (await after.kysely.selectFrom('blob_deletions').select('key').execute()).length === 0
        await eventually(forgotten, 5000, 'the start-up sweep')
        assert.equal(await fileBlobs(), 0)
      } finally {
        await after.close()
      }
      await server.stop()
      server = undefined
    })

    test('an emptying of the trash of 100 files killed after its commit: the blobs are removed at the next start', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      server = await startServer(env('files-deleted'))
      const ids = await uploadFiles(server, 100)
      const fileBlobs = async () => (await keysIn(store, 'files/')).length
      assert.equal(await fileBlobs(), 100)

      // Into the trash (the files' rows and bytes stay), then deleted for good from it.
      const trashed = await fetch(`${server.base}/api/v1/files`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ fileIds: ids }),
      })
      assert.equal(trashed.status, 200)
      assert.equal(await fileBlobs(), 100)
      const deleting = fetch(`${server.base}/api/v1/trash`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}` },
      })
      await assert.rejects(deleting, 'the server died before it answered')
      await server.exited()
      assert.equal(server.child.signalCode, 'SIGKILL')

      // The point: the rows are gone and their blobs recorded, the blobs not yet removed.
      const reader = db()
      try {
        const rows = await reader.kysely.selectFrom('files').select('id').where('id', 'in', ids).execute()
        assert.deepEqual(rows, [])
        const recorded = await reader.kysely.selectFrom('blob_deletions').select('key').execute()
        assert.equal(recorded.length, 100)
      } finally {
        await reader.close()
      }
      assert.equal(await fileBlobs(), 100)

      server = await startServer(env())
      const after = db()
      try {
        // The sweep removes the blobs, then forgets them.
        const forgotten = async () =>
          (await after.kysely.selectFrom('blob_deletions').select('key').execute()).length === 0
        await eventually(forgotten, 5000, 'the start-up sweep')
        assert.equal(await fileBlobs(), 0)
      } finally {
        await after.close()
      }
      await server.stop()
      server = undefined
    })

    test('processing killed after creating the file: the upload completes at the next start, once', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      server = await startServer(env('file-created'))
      process.env.VERCEL_BLOB_API_URL = `${server.base}/blob`
      const [grant] = await prepareUploads(server.base, token, [
        { name: 'once.txt', type: 'text/plain', size: 4 },
      ])
      assert.ok(grant)
      await uploadWithGrant(grant, Buffer.from('once'))
      await server.exited()
      assert.equal(server.child.signalCode, 'SIGKILL')

      // The point: the file exists, the upload is still processing, under the dead process's lease.
      const reader = db()
      try {
        const intent = await reader.kysely
          .selectFrom('upload_intents')
          .select(['state', 'file_id', 'lease_until'])
          .where('id', '=', grant.intentId)
          .executeTakeFirstOrThrow()
        assert.equal(intent.state, 'processing')
        assert.ok(Number(intent.lease_until) > Date.now(), 'the dead process still holds the lease')
        const file = await reader.kysely
          .selectFrom('files')
          .select('id')
          .where('id', '=', String(intent.file_id))
          .executeTakeFirst()
        assert.ok(file, 'the file was created before the kill')
      } finally {
        await reader.close()
      }

      server = await startServer(env())
      const started = Date.now()
      const status = await waitForUpload(
        { ...grant, statusUrl: `${server.base}/api/v1/files/uploads/${grant.intentId}` },
        token,
        60_000,
      )
      const took = Date.now() - started
      assert.equal(status.status, 'complete')
      // SQLite: taken back at start; PostgreSQL: once the lease runs out and a sweep passes (README).
      assert.ok(took < (engine === 'sqlite' ? 1000 : 30_000), `resumed ${took} ms after the server was up`)
      const files = await fetch(`${server.base}/api/v1/files?limit=100`, {
        headers: { authorization: `Bearer ${token}` },
      })
      const names = ((await files.json()) as { data: { name: string }[] }).data.map((f) => f.name)
      assert.equal(names.filter((name) => name === 'once.txt').length, 1)
      await server.stop()
      server = undefined
    })

    /** The API of `on`, with the test's key. */
    async function api(on: ServerProcess, method: string, url: string, body?: unknown) {
      const response = await fetch(`${on.base}/api/v1${url}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      return { status: response.status, body: (await response.json().catch(() => null)) as any }
    }

    test('a folder delete killed after its commit: the folder is gone, its files in root, counts exact', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      server = await startServer(env('folder-deleted'))
      const folder = (await api(server, 'POST', '/folders', { name: 'Doomed' })).body.data
      const kept = (await api(server, 'POST', '/folders', { name: 'Kept' })).body.data
      const [id, other] = await uploadFiles(server, 2)
      assert.equal((await api(server, 'PATCH', `/files/${id}`, { folderId: folder.id })).status, 200)
      // The final test checks that this folder's count still equals its files.
      assert.equal((await api(server, 'PATCH', `/files/${other}`, { folderId: kept.id })).status, 200)
      await assert.rejects(api(server, 'DELETE', `/folders/${folder.id}`), 'no answer came')
      await server.exited()
      assert.equal(server.child.signalCode, 'SIGKILL')
      server = await startServer(env())
      assert.equal((await api(server, 'GET', `/folders/${folder.id}`)).status, 404)
      const file = await api(server, 'GET', `/files/${id}`)
      assert.equal(file.body.data.folderId, null)
      await server.stop()
      server = undefined
    })

    test('a single PUT killed mid-transfer: no blob; what it left is the reconciler’s once stale', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      server = await startServer(env())
      const size = 4 * 1024 * 1024
      const [grant] = await prepareUploads(server.base, token, [
        { name: 'big.bin', type: 'application/octet-stream', size },
      ])
      assert.ok(grant)
      const keysBefore = await keysIn(store)
      // The real client, one PUT (under 5 MiB), fed half the bytes and then nothing more; no retries.
      process.env.VERCEL_BLOB_API_URL = `${server.base}/blob`
      process.env.VERCEL_BLOB_RETRIES = '0'
      const stalled = new Readable({ read() {} })
      stalled.push(Buffer.alloc(size / 2, 1))
      const transfer = uploadWithGrant(grant, stalled).catch(() => undefined)
      const temp = path.join(dataDir, 'blobs', '.tmp')
      const parts = async () => (await filesUnder(temp)).filter((f) => f.endsWith('.part'))
      if (blobs.kind === 'local') {
        await eventually(async () => (await parts()).length > 0, 5000, 'the temporary file')
      } else {
        // The object store holds nothing of a PUT until it ends: wait until the bytes have left the client.
        await eventually(async () => stalled.readableLength === 0, 5000, 'the bytes sent')
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
      await server.kill()
      stalled.destroy()
      await transfer
      delete process.env.VERCEL_BLOB_RETRIES
      assert.deepEqual(await keysIn(store), keysBefore, 'no blob, whole or partial')

      const check = async (...args: string[]) => {
        const run = await cli(storage, ['storage', 'check', '--json', ...args])
        return JSON.parse(run.stdout)
      }
      if (blobs.kind === 's3') {
        // S3 drops a PUT that never ended: nothing is left over.
        assert.deepEqual(await leftoversIn(store), [])
        assert.equal((await check()).activeLeftovers, 0)
        return
      }
      const [part] = await parts()
      assert.ok(part, 'the kill left a temporary file')
      // Recent, it may be a write under way; stale, it is removed.
      assert.equal((await check()).activeLeftovers, 1)
      const stale = new Date(Date.now() - 2 * 60 * 60 * 1000)
      await utimes(path.join(temp, part), stale, stale)
      const repaired = await check('--repair')
      assert.equal(repaired.staleLeftovers.removed, 1)
      assert.deepEqual(await parts(), [])
    })

    test('counted share views killed mid-way: every view a client received was counted', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      server = await startServer(env())
      const [id] = await uploadFiles(server, 1)
      const share = (await api(server, 'POST', '/shares', { fileId: id })).body.data
      const page = new URL(share.publicUrl).pathname
      // Twenty clients view the page again and again until the server dies under them, so the kill always
      // lands while views are under way, however fast this machine serves them.
      let received = 0
      let interrupted = 0
      const viewer = async () => {
        for (;;) {
          const response = await fetch(`${server?.base}${page}`).catch(() => undefined)
          if (response?.status !== 200) break
          const body = await response.text().catch(() => undefined)
          if (body === undefined) break
          received++
        }
        interrupted++
      }
      const viewers = Array.from({ length: 20 }, viewer)
      await eventually(async () => received >= 100, 10_000, 'a hundred views')
      assert.equal(interrupted, 0, 'no view failed before the kill')
      await server.kill()
      await Promise.all(viewers)
      server = await startServer(env())
      const counted = (await api(server, 'GET', `/shares/${share.id}`)).body.data.viewCount
      assert.ok(counted >= received, `${counted} views counted, ${received} received`)
      await server.stop()
      server = undefined
    })

    test('a change killed after its commit: its event is delivered at the next start, once', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      const receiver = await webhookReceiver()
      const { ofType } = receiver
      try {
        server = await startServer(env('files-deleted'))
        const made = await fetch(`${server.base}/api/v1/webhooks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            url: receiver.url,
            events: ['file.created', 'file.deleted'],
          }),
        })
        assert.equal(made.status, 201)
        const endpointId = ((await made.json()) as { data: { id: string } }).data.id
        const [fileId] = await uploadFiles(server, 1)
        await eventually(async () => ofType('file.created').length === 1, 10_000, 'file.created')
        // Its attempt recorded too: a kill between the answer and the record would send it again after the
        // restart (at least once), which is not what this test is about.
        const on = server
        await eventually(
          async () => {
            const response = await fetch(`${on.base}/api/v1/webhooks/${endpointId}/deliveries`, {
              headers: { authorization: `Bearer ${token}` },
            })
            const { data } = (await response.json()) as { data: { state: string }[] }
            return data.length === 1 && data[0]?.state === 'succeeded'
          },
          10_000,
          'the record of the file.created attempt',
        )

        const trashed = await fetch(`${server.base}/api/v1/files/${fileId}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${token}` },
        })
        assert.equal(trashed.status, 200)
        const deleting = fetch(`${server.base}/api/v1/trash/${fileId}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${token}` },
        })
        await assert.rejects(deleting, 'the server died before it answered')
        await server.exited()
        assert.equal(server.child.signalCode, 'SIGKILL')
        // The point: the deletion and its event are committed, and nothing was sent.
        const reader = db()
        try {
          const events = await reader.kysely
            .selectFrom('events')
            .select('type')
            .where('type', '=', 'file.deleted')
            .execute()
          assert.equal(events.length, 1)
        } finally {
          await reader.close()
        }
        assert.equal(ofType('file.deleted').length, 0)

        server = await startServer(env())
        await eventually(
          async () => ofType('file.deleted').length > 0,
          30_000,
          'file.deleted after the start',
        )
        // Nothing more comes of it.
        await new Promise((resolve) => setTimeout(resolve, 2000))
        assert.equal(ofType('file.deleted').length, 1)
        assert.equal(ofType('file.created').length, 1)
        await deleteEndpoint(server, endpointId)
        await server.stop()
        server = undefined
      } finally {
        // A failure above must not leave its server running into the next test, on the same data.
        await server?.stop()
        server = undefined
        await receiver.close()
      }
    })

    test('a sender killed holding a delivery: the delivery is made after its lease, once', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      const receiver = await webhookReceiver()
      try {
        server = await startServer(env('webhook-leased'))
        const made = await fetch(`${server.base}/api/v1/webhooks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url: receiver.url, events: ['file.created'] }),
        })
        assert.equal(made.status, 201)
        const { id } = ((await made.json()) as { data: { id: string } }).data
        await fetch(`${server.base}/api/v1/webhooks/${id}/ping`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
        })
        await server.exited()
        assert.equal(server.child.signalCode, 'SIGKILL')
        // The point: the delivery is leased by the dead process, and nothing was sent.
        const reader = db()
        try {
          const [delivery] = await reader.kysely
            .selectFrom('webhook_deliveries')
            .select(['state', 'lease_until', 'attempts'])
            .where('endpoint_id', '=', id)
            .execute()
          assert.equal(delivery?.state, 'pending')
          assert.equal(Number(delivery?.attempts), 0)
          assert.ok(Number(delivery?.lease_until) > Date.now(), 'the dead process still holds the lease')
        } finally {
          await reader.close()
        }
        assert.equal(receiver.ofType('webhook.ping').length, 0)

        // SQLite's one process takes the lease back at start; PostgreSQL's wait for it to run out (30 s).
        server = await startServer(env())
        await eventually(
          async () => receiver.ofType('webhook.ping').length > 0,
          45_000,
          'the ping after the start',
        )
        await new Promise((resolve) => setTimeout(resolve, 1000))
        assert.equal(receiver.ofType('webhook.ping').length, 1)
        await deleteEndpoint(server, id)
        await server.stop()
        server = undefined
      } finally {
        // A failure above must not leave its server running into the next test, on the same data.
        await server?.stop()
        server = undefined
        await receiver.close()
      }
    })

    test('after every fault: the storage check finds nothing to repair and no row without its blob', {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      const run = await cli(storage, ['storage', 'check', '--json'])
      assert.equal(run.code, 0, run.stderr)
      const report = JSON.parse(run.stdout)
      assert.deepEqual(
        [report.problems, report.orphanBlobs.count, report.orphanPreviews.count, report.staleLeftovers.count],
        [0, 0, 0, 0],
      )
      // No upload is stuck: each one ended, or is within its grant.
      const reader = db()
      try {
        const stuck = await reader.kysely
          .selectFrom('upload_intents')
          .select('id')
          .where('state', '=', 'processing')
          .execute()
        assert.deepEqual(stuck, [])
        // Every folder's and request's count equals its rows.
        const folders = await reader.kysely
          .selectFrom('folders')
          .select(['id', 'file_count'])
          .select((eb) =>
            eb
              .selectFrom('files')
              .select(eb.fn.countAll<number>().as('n'))
              .whereRef('files.folder_id', '=', 'folders.id')
              .as('files'),
          )
          .execute()
        for (const folder of folders) assert.equal(Number(folder.file_count), Number(folder.files), folder.id)
        const requests = await reader.kysely
          .selectFrom('file_requests')
          .select(['id', 'submission_count'])
          .select((eb) =>
            eb
              .selectFrom('submissions')
              .select(eb.fn.countAll<number>().as('n'))
              .whereRef('submissions.request_id', '=', 'file_requests.id')
              .as('submissions'),
          )
          .execute()
        for (const request of requests)
          assert.equal(Number(request.submission_count), Number(request.submissions), request.id)
      } finally {
        await reader.close()
      }
    })
  })

  describe(`the server under slow-body clients [${engine}]`, () => {
    let dataDir: string
    let database: Awaited<ReturnType<typeof freshDatabase>>
    let server: ServerProcess | undefined
    before(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-slow-'))
      database = await freshDatabase(engine, dataDir)
      // The limits as shipped: a small body within 10 s, 256 connections per address.
      server = await startServer({ DATA_DIR: dataDir, DATABASE_URL: database.url ?? '' })
    })
    after(async () => {
      await server?.stop()
      await database?.drop()
      await rm(dataDir, { recursive: true, force: true })
    })

    test('300 bodies at a byte a second on six surfaces: none held past 10 s, others served meanwhile', {
      timeout: STEP_TIMEOUT_MS,
    }, async (t) => {
      const { port } = server as ServerProcess
      const id = 'a'.repeat(32)
      const form = 'application/x-www-form-urlencoded'
      const surfaces = [
        ['/account/sign-in', form],
        [`/s/${id}`, form],
        ['/oauth/token', form],
        ['/oauth/register', 'application/json'],
        ['/oauth/device/auth', form],
        [`/api/v1/public/requests/${id}/uploads`, 'application/json'],
      ] as const
      /** A client that sends its headers, then a byte a second; what it got back before the close, and when. */
      const slowClient = async (i: number) => {
        const [target, type] = surfaces[i % surfaces.length] as (typeof surfaces)[number]
        const socket = connect(port, '127.0.0.1')
        sockets.push(socket)
        // A connection over the address's cap may be reset rather than closed: either way it ends.
        socket.on('error', () => undefined)
        const closed = new Promise((resolve) => socket.on('close', resolve))
        await once(socket, 'connect')
        const connectedAt = Date.now()
        socket.write(
          `POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: 1000\r\n\r\n`,
        )
        const trickling = setInterval(() => socket.writable && socket.write('a'), 1000)
        let answer = ''
        socket.setEncoding('utf8').on('data', (chunk: string) => {
          answer += chunk
        })
        await closed
        clearInterval(trickling)
        return { target, answer, ms: Date.now() - connectedAt }
      }
      const sockets: Socket[] = []
      // However the test ends, no client is left trickling.
      t.after(() => {
        for (const socket of sockets) socket.destroy()
      })
      const slow = Promise.all(Array.from({ length: 300 }, (_, i) => slowClient(i)))

      // Meanwhile, from another address (127.0.0.2, with connections of its own), the health check and an API
      // call that reads the database answer at once.
      const latencies: number[] = []
      const watchUntil = Date.now() + 9000
      while (Date.now() < watchUntil) {
        const sentAt = Date.now()
        assert.equal((await getFrom('127.0.0.2', port, '/healthz')).status, 200)
        assert.equal((await getFrom('127.0.0.2', port, `/api/v1/public/requests/${id}`)).status, 404)
        latencies.push(Date.now() - sentAt)
        await new Promise((resolve) => setTimeout(resolve, 200))
      }

      const clients = await slow
      const answered = clients.filter((client) => client.answer !== '')
      const closedAtOnce = clients.filter((client) => client.answer === '')
      // The address's first 256 connections (less the one the harness's readiness check may still keep open)
      // are taken; each is answered 408 once its 10 s are up, or, past the registrations an address may make,
      // 429 before its body is read, and closed when those 10 s are up all the same.
      assert.ok(answered.length === 255 || answered.length === 256, `${answered.length} answered`)
      for (const client of answered) {
        const early = client.target === '/oauth/register' && client.answer.startsWith('HTTP/1.1 429 ')
        if (!early)
          assert.match(client.answer, /^HTTP\/1\.1 408 /, `${client.target}: ${client.answer.slice(0, 80)}`)
        assert.ok(client.ms >= 9500 && client.ms < 13_000, `${client.target} held ${client.ms} ms`)
      }
      assert.deepEqual(
        new Set(answered.map((client) => client.target)),
        new Set(surfaces.map(([target]) => target)),
      )
      // The rest are closed without an answer, at once.
      assert.equal(closedAtOnce.length, 300 - answered.length)
      for (const client of closedAtOnce) assert.ok(client.ms < 2000, `closed after ${client.ms} ms`)
      // Served meanwhile: a server held by the slow bodies would keep them waiting their 10 s; 2.5 s leaves room for
      // a 2-core machine busy with other test files (1.6 s seen once on PostgreSQL so, 0.5 s on its own).
      assert.ok(Math.max(...latencies) < 2500, `other clients waited up to ${Math.max(...latencies)} ms`)
      console.log(
        `slow bodies [${engine}]: ${answered.length} answered (408, or 429 for registrations) and closed after ${Math.min(...answered.map((c) => c.ms))}–${Math.max(...answered.map((c) => c.ms))} ms, ${closedAtOnce.length} closed at once; another address's two requests took at most ${Math.max(...latencies)} ms`,
      )
    })
  })
}
