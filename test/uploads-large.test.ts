// A 1 GiB upload through the real client, with the server in a process of its own so that its resident memory
// can be watched alone: it must grow by less than 100 MiB, since no file is ever held in memory. The body is
// generated from a seed as it is sent and hashed on the way, so the test holds none of it either; the stored
// bytes and the download must hash the same.
// One engine only: what is measured (streaming and memory) does not depend on the metadata database, and a
// gigabyte per engine would double the longest test of the suite.
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, test } from 'node:test'
import { blobKeyOf } from '../src/platform/blob/blob-keys.ts'
import { LocalBlobStore } from '../src/platform/blob/local-blob-store.ts'
import {
  type Grant,
  prepareUploads,
  seededStream,
  sha256Of,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

const GiB = 1024 * 1024 * 1024
const MiB = 1024 * 1024

interface Server {
  base: string
  token: string
  accountId: string
  dataDir: string
  pid: number
}

function residentBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))
  assert.ok(line, 'no VmRSS in /proc/<pid>/status')
  return Number(line.replace(/\D/g, '')) * 1024
}

describe('a 1 GiB upload [sqlite]', () => {
  let child: ChildProcess | undefined
  let server: Server
  let uploaded: { fileId: string; digest: string } | undefined

  before(async () => {
    child = spawn(process.execPath, [path.join(import.meta.dirname, 'support', 'upload-server.ts')], {
      env: { ...process.env, DATABASE_URL: '', MAX_FILE_SIZE: String(2 * GiB) },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const first = await createInterface({ input: child.stdout as NodeJS.ReadableStream })
      [Symbol.asyncIterator]()
      .next()
    server = JSON.parse(first.value as string)
    process.env.VERCEL_BLOB_API_URL = `${server.base}/blob`
    process.env.VERCEL_BLOB_RETRIES = '1'
  })
  after(async () => {
    if (!child) return
    const exited = new Promise((resolve) => child?.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  })

  const prepare = async (size: number) => {
    const [grant] = await prepareUploads(server.base, server.token, [
      { name: `seeded-${size}.bin`, type: 'application/octet-stream', size },
    ])
    return grant as Grant
  }

  test('streams through in bounded memory and is stored byte for byte', async (t) => {
    if (process.env.TEST_DATABASE_URL) {
      t.diagnostic('on SQLite only: streaming and memory do not depend on the metadata database')
    }
    // Warm up first (modules, JIT, pools), so the baseline is the server at work, not the server at rest.
    const warm = await prepare(16 * MiB)
    await uploadWithGrant(warm, seededStream(16 * MiB, 2))
    assert.equal((await waitForUpload(warm, server.token)).status, 'complete')

    const baseline = residentBytes(server.pid)
    let peak = baseline
    const sampler = setInterval(() => {
      peak = Math.max(peak, residentBytes(server.pid))
    }, 50)
    const grant = await prepare(GiB)
    const body = seededStream(GiB, 42)
    const started = performance.now()
    try {
      await uploadWithGrant(grant, body)
    } finally {
      clearInterval(sampler)
    }
    const seconds = (performance.now() - started) / 1000
    const status = await waitForUpload(grant, server.token, 120_000)
    assert.equal(status.status, 'complete', JSON.stringify(status))
    const fileId = (status as { result: { id: string } }).result.id
    const growth = peak - baseline
    t.diagnostic(
      `1 GiB in ${seconds.toFixed(1)} s (${(GiB / 1e6 / seconds).toFixed(0)} MB/s); server RSS ${(baseline / MiB).toFixed(0)} MiB → peak ${(peak / MiB).toFixed(0)} MiB (+${(growth / MiB).toFixed(0)} MiB)`,
    )
    assert.ok(growth < 100 * MiB, `the server's resident memory grew by ${(growth / MiB).toFixed(0)} MiB`)

    const blobs = await LocalBlobStore.open(path.join(server.dataDir, 'blobs'))
    assert.equal((await blobs.stat(blobKeyOf(server.accountId, fileId)))?.size, GiB)
    assert.equal(await sha256Of(await blobs.get(blobKeyOf(server.accountId, fileId))), body.digest())

    uploaded = { fileId, digest: body.digest() }
  })

  test('downloads return the same bytes, whole and ranged', async () => {
    assert.ok(uploaded, 'the upload test did not complete')
    const { fileId, digest } = uploaded
    const download = await fetch(`${server.base}/api/v1/files/${fileId}/download`, {
      headers: { authorization: `Bearer ${server.token}` },
    })
    assert.equal(download.status, 200)
    assert.equal(await sha256Of(download.body as unknown as AsyncIterable<Uint8Array>), digest)
    const range = await fetch(`${server.base}/api/v1/files/${fileId}/download`, {
      headers: { authorization: `Bearer ${server.token}`, range: `bytes=${GiB - MiB}-` },
    })
    assert.equal(range.status, 206)
    const tail = Buffer.from(await range.arrayBuffer())
    const expected = Buffer.concat(
      await seededStream(GiB, 42)
        .drop(GiB / MiB - 1)
        .toArray(),
    )
    assert.equal(tail.length, MiB)
    assert.ok(tail.equals(expected), 'the last MiB differs')
  })
})
