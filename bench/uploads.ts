// Upload benchmark: throughput of a large file through Coffer (the real @vercel/blob client, as the upload
// procedure of docs/uploads.md says: multipart above 5 MiB) against the same bytes to and from a plain Node
// HTTP server writing to disk on this machine, as ratios; and the latency from "blob stored" to status complete for small files.
// Both servers run in processes of their own; this process is the client. Then the latency again with a webhook
// endpoint that receives file.created (a receiver in this process answering 204): what recording the event
// with each file costs, and how long its delivery takes.
//   npx node bench/uploads.ts [--size-mib 1024] [--runs 3] [--latency-runs 50]
// DATABASE_URL=postgres://... runs Coffer on PostgreSQL instead of SQLite.
import { type ChildProcess, spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInterface } from 'node:readline'
import { Readable } from 'node:stream'
import { parseArgs } from 'node:util'
import { upload } from '@vercel/blob/client'
import { openDatabase } from '../src/platform/db/open.ts'
import {
  type Grant,
  MULTIPART_THRESHOLD,
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
    createInterface({ input: child.stdout as NodeJS.ReadableStream })
      [Symbol.asyncIterator]()
      .next()
      .then((r) => [r.value]),
    new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`))),
    ),
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

/** One streamed PUT of the whole file: the simplest transfer there is. */
async function plainPut(plain: Server, name: string): Promise<number> {
  const start = performance.now()
  const response = await fetch(`${plain.base}/files/${name}`, {
    method: 'PUT',
    body: Readable.toWeb(seededStream(size, 1)) as ReadableStream,
    duplex: 'half',
  } as RequestInit)
  if (response.status !== 201) throw new Error(`plain PUT: ${response.status}`)
  return performance.now() - start
}

/** The transfer Coffer gets (upload() of @vercel/blob, multipart), to a server that only writes it down. */
async function plainUpload(plain: Server, name: string): Promise<number> {
  process.env.VERCEL_BLOB_API_URL = `${plain.base}/blob`
  const start = performance.now()
  await upload(name, seededStream(size, 1), {
    access: 'private',
    contentType: 'application/octet-stream',
    handleUploadUrl: `${plain.base}/handle`,
    multipart: size > MULTIPART_THRESHOLD,
  })
  return performance.now() - start
}

async function plainDownload(plain: Server, name: string): Promise<number> {
  const start = performance.now()
  const bytes = await drain(await fetch(`${plain.base}/files/${name}`))
  if (bytes !== size) throw new Error(`plain GET returned ${bytes} bytes`)
  return performance.now() - start
}

async function serviceUpload(
  coffer: Server,
): Promise<{ transfer: number; complete: number; fileId: string }> {
  const [grant] = (await prepareUploads(coffer.base, coffer.token, [
    { name: 'bench.bin', type: 'application/octet-stream', size },
  ])) as [Grant]
  process.env.VERCEL_BLOB_API_URL = `${coffer.base}/blob`
  const start = performance.now()
  await uploadWithGrant(grant, seededStream(size, 1))
  const transfer = performance.now() - start
  const status = await waitForUpload(grant, coffer.token, 600_000)
  const complete = performance.now() - start
  if (status.status !== 'complete') throw new Error(`upload ended in ${JSON.stringify(status)}`)
  return { transfer, complete, fileId: status.result.id }
}

async function serviceDownload(coffer: Server, fileId: string): Promise<number> {
  const start = performance.now()
  const response = await fetch(`${coffer.base}/api/v1/files/${fileId}/download`, {
    headers: { authorization: `Bearer ${coffer.token}` },
  })
  if (response.status !== 200) throw new Error(`download answered ${response.status}`)
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
    // upload() returns once the blob is stored and the API has adopted it (the callback was acknowledged).
    process.env.VERCEL_BLOB_API_URL = `${coffer.base}/blob`
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

/** A webhook receiver answering 204, and the endpoint of Coffer's account that sends it file.created. */
async function addWebhook(coffer: Server): Promise<{ received: number; close(): void }> {
  const state = { received: 0 }
  const receiver = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      state.received++
      response.statusCode = 204
      response.end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const made = await fetch(`${coffer.base}/api/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${coffer.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
      events: ['file.created'],
    }),
  })
  if (made.status !== 201) throw new Error(`webhook not made: ${made.status} ${await made.text()}`)
  return {
    get received() {
      return state.received
    },
    close: () => receiver.close(),
  }
}

// The webhook run's endpoint is on loopback.
process.env.WEBHOOKS_ALLOW_PRIVATE = 'true'
const coffer = await spawnServer('test/support/upload-server.ts')
const plain = await spawnServer('bench/plain-server.ts')
try {
  const r = {
    put: [] as number[],
    same: [] as number[],
    get: [] as number[],
    up: [] as number[],
    done: [] as number[],
    down: [] as number[],
    /** Coffer's upload() throughput over the plain server's in the same run, when the load is alike. */
    ratio: [] as number[],
  }
  console.log(
    `${runs} runs of ${size / 1024 / 1024} MiB; Coffer on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'}`,
  )
  for (let run = 1; run <= runs; run++) {
    r.put.push(await plainPut(plain, `put-${run}`))
    r.get.push(await plainDownload(plain, `put-${run}`))
    r.same.push(await plainUpload(plain, `upload-${run}`))
    const { transfer, complete, fileId } = await serviceUpload(coffer)
    r.up.push(transfer)
    r.done.push(complete)
    const down = await serviceDownload(coffer, fileId)
    r.down.push(down)
    const rate = (ms: number | undefined) => (ms === undefined ? 'n/a' : `${mbps(size, ms).toFixed(0)} MB/s`)
    const same = r.same.at(-1) as number
    r.ratio.push(same / transfer)
    console.log(
      `run ${run}: plain PUT ${rate(r.put.at(-1))}, plain upload() ${rate(same)}, plain GET ${rate(r.get.at(-1))}; ` +
        `Coffer upload() ${rate(transfer)} (complete ${rate(complete)}), download ${rate(down)}; ` +
        `upload() ratio this run ${((100 * same) / transfer).toFixed(0)} %`,
    )
  }
  const m = (xs: number[]) => mbps(size, median(xs))
  const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(0)} %`
  console.log('\nmedians')
  console.log(`upload:   Coffer ${m(r.up).toFixed(0)} MB/s (status complete: ${m(r.done).toFixed(0)} MB/s)`)
  console.log(
    `          vs plain server, same upload() transfer ${m(r.same).toFixed(0)} MB/s: ${pct(m(r.up), m(r.same))} (complete: ${pct(m(r.done), m(r.same))})`,
  )
  console.log(
    `          median of the runs' own ratios (each pair measured back to back): ${(100 * median(r.ratio)).toFixed(0)} %`,
  )
  console.log(
    `          vs plain server, one streamed PUT ${m(r.put).toFixed(0)} MB/s: ${pct(m(r.up), m(r.put))}`,
  )
  console.log(
    `download: Coffer ${m(r.down).toFixed(0)} MB/s vs plain GET ${m(r.get).toFixed(0)} MB/s: ${pct(m(r.down), m(r.get))}`,
  )
  const { client, server } = await latency(coffer)
  console.log(
    `\nblob stored → complete, ${latencyRuns} files of 25 bytes (no preview): ` +
      `server median ${median(server)} ms, p95 ${percentile(server, 95)} ms, max ${Math.max(...server)} ms; ` +
      `seen by a client polling the status: median ${median(client).toFixed(1)} ms, p95 ${percentile(client, 95).toFixed(1)} ms`,
  )
  const webhook = await addWebhook(coffer)
  const heard = await latency(coffer)
  const deadline = performance.now() + 30_000
  while (webhook.received < latencyRuns && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  webhook.close()
  console.log(
    `with a webhook receiving file.created: server median ${median(heard.server)} ms, p95 ${percentile(heard.server, 95)} ms; ` +
      `client median ${median(heard.client).toFixed(1)} ms, p95 ${percentile(heard.client, 95).toFixed(1)} ms; ` +
      `${webhook.received} of ${latencyRuns} events received`,
  )
  if (webhook.received < latencyRuns) throw new Error('file.created events missing')
} finally {
  await stopServer(coffer)
  await stopServer(plain)
}
