// Coffer as a fleet (issue 24): three server processes, each with a DATA_DIR of its own, on one PostgreSQL
// database, one Redis and one bucket of Ceph's object store, behind nginx round-robin with no sticky sessions
// (examples/nginx-fleet.conf), driven through nginx only. Uploads with the real @vercel/blob client whose parts
// reach different processes, downloads from every process, share views and downloads counted exactly across
// them, one process killed in the middle of uploads while clients go on through the others; then the storage
// check finds nothing to repair and nothing missing.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { cli, newAccount, newKey, type Storage } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { type Nginx, nginxMissing, startFleetNginx } from './support/nginx.ts'
import { freePort } from './support/ports.ts'
import { blobStorageFor, s3Missing } from './support/s3.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'
import { prepareUploads, uploadWithGrant, waitForUpload } from './support/uploads.ts'

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

const skip = !ENGINES.includes('postgres')
  ? 'TEST_DATABASE_URL is not set: a fleet needs PostgreSQL'
  : s3Missing || nginxMissing

describe('three processes behind nginx', { skip }, () => {
  let storage: Storage
  let cleanup: () => Promise<void>
  let nginx: Nginx
  let base: string
  let token: string
  const servers: (ServerProcess | undefined)[] = []
  let env: (dataDir: string) => Record<string, string>
  let upstreams: string[]

  before(async () => {
    const dataDirs = await Promise.all([0, 1, 2].map(() => mkdtemp(path.join(tmpdir(), 'coffer-fleet-'))))
    const database = await freshDatabase('postgres', dataDirs[0] as string)
    const blobs = await blobStorageFor('postgres')
    storage = { dataDir: dataDirs[0] as string, databaseUrl: database.url, blobEnv: blobs.env }
    const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()])
    const nginxPort = ports[3] as number
    base = `http://127.0.0.1:${nginxPort}`
    env = (dataDir: string) => ({
      DATA_DIR: dataDir,
      DATABASE_URL: database.url ?? '',
      REDIS_URL,
      ...blobs.env,
      PUBLIC_URL: base,
      TRUST_PROXY: 'true',
      RATE_LIMIT_MAX: '100000',
    })
    const account = await newAccount(storage)
    token = (await newKey(storage, account.email, 'all')).key
    servers.push(...(await Promise.all(dataDirs.map((dir, i) => startServer(env(dir), ports[i] as number)))))
    upstreams = ports.slice(0, 3).map((p) => `127.0.0.1:${p}`)
    nginx = await startFleetNginx({ upstreams, port: nginxPort })
    cleanup = async () => {
      await nginx?.stop()
      await Promise.all(servers.map((server) => server?.stop()))
      await database.drop()
      await blobs.drop()
      await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })))
    }
  })
  after(async () => cleanup?.())

  /** How many requests for paths starting with `prefix` each process got, as nginx logged them. */
  const servedBy = async (method: string, prefix: string) => {
    const lines = (await nginx.requests()).split('\n').filter(Boolean)
    return upstreams.map(
      (upstream) =>
        lines.filter((line) => {
          const [to, verb, uri] = line.split(' ')
          return to === upstream && verb === method && uri?.startsWith(prefix)
        }).length,
    )
  }

  test('an upload whose parts reach different processes arrives whole; every process sends it', async () => {
    process.env.VERCEL_BLOB_API_URL = `${base}/blob`
    const content = randomBytes(30 * 1024 * 1024 + 7)
    const [grant] = await prepareUploads(base, token, [
      { name: 'fleet.bin', type: 'application/octet-stream', size: content.length },
    ])
    assert.ok(grant)
    await uploadWithGrant(grant, content)
    const status = await waitForUpload(grant, token)
    assert.equal(status.status, 'complete', JSON.stringify(status))
    const fileId = (status as { result: { id: string } }).result.id
    // Its parts went to more than one process.
    const parts = await servedBy('POST', '/blob/mpu')
    assert.ok(parts.filter((count) => count > 0).length >= 2, `${parts}`)
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${base}/api/v1/files/${fileId}/download`, {
        headers: { authorization: `Bearer ${token}` },
      })
      assert.equal(response.status, 200)
      assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(content))
    }
    assert.deepEqual(await servedBy('GET', `/api/v1/files/${fileId}/download`), [1, 1, 1])
  })

  test('600 share views and 600 downloads spread over the processes are counted exactly', async () => {
    const [grant] = await prepareUploads(base, token, [{ name: 'shared.txt', type: 'text/plain', size: 13 }])
    assert.ok(grant)
    await uploadWithGrant(grant, Buffer.from('counted bytes'))
    const status = await waitForUpload(grant, token)
    const fileId = (status as { result: { id: string } }).result.id
    const shared = await fetch(`${base}/api/v1/shares`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ fileId }),
    })
    const share = ((await shared.json()) as { data: { id: string; publicUrl: string } }).data
    const page = new URL(share.publicUrl).pathname
    const answers = await Promise.all(
      Array.from({ length: 600 }, () => [`${base}${page}`, `${base}${page}/download`])
        .flat()
        .map(async (url) => {
          const response = await fetch(url)
          return { status: response.status, text: await response.text() }
        }),
    )
    assert.deepEqual([...new Set(answers.map((answer) => answer.status))], [200])
    const counted = await fetch(`${base}/api/v1/shares/${share.id}`, {
      headers: { authorization: `Bearer ${token}` },
    })
    const data = ((await counted.json()) as { data: { viewCount: number; downloadCount: number } }).data
    assert.deepEqual({ views: data.viewCount, downloads: data.downloadCount }, { views: 600, downloads: 600 })
    const spread = await servedBy('GET', page)
    assert.ok(
      spread.every((count) => count > 300),
      `${spread}`,
    )
  })

  test('one process killed in the middle of uploads: the clients go on through the others', async () => {
    process.env.VERCEL_BLOB_API_URL = `${base}/blob`
    const files = Array.from({ length: 12 }, (_, i) => randomBytes(6 * 1024 * 1024 + i))
    const grants = await prepareUploads(
      base,
      token,
      files.map((content, i) => ({
        name: `f${i}.bin`,
        type: 'application/octet-stream',
        size: content.length,
      })),
    )
    let retried = 0
    const uploads = grants.map(async (grant, i) => {
      // A client retries an upload whose connection broke, with the same grant, as the page and the SDK do.
      for (let attempt = 1; ; attempt++) {
        try {
          await uploadWithGrant(grant, files[i] as Buffer)
          return
        } catch (error) {
          if (attempt === 3) throw error
          retried++
        }
      }
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    const before = await servedBy('POST', '/blob/mpu')
    await servers[1]?.kill()
    await Promise.all(uploads)
    // The killed process had parts of them in hand.
    assert.ok((before[1] ?? 0) > 0, `${before}`)
    console.log(`fleet: ${retried} of 12 uploads sent again after the kill; requests per process ${before}`)
    for (const [i, grant] of grants.entries()) {
      const status = await waitForUpload(grant, token)
      assert.equal(status.status, 'complete', `file ${i}: ${JSON.stringify(status)}`)
      const fileId = (status as { result: { id: string } }).result.id
      const response = await fetch(`${base}/api/v1/files/${fileId}/download`, {
        headers: { authorization: `Bearer ${token}` },
      })
      assert.equal(sha256(Buffer.from(await response.arrayBuffer())), sha256(files[i] as Buffer))
    }
    // Nothing to repair, nothing missing (leftovers of the killed process's writes wait for their grace).
    const run = await cli(storage, ['storage', 'check', '--json'])
    assert.equal(run.code, 0, run.stderr)
    const report = JSON.parse(run.stdout)
    assert.deepEqual([report.problems, report.missingBlobs.count], [0, 0])
  })
})
