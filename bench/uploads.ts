// Upload benchmark: throughput of a large file through Coffer (the real @vercel/blob client, as the spec's upload
// procedure says: multipart above 5 MiB) against the same bytes to and from a plain Node HTTP server writing to
// disk on this machine, as ratios; and the latency from "blob stored" to status complete for small files.
// Both servers run in processes of their own; this process is the client.
//   npx node bench/uploads.ts [--size-mib 1024] [--runs 3] [--latency-runs 50]
// DATABASE_URL=postgres://... runs Coffer on PostgreSQL instead of SQLite.
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { Readable } from 'node:stream'
import { parseArgs } from 'node:util'
import { openDatabase } from '../src/db/database.ts'
import {
  type Grant,
  prepareUploads,
  seededStream,
  uploadWithGrant,
  waitForUpload,
} from '../test/support/uploads.ts'

const { values } = parseArgs({
  options: {
    'size-mib': { type: 'string', default: '1024' },
    runs: { type: 'string', default: '3' },
    'latency-runs': { type: 'string', default: '50' },
  },
})
const size = Number(values['size-mib']) * 1024 * 1024
const runs = Number(values.runs)
const latencyRuns = Number(values['latency-runs'])
const root = new URL('..', import.meta.url).pathname

interface Server {
  base: string
  pid: number
  token: string
  accountId: string
  dataDir: string
  child: ChildProcess
}

async function spawnServer(script: string): Promise<Server> {
  const child = spawn(process.execPath, [script], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
  const [line] = await Promise.race([
    createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]().next().then((r) => [r.value]),
    new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)))),
  ])
  return { ...JSON.parse(line as string), child }
}

async function stopServer(server: Server): Promise<void> {
  const exited = new Promise((resolve) => server.child.once('exit', resolve))
  server.child.kill('SIGTERM')
  await exited
}

const mbps = (bytes: number, ms: number) => bytes / 1e6 / (ms / 1000)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] as number

async function drain(response: Response): Promise<number> {
  let bytes = 0
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.byteLength
  return bytes
}

async function plainUpload(plain: Server, name: string): Promise<number> {
  const start = performance.now()
  const response = await fetch(`${plain.base}/${name}`, {
    method: 'PUT',
    body: Readable.toWeb(seededStream(size, 1)) as ReadableStream,
    duplex: 'half',
  } as RequestInit)
  if (response.status !== 201) throw new Error(`plain PUT: ${response.status}`)
  return performance.now() - start
}

async function plainDownload(plain: Server, name: string): Promise<number> {
  const start = performance.now()
  const bytes = await drain(await fetch(`${plain.base}/${name}`))
  if (bytes !== size) throw new Error(`plain GET returned ${bytes} bytes`)
  return performance.now() - start
}

async function serviceUpload(coffer: Server): Promise<{ transfer: number; complete: number; fileId: string }> {
  const [grant] = (await prepareUploads(coffer.base, coffer.token, [
    { name: 'bench.bin', type: 'application/octet-stream', size },
  ])) as [Grant]
  const body = seededStream(size, 1)
  const start = performance.now()
  await uploadWithGrant(grant, body)
  const transfer = performance.now() - start
  const status = await waitForUpload(grant, coffer.token, 600_000)
  const complete = performance.now() - start
  if (status.status !== 'complete') throw new Error(`upload ended in ${JSON.stringify(status)}`)
  return { transfer, complete, fileId: status.result.id }
}

/** Undefined when this build has no download route (the files work provides it). */
async function serviceDownload(coffer: Server, fileId: string): Promise<number | undefined> {
  const start = performance.now()
  const response = await fetch(`${coffer.base}/api/v1/files/${fileId}/download`, {
    headers: { authorization: `Bearer ${coffer.token}` },
  })
  if (response.status === 404) {
    await response.body?.cancel()
    return undefined
  }
  const bytes = await drain(response)
  if (bytes !== size) throw new Error(`download returned ${bytes} bytes`)
  return performance.now() - start
}

async function latency(coffer: Server): Promise<{ client: number[]; server: number[] }> {
  const client: number[] = []
  const ids: string[] = []
  const content = Buffer.from('a small file, no preview\n')
  for (let i = 0; i < latencyRuns; i++) {
    const [grant] = (await prepareUploads(coffer.base, coffer.token, [
      { name: `small-${i}.txt`, type: 'text/plain', size: content.length },
    ])) as [Grant]
    // upload() returns once the blob is stored and the API has taken it (the callback is acknowledged).
    await uploadWithGrant(grant, content)
    const stored = performance.now()
    const status = await waitForUpload(grant, coffer.token)
    if (status.status !== 'complete') throw new Error(JSON.stringify(status))
    client.push(performance.now() - stored)
    ids.push(grant.intentId)
  }
  // The server's own record: when the blob was stored, and when the intent completed.
  const db = openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: coffer.dataDir })
  const rows = await db.kysely
    .selectFrom('upload_intents')
    .select(['stored_at', 'updated_at'])
    .where('id', 'in', ids)
    .execute()
  await db.close()
  return { client, server: rows.map((r) => Number(r.updated_at) - Number(r.stored_at)) }
}

const coffer = await spawnServer('test/support/upload-server.ts')
const plain = await spawnServer('bench/plain-server.ts')
process.env.VERCEL_BLOB_API_URL = `${coffer.base}/blob`
try {
  const results = { plainUp: [] as number[], plainDown: [] as number[], up: [] as number[], done: [] as number[], down: [] as number[] }
  console.log(`${runs} runs of ${size / 1024 / 1024} MiB on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'}`)
  for (let run = 1; run <= runs; run++) {
    const plainUp = await plainUpload(plain, `run-${run}`)
    const plainDown = await plainDownload(plain, `run-${run}`)
    const { transfer, complete, fileId } = await serviceUpload(coffer)
    const down = await serviceDownload(coffer, fileId)
    results.plainUp.push(plainUp)
    results.plainDown.push(plainDown)
    results.up.push(transfer)
    results.done.push(complete)
    if (down !== undefined) results.down.push(down)
    console.log(
      `run ${run}: plain up ${mbps(size, plainUp).toFixed(0)} MB/s, down ${mbps(size, plainDown).toFixed(0)} MB/s; ` +
        `coffer up ${mbps(size, transfer).toFixed(0)} MB/s (complete after ${(complete / 1000).toFixed(2)} s), ` +
        `down ${down === undefined ? 'n/a' : `${mbps(size, down).toFixed(0)} MB/s`}`,
    )
  }
  const up = mbps(size, median(results.up))
  const plainUp = mbps(size, median(results.plainUp))
  const plainDown = mbps(size, median(results.plainDown))
  console.log(`\nupload:   coffer ${up.toFixed(0)} MB/s vs plain ${plainUp.toFixed(0)} MB/s = ${((100 * up) / plainUp).toFixed(0)} %`)
  console.log(
    `          until status complete: ${mbps(size, median(results.done)).toFixed(0)} MB/s = ${((100 * mbps(size, median(results.done))) / plainUp).toFixed(0)} %`,
  )
  if (results.down.length > 0) {
    const down = mbps(size, median(results.down))
    console.log(`download: coffer ${down.toFixed(0)} MB/s vs plain ${plainDown.toFixed(0)} MB/s = ${((100 * down) / plainDown).toFixed(0)} %`)
  } else {
    console.log(`download: n/a (no GET /files/{fileId}/download in this build); plain ${plainDown.toFixed(0)} MB/s`)
  }
  const { client, server } = await latency(coffer)
  console.log(
    `\nblob stored → complete (${latencyRuns} files of 25 bytes, no preview): ` +
      `server median ${median(server)} ms, p95 ${percentile(server, 95)} ms, max ${Math.max(...server)} ms; ` +
      `seen by a polling client median ${median(client).toFixed(1)} ms, p95 ${percentile(client, 95).toFixed(1)} ms`,
  )
} finally {
  await stopServer(coffer)
  await stopServer(plain)
}
