// SIGTERM as an orchestrator sends it, to the server process as shipped (issue 24): /readyz fails at once while
// requests are still served for SHUTDOWN_GRACE_SECONDS, then new connections are refused, an upload under way
// finishes and is stored, and the process exits 0. On both engines (blobs in S3 on PostgreSQL's leg).
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { newAccount, newKey, type Storage } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { blobStorageFor } from './support/s3.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'
import { handshakeToken, prepareUploads, waitForUpload } from './support/uploads.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const engine of ENGINES) {
  describe(`shutting down on SIGTERM [${engine}]`, () => {
    let storage: Storage
    let drop: () => Promise<void>
    let server: ServerProcess | undefined
    before(async () => {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-shutdown-'))
      const database = await freshDatabase(engine, dataDir)
      const blobs = await blobStorageFor(engine)
      storage = { dataDir, databaseUrl: database.url, blobEnv: blobs.env }
      drop = async () => {
        await database.drop()
        await blobs.drop()
        await rm(dataDir, { recursive: true, force: true })
      }
    })
    after(async () => {
      await server?.kill()
      await drop?.()
    })

    const env = () => ({
      DATA_DIR: storage.dataDir,
      DATABASE_URL: storage.databaseUrl ?? '',
      ...storage.blobEnv,
      SHUTDOWN_GRACE_SECONDS: '1',
      SHUTDOWN_TIMEOUT_SECONDS: '30',
      LOG_LEVEL: 'info',
    })

    test('not ready at once, served for the grace period, then closed; the upload under way is stored', async () => {
      const account = await newAccount(storage)
      const { key: token } = await newKey(storage, account.email, 'all')
      server = await startServer(env())
      const { base, port } = server
      const size = 3 * 1024 * 1024
      const [grant] = await prepareUploads(base, token, [
        { name: 'late.bin', type: 'application/octet-stream', size },
      ])
      assert.ok(grant)
      const clientToken = await handshakeToken(grant)

      // The upload: its headers, then 64 KiB every 100 ms, about five seconds in all.
      const socket = connect(port, '127.0.0.1')
      await new Promise((resolve) => socket.once('connect', resolve))
      socket.write(
        `PUT /blob/?${new URLSearchParams({ pathname: grant.pathname })} HTTP/1.1\r\nHost: x\r\n` +
          `Authorization: Bearer ${clientToken}\r\nX-Vercel-Blob-Access: private\r\n` +
          `X-Content-Type: application/octet-stream\r\nContent-Length: ${size}\r\nConnection: close\r\n\r\n`,
      )
      let answer = ''
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        answer += chunk
      })
      const answered = new Promise((resolve) => socket.once('close', resolve))
      const sending = (async () => {
        for (let sent = 0; sent < size; sent += 64 * 1024) {
          socket.write(Buffer.alloc(64 * 1024, sent / (64 * 1024)))
          await sleep(100)
        }
      })()
      await sleep(500)

      const signalled = Date.now()
      server.child.kill('SIGTERM')
      const exited = server.exited()
      // At once: not ready, so a load balancer takes the process out.
      let readyz = await fetch(`${base}/readyz`)
      for (let i = 0; i < 20 && readyz.status === 200; i++) {
        await sleep(10)
        readyz = await fetch(`${base}/readyz`)
      }
      assert.equal(readyz.status, 503)
      assert.equal(
        ((await readyz.json()) as { error: { message: string } }).error.message,
        'Not ready: shutting down.',
      )
      assert.ok(Date.now() - signalled < 500)
      // Within the grace period, requests are still served.
      assert.equal(
        (await fetch(`${base}/api/v1/files`, { headers: { authorization: `Bearer ${token}` } })).status,
        200,
      )
      // After it, no new connection is taken.
      await sleep(1500 - (Date.now() - signalled))
      const refused = await new Promise<string>((resolve) => {
        const probe = connect(port, '127.0.0.1')
        probe.once('connect', () => {
          probe.destroy()
          resolve('connected')
        })
        probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
      })
      assert.equal(refused, 'ECONNREFUSED')

      // The upload under way finishes, and only then does the process exit, with 0.
      await sending
      await answered
      assert.match(answer, /^HTTP\/1\.1 200 /)
      await exited
      assert.equal(server.child.exitCode, 0)
      assert.match(server.stdout(), /"msg":"shut down"/)

      // What it stored is there for the next process, which finishes the upload's processing.
      server = await startServer(env(), port)
      const status = await waitForUpload(grant, token)
      assert.equal(status.status, 'complete', JSON.stringify(status))
    })

    test('an error nothing caught is logged, as a fatal JSON line with its stack, before the process exits 1', async () => {
      await server?.stop()
      // A bug as a fault point plays it: an error thrown where nothing catches it, once a folder is deleted.
      server = await startServer({ ...env(), COFFER_FAULT_POINT: 'uncaught:folder-deleted' })
      const { key } = await newKey(storage, (await newAccount(storage)).email, 'all')
      const auth = { authorization: `Bearer ${key}` }
      const made = await fetch(`${server.base}/api/v1/folders`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Doomed' }),
      })
      const folderId = (await made.json()).data.id
      await fetch(`${server.base}/api/v1/folders/${folderId}`, { method: 'DELETE', headers: auth }).catch(
        () => undefined,
      )
      await server.exited()
      assert.equal(server.child.exitCode, 1)
      const fatal = server
        .stdout()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
        .find((entry) => entry.level === 60)
      assert.ok(fatal, server.stdout().slice(-2000))
      assert.equal(fatal.msg, 'the process ends on an error nothing caught')
      assert.equal(fatal.origin, 'uncaughtException')
      assert.match(fatal.err.stack, /fault point folder-deleted: an error nothing catches\n\s+at /)
      server = undefined
    })
  })
}
