// Download benchmark: one large file (1 GiB by default) fetched by curl, in turns, from
//   - nginx serving the blob file itself (sendfile, Debian's package): the reference;
//   - Coffer alone: the API download (GET /api/v1/files/{id}/download with an API key) and the public share
//     download (GET /s/{publicId}/download, which also counts the download);
//   - nginx in front of Coffer with DOWNLOAD_ACCEL_REDIRECT (examples/nginx.conf): the same two downloads,
//     authorized and counted by Coffer, their bytes sent by nginx.
// The client is curl: Node's fetch drains at about 0.6 GB/s, slower than both servers, and a benchmark whose
// client is the bottleneck measures the client. curl's CPU time is recorded for every transfer, to show how
// far it is from being the limit. The file is read once before the runs, so it is served from the page
// cache (no disk is measured), and each kind of download is warmed up once.
//   npm run bench:downloads -- [--size-mib 1024] [--runs 7]
// DATABASE_URL=postgres://... runs Coffer on PostgreSQL instead of SQLite (a database of its own: it is
// migrated and gets an account). Coffer runs as `npm start` does, in two processes on one data directory:
// one streaming the bytes itself, one with DOWNLOAD_ACCEL_REDIRECT set, behind nginx.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { createReadStream, existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { buildApp } from '../src/app.ts'
import { blobKeyOf } from '../src/platform/blob/blob-keys.ts'
import { LocalBlobStore } from '../src/platform/blob/local-blob-store.ts'
import { loadConfig } from '../src/platform/config.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { newId } from '../src/platform/ids.ts'
import { ACCEL_PREFIX, NGINX, type Nginx, nginxMissing, startNginx } from '../test/support/nginx.ts'
import { freePort, seededStream } from '../test/support/uploads.ts'

const { values } = parseArgs({
  options: {
    'size-mib': { type: 'string', default: '1024' },
    runs: { type: 'string', default: '7' },
  },
})
const size = Number(values['size-mib']) * 1024 * 1024
const runs = Number(values.runs)
const root = path.resolve(import.meta.dirname, '..')
const CURL = '/usr/bin/curl'
const TIME = '/usr/bin/time'

for (const [missing, install] of [
  [nginxMissing, 'nginx'],
  [!existsSync(CURL) && `${CURL} is absent`, 'curl'],
  [!existsSync(TIME) && `${TIME} is absent`, 'time'],
] as const) {
  if (missing) {
    console.error(`${missing}; install it first: apt-get install -y ${install}`)
    process.exit(1)
  }
}

/** The file, its share link and a key that may read it, made through the app's own services. */
async function seed(dataDir: string) {
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' })
  const db = openDatabase(config)
  await migrate(db)
  const blobs = await LocalBlobStore.open(path.join(dataDir, 'blobs'))
  const app = await buildApp({ config, db, blobs, logger: false })
  try {
    const account = await app.services.accounts.create({ email: `bench-${newId('acc')}@example.com` })
    const { secret } = await app.services.apiKeys.create({
      accountId: account.id,
      name: 'bench',
      scopes: ['files:read', 'shares:write'],
    })
    const id = newId('fil')
    const blobKey = blobKeyOf(account.id, id)
    const bytes = seededStream(size, 7)
    await blobs.put(blobKey, bytes)
    await app.services.files.create({
      id,
      accountId: account.id,
      folderId: null,
      name: 'bench.bin',
      contentType: 'application/octet-stream',
      size,
      blobKey,
      sha256: bytes.digest(),
    })
    // The public share download, once the share pages exist; `publicUrl` is `<PUBLIC_URL>/s/{publicId}`.
    const shared = await app.inject({
      method: 'POST',
      url: '/api/v1/shares',
      headers: { authorization: `Bearer ${secret}` },
      payload: { fileId: id },
    })
    const sharePath =
      shared.statusCode === 201 ? new URL(shared.json().data.publicUrl as string).pathname : undefined
    const blobPath = (await blobs.relativePath(blobKey)) as string
    return { token: secret, fileId: id, blobPath, sharePath }
  } finally {
    await app.close()
    await db.close()
  }
}

async function startCoffer(dataDir: string, env: Record<string, string> = {}) {
  const port = await freePort()
  const child = spawn(process.execPath, ['src/server.ts'], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Coffer exited with ${child.exitCode}`)
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break
    if (Date.now() > deadline) throw new Error('Coffer did not start')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { base, port, child }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

interface Transfer {
  /** Bytes per second, as curl measured them. */
  speed: number
  /** curl's CPU time (user + system) over the transfer's duration. */
  curlBusy: number
}

/** One download with curl, timed by GNU time for curl's CPU use; checks the status and the byte count. */
async function curl(url: string, headers: Record<string, string>): Promise<Transfer> {
  const args = [
    '-f',
    '%e %U %S',
    CURL,
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{size_download} %{speed_download}',
  ]
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`)
  args.push(url)
  const child = spawn(TIME, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk) => {
    out += chunk
  })
  child.stderr.on('data', (chunk) => {
    err += chunk
  })
  const code = await new Promise((resolve) => child.once('close', resolve))
  const [status, bytes, speed] = out.trim().split(' ').map(Number)
  if (code !== 0 || status !== 200 || bytes !== size) {
    throw new Error(`curl ${url}: exit ${code}, status ${status}, ${bytes} bytes of ${size}; ${err.trim()}`)
  }
  const [elapsed, user, system] = (err.trim().split('\n').at(-1) as string).split(' ').map(Number)
  return { speed: speed as number, curlBusy: ((user as number) + (system as number)) / (elapsed as number) }
}

/** Reads the whole file, so that every server finds it in the page cache. */
async function readThrough(file: string): Promise<void> {
  for await (const _ of createReadStream(file, { highWaterMark: 4 * 1024 * 1024 })) {
    // Read and dropped.
  }
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}
const gbps = (speed: number) => (speed / 1e9).toFixed(2)
/** The first line a program prints about its version (nginx prints it on standard error). */
const version = (command: string, args: string[]) => {
  const { stdout, stderr } = spawnSync(command, args, { encoding: 'utf8' })
  return (stdout || stderr).split('\n')[0]?.trim() ?? command
}

/** Milliseconds of CPU the processes have used so far, all their threads (utime + stime of /proc/<pid>/stat). */
const TICK_MS = 1000 / (Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100)
async function cpuMs(pids: number[]): Promise<number> {
  let ticks = 0
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // Fields from the 3rd on, after the command name in parentheses: utime and stime are the 14th and 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    ticks += Number(fields[11]) + Number(fields[12])
  }
  return ticks * TICK_MS
}

/** nginx's workers: the processes its master started. */
async function workersOf(master: number): Promise<number[]> {
  const children = await readFile(`/proc/${master}/task/${master}/children`, 'utf8')
  return children.trim().split(/\s+/).filter(Boolean).map(Number)
}

interface Scenario {
  name: string
  url: string
  headers: Record<string, string>
  /** The processes that serve it: their CPU time is the download's cost to the server. */
  servers: () => Promise<number[]>
  speeds: number[]
  /** This run's speed over nginx's in the same run. */
  ratios: number[]
  /** CPU milliseconds the servers spent per GiB sent. */
  serverCpu: number[]
  curlBusy: number[]
}

const dataDir = await mkdtemp(path.join(process.env.BENCH_TMP ?? tmpdir(), 'coffer-downloads-'))
const children: ChildProcess[] = []
let nginx: Nginx | undefined
try {
  const started = Date.now()
  const { token, fileId, blobPath, sharePath } = await seed(dataDir)
  console.log(`seeded ${size / 1024 / 1024} MiB in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  const plain = await startCoffer(dataDir)
  children.push(plain.child)
  const accel = await startCoffer(dataDir, { DOWNLOAD_ACCEL_REDIRECT: ACCEL_PREFIX, TRUST_PROXY: 'true' })
  children.push(accel.child)
  const ng = await startNginx({ upstream: `127.0.0.1:${accel.port}`, dataDir, direct: true })
  nginx = ng

  const auth = { authorization: `Bearer ${token}` }
  const api = `/api/v1/files/${fileId}/download`
  // Asked directly, the X-Accel process answers no bytes, only where nginx finds them: it is on.
  const redirect = await fetch(`${accel.base}${api}`, { headers: auth })
  if (redirect.headers.get('x-accel-redirect') !== `${ACCEL_PREFIX}${blobPath}`) {
    throw new Error(`the X-Accel-Redirect process answered ${redirect.status} without the redirect`)
  }
  await redirect.arrayBuffer()
  const shareWorks =
    sharePath !== undefined && (await fetch(`${plain.base}${sharePath}/download`, { method: 'HEAD' })).ok
  const nginxWorkers = () => workersOf(ng.pid)
  const alone = async () => [plain.child.pid as number]
  const behind = async () => [accel.child.pid as number, ...(await workersOf(ng.pid))]
  const scenario = (
    name: string,
    url: string,
    servers: () => Promise<number[]>,
    headers: Record<string, string> = {},
  ): Scenario => ({ name, url, headers, servers, speeds: [], ratios: [], serverCpu: [], curlBusy: [] })
  const scenarios = [
    scenario('nginx, the file itself', `${ng.directBase}/${blobPath}`, nginxWorkers),
    scenario('Coffer alone, API download', `${plain.base}${api}`, alone, auth),
    scenario('nginx + X-Accel-Redirect, API download', `${ng.base}${api}`, behind, auth),
  ]
  if (shareWorks) {
    scenarios.splice(
      2,
      0,
      scenario('Coffer alone, share download', `${plain.base}${sharePath}/download`, alone),
    )
    scenarios.push(
      scenario('nginx + X-Accel-Redirect, share download', `${ng.base}${sharePath}/download`, behind),
    )
  } else {
    // The public share download (/s/{publicId}/download) is measured once it answers; until then this says so.
    console.log('share download: not measured (GET /s/{publicId}/download does not answer here)')
  }
  const [reference] = scenarios as [Scenario]

  await readThrough(path.join(dataDir, 'blobs', blobPath))
  for (const s of scenarios) await curl(s.url, s.headers)

  console.log(
    `\n${new Date().toISOString().slice(0, 10)}: ${runs} runs of ${size / 1024 / 1024} MiB from the page cache, ` +
      `${cpus().length} CPUs; Coffer on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'}, Node ${process.version}; ` +
      `${version(NGINX, ['-v']).replace('nginx version: ', '')} (sendfile on); ${version(CURL, ['--version']).split(' ').slice(0, 2).join(' ')}`,
  )
  console.log(
    'GB/s by run (1 GB = 10^9 bytes); each run takes the downloads in turn, starting one further along\n',
  )
  console.log(`| run | ${scenarios.map((s) => s.name).join(' | ')} |`)
  console.log(`|---:|${scenarios.map(() => '---:').join('|')}|`)
  const gib = size / 1024 ** 3
  for (let run = 1; run <= runs; run++) {
    const order = scenarios.map((_, i) => scenarios[(i + run - 1) % scenarios.length] as Scenario)
    for (const s of order) {
      const servers = await s.servers()
      const before = await cpuMs(servers)
      const { speed, curlBusy } = await curl(s.url, s.headers)
      s.serverCpu.push(((await cpuMs(servers)) - before) / gib)
      s.speeds.push(speed)
      s.curlBusy.push(curlBusy)
    }
    for (const s of scenarios)
      s.ratios.push((s.speeds.at(-1) as number) / (reference.speeds.at(-1) as number))
    console.log(`| ${run} | ${scenarios.map((s) => gbps(s.speeds.at(-1) as number)).join(' | ')} |`)
  }

  console.log('\nmedians\n')
  console.log("| download | GB/s | of nginx (median of the runs' ratios) | server CPU per GiB | curl busy |")
  console.log('|---|---:|---:|---:|---:|')
  for (const s of scenarios) {
    const ratio = s === reference ? '1' : median(s.ratios).toFixed(2)
    console.log(
      `| ${s.name} | ${gbps(median(s.speeds))} | ${ratio} | ${median(s.serverCpu).toFixed(0)} ms | ` +
        `${(100 * median(s.curlBusy)).toFixed(0)} % |`,
    )
  }
  // curl is not the limit when it takes some server's bytes faster than nginx's, and is idle part of the time
  // while nginx sends.
  const nginxSpeed = median(reference.speeds)
  const fastest = scenarios.reduce((a, b) => (median(b.speeds) > median(a.speeds) ? b : a))
  const busy = median(reference.curlBusy)
  console.log(
    `\ncurl, the client: ${gbps(median(fastest.speeds))} GB/s from ${fastest.name}; from nginx ${gbps(nginxSpeed)} GB/s, ` +
      `busy ${(100 * busy).toFixed(0)} % of the transfer (its user + system time over the transfer's time). ` +
      (busy < 0.9 && median(fastest.speeds) >= nginxSpeed
        ? 'It takes bytes faster than nginx sends them: the figures measure the servers, not the client.'
        : "It may be the limit of these figures: nginx's may be curl's own, and the ratios to it upper bounds."),
  )
} finally {
  await nginx?.stop()
  for (const child of children) await stop(child)
  await rm(dataDir, { recursive: true, force: true })
}
