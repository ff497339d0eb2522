// Uploads from the web app's page against the same client in Node: one file of BENCH_UPLOAD_MIB (1 GiB by
// default) chosen in the home page's file input in Chromium (playwright-core, Debian's /usr/bin/chromium), so
// that the page's own code sends it (files-app.client.ts: prepared through the session's POST /uploads, then
// the bundled @vercel/blob client, in 8 MiB parts over XMLHttpRequest); and the same file read from disk by
// the same @vercel/blob client in Node, prepared with an API key (docs/uploads.md), against the same server
// in the same run. Runs alternate which goes first; each figure is the median of the runs, and the ratio
// Chromium / Node is the median of the runs' own ratios. Every upload must end as a file with the bytes'
// SHA-256.
//
//   npm run bench:app-uploads                             SQLite, 1 GiB, 3 runs each
//   BENCH_UPLOAD_MIB=256 BENCH_UPLOAD_RUNS=5 npm run bench:app-uploads
//   DATABASE_URL=postgres://... npm run bench:app-uploads  the server on PostgreSQL
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream, readdirSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { finished } from 'node:stream/promises'
import type { Page } from 'playwright-core'
import { hashPassword } from '../src/platform/auth/secrets.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { browserMissing, launchBrowser, newContext } from '../test/support/browser.ts'
import { type Grant, prepareUploads, uploadWithGrant, waitForUpload } from '../test/support/uploads.ts'
import { signInBrowser } from '../test/support/web-client.ts'
import { BENCH_DIR } from './seed.ts'

const MIB = Number(process.env.BENCH_UPLOAD_MIB ?? 1024)
const RUNS = Number(process.env.BENCH_UPLOAD_RUNS ?? 3)
const SIZE = MIB * 1024 * 1024
const PASSWORD = 'a benchmark password'
/** A transfer that takes longer has failed, whatever the page says. */
const TIMEOUT_MS = 30 * 60_000
const root = path.resolve(import.meta.dirname, '..')

interface Server {
  base: string
  token: string
  accountId: string
  dataDir: string
  child: ChildProcess
}

/** test/support/upload-server.ts: the real server in a process of its own, with an account and an API key. */
async function startServer(tmp: string): Promise<Server> {
  const child = spawn(process.execPath, ['test/support/upload-server.ts'], {
    cwd: root,
    env: { ...process.env, UPLOAD_SERVER_TMP: tmp },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const line = await Promise.race([
    createInterface({ input: child.stdout as NodeJS.ReadableStream })
      [Symbol.asyncIterator]()
      .next()
      .then((r) => r.value as string),
    new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`server exited: ${code}`))),
    ),
  ])
  return { ...JSON.parse(line), child }
}

async function stopServer(server: Server): Promise<void> {
  const exited = new Promise((resolve) => server.child.once('exit', resolve))
  server.child.kill('SIGTERM')
  await exited
}

/** A file of SIZE random bytes (nothing to gain from compression or a pattern); returns its SHA-256. */
async function writeFile(file: string): Promise<string> {
  const hash = createHash('sha256')
  const out = createWriteStream(file)
  for (let left = SIZE; left > 0; ) {
    const chunk = randomBytes(Math.min(left, 4 * 1024 * 1024))
    hash.update(chunk)
    left -= chunk.length
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()))
  }
  out.end()
  await finished(out)
  return hash.digest('hex')
}

interface Timing {
  /** From choosing the file (or preparing the upload) until the client's upload() resolved. */
  transfer: number
  /** Until the server had made the file (status complete). */
  complete: number
  fileId: string
  /** CPU seconds (user and system) until complete: the server's, and the client's (all of Chromium's processes). */
  serverCpu: number
  clientCpu: number
}

/** CPU seconds so far of each process (user and system, from /proc), by pid, with its parent. */
function processes(): Map<number, { parent: number; cpu: number }> {
  const found = new Map<number, { parent: number; cpu: number }>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // After the command's closing parenthesis: state, ppid, ... utime (14th field of the line), stime.
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
      found.set(Number(entry), {
        parent: Number(fields[1]),
        cpu: (Number(fields[11]) + Number(fields[12])) / 100,
      })
    } catch {
      // The process ended meanwhile.
    }
  }
  return found
}

/** CPU seconds of the descendants of `root` (not `root` itself), but for `except`'s tree. */
function descendantsCpu(
  all: Map<number, { parent: number; cpu: number }>,
  root: number,
  except?: number,
): number {
  let sum = 0
  for (const [pid, { cpu }] of all) {
    for (
      let at = all.get(pid)?.parent;
      at !== undefined && at > 1 && pid !== except;
      at = all.get(at)?.parent
    ) {
      if (at === except) break
      if (at === root) {
        sum += cpu
        break
      }
    }
  }
  return sum
}

/** CPU seconds of the server and of the client: this process's other descendants (Chromium), or itself. */
function cpuNow(server: Server, client: 'chromium' | 'node'): { server: number; client: number } {
  const all = processes()
  const own = process.cpuUsage()
  return {
    server: all.get(server.child.pid as number)?.cpu ?? Number.NaN,
    client:
      client === 'node' ? (own.user + own.system) / 1e6 : descendantsCpu(all, process.pid, server.child.pid),
  }
}

/** The page's upload: the file chosen in the home page's input, followed by its row in the uploads list. */
async function fromPage(page: Page, server: Server, file: string): Promise<Timing> {
  await page.goto(`${server.base}/`)
  const item = page.locator('[data-upload-list] > li').first()
  const cpu = cpuNow(server, 'chromium')
  const start = performance.now()
  await page.setInputFiles('[data-uploader] input[type="file"]', file)
  await item
    .and(
      page.locator(
        '[data-state="processing"], [data-state="done"], [data-state="failed"], [data-state="refused"]',
      ),
    )
    .waitFor({
      timeout: TIMEOUT_MS,
    })
  const transfer = performance.now() - start
  await item
    .and(page.locator('[data-state="done"], [data-state="failed"], [data-state="refused"]'))
    .waitFor({ timeout: TIMEOUT_MS })
  const complete = performance.now() - start
  const cpuAfter = cpuNow(server, 'chromium')
  if ((await item.getAttribute('data-state')) !== 'done')
    throw new Error(`the page's upload failed: ${await item.textContent()}`)
  // The page adds the new file's row, a link to its page.
  const href = await page.locator('[data-file-rows] tr a.file-link').first().getAttribute('href')
  const fileId = /\/files\/([^/?]+)/.exec(href ?? '')?.[1]
  if (!fileId) throw new Error('the new file has no row on the page')
  return {
    transfer,
    complete,
    fileId,
    serverCpu: cpuAfter.server - cpu.server,
    clientCpu: cpuAfter.client - cpu.client,
  }
}

/** The same client in Node, reading the same file from disk, prepared with an API key. */
async function fromNode(server: Server, file: string): Promise<Timing> {
  const cpu = cpuNow(server, 'node')
  const start = performance.now()
  const [grant] = (await prepareUploads(server.base, server.token, [
    { name: 'from-node.bin', type: 'application/octet-stream', size: SIZE },
  ])) as [Grant]
  process.env.VERCEL_BLOB_API_URL = `${server.base}/blob`
  // Read in chunks of 1 MiB, as bench/uploads.ts's generated bytes come: fewer turns of the client's part loop.
  await uploadWithGrant(grant, createReadStream(file, { highWaterMark: 1024 * 1024 }))
  const transfer = performance.now() - start
  const status = await waitForUpload(grant, server.token, TIMEOUT_MS)
  const complete = performance.now() - start
  const cpuAfter = cpuNow(server, 'node')
  if (status.status !== 'complete') throw new Error(`the upload from Node ended in ${JSON.stringify(status)}`)
  return {
    transfer,
    complete,
    fileId: status.result.id,
    serverCpu: cpuAfter.server - cpu.server,
    clientCpu: cpuAfter.client - cpu.client,
  }
}

/** The stored file's SHA-256 must be the bytes'; then it is deleted, so that runs do not fill the disk. */
async function checkAndDelete(server: Server, fileId: string, sha256: string): Promise<void> {
  const db = openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: server.dataDir })
  try {
    const row = await db.kysely
      .selectFrom('files')
      .select(['size', 'sha256'])
      .where('id', '=', fileId)
      .executeTakeFirstOrThrow()
    if (Number(row.size) !== SIZE || row.sha256 !== sha256)
      throw new Error(`file ${fileId}: ${row.size} bytes, SHA-256 ${row.sha256}; expected ${SIZE}, ${sha256}`)
  } finally {
    await db.close()
  }
  const response = await fetch(`${server.base}/api/v1/files/${fileId}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${server.token}` },
  })
  if (!response.ok) throw new Error(`DELETE ${fileId}: ${response.status}`)
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const rate = (ms: number) => SIZE / 1e6 / (ms / 1000)

async function main(): Promise<void> {
  if (browserMissing) throw new Error(browserMissing)
  await mkdir(BENCH_DIR, { recursive: true })
  const tmp = await mkdtemp(path.join(BENCH_DIR, 'app-uploads-'))
  const file = path.join(tmp, 'upload.bin')
  console.log(`writing ${MIB} MiB of random bytes to ${path.relative(root, file)}...`)
  const sha256 = await writeFile(file)
  const server = await startServer(tmp)
  const browser = await launchBrowser()
  try {
    const email = `bench-${new URL(server.base).port}@example.com`
    const db = openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: server.dataDir })
    await db.kysely
      .updateTable('accounts')
      .set({ password_hash: await hashPassword(PASSWORD) })
      .where('id', '=', server.accountId)
      .execute()
    await db.close()
    const page = await (await newContext(browser)).newPage()
    await signInBrowser(page, server.base, email, { password: PASSWORD })
    console.log(
      `${RUNS} runs of ${MIB} MiB each way; Coffer on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'}; ` +
        `Chromium ${browser.version()}`,
    )
    const chromium: Timing[] = []
    const node: Timing[] = []
    const ratios: number[] = []
    for (let run = 1; run <= RUNS; run++) {
      const order = run % 2 === 1 ? (['node', 'chromium'] as const) : (['chromium', 'node'] as const)
      for (const client of order) {
        const timing =
          client === 'chromium' ? await fromPage(page, server, file) : await fromNode(server, file)
        await checkAndDelete(server, timing.fileId, sha256)
        ;(client === 'chromium' ? chromium : node).push(timing)
      }
      const c = chromium.at(-1) as Timing
      const n = node.at(-1) as Timing
      ratios.push(n.transfer / c.transfer)
      const cpu = (t: Timing) => `CPU s server ${t.serverCpu.toFixed(1)}, client ${t.clientCpu.toFixed(1)}`
      console.log(
        `run ${run} (${order.join(' first, then ')}): Chromium ${rate(c.transfer).toFixed(0)} MB/s ` +
          `(complete ${rate(c.complete).toFixed(0)}; ${cpu(c)}), Node ${rate(n.transfer).toFixed(0)} MB/s ` +
          `(complete ${rate(n.complete).toFixed(0)}; ${cpu(n)}); Chromium / Node ${(n.transfer / c.transfer).toFixed(2)}`,
      )
    }
    const m = (timings: Timing[], key: 'transfer' | 'complete') => rate(median(timings.map((t) => t[key])))
    const perGiB = (timings: Timing[], key: 'serverCpu' | 'clientCpu') =>
      (median(timings.map((t) => t[key])) / (SIZE / 1024 ** 3)).toFixed(1)
    console.log(
      `\n| ${MIB} MiB, medians of ${RUNS} runs | transfer MB/s | to status complete MB/s | server CPU s/GiB | client CPU s/GiB |`,
    )
    console.log('|---|---:|---:|---:|---:|')
    for (const [name, timings] of [
      ["Chromium, the page's uploader", chromium],
      ['Node, the same @vercel/blob client', node],
    ] as const) {
      console.log(
        `| ${name} | ${m(timings, 'transfer').toFixed(0)} | ${m(timings, 'complete').toFixed(0)} | ` +
          `${perGiB(timings, 'serverCpu')} | ${perGiB(timings, 'clientCpu')} |`,
      )
    }
    console.log(
      `\nChromium / Node, transfer: ${median(ratios).toFixed(2)} (median of the runs' ratios: ` +
        `${ratios.map((r) => r.toFixed(2)).join(', ')}); of the medians ` +
        `${(m(chromium, 'transfer') / m(node, 'transfer')).toFixed(2)}`,
    )
  } finally {
    await browser.close()
    await stopServer(server)
    await rm(tmp, { recursive: true, force: true })
  }
}

if (import.meta.main) await main()
