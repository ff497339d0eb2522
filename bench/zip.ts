// Zip download benchmark (issue 22: "download as one zip"), with curl as the client, in the same run:
//   - 1,000 files of 1 MiB as one zip, asked as the web app asks: POST /files/zip with the 1,000 ids (session and
//     CSRF token), and GET /folders/{id}/zip of the folder that holds them;
//   - the same number of bytes as one file: the app's own download of a 1,000 MiB file (GET /files/{id}/download).
//   Several runs, taking the downloads in turn; the figure is each zip's speed over the single file's, the median
//   of the runs' ratios (the issue asks for >= 0.7).
//   - The time to the first byte of the 1,000-file zip, and of a 10 GiB zip (10 sparse files of 1 GiB, which
//     cost no disk; read once before, like every blob, so that their zeros are in the page cache), and the
//     server's resident memory (VmRSS of /proc/<pid>/status) before and while it sends the 10 GiB (the issue
//     asks for growth < 100 MiB).
// Files are seeded straight through the blob store and the files service, each with the CRC-32 that upload
// processing would store (computed here as the bytes are made), as bench/downloads.ts seeds; every blob is read
// once first, so the page cache serves them and no disk is measured. curl's CPU time is recorded, to show it is
// not the limit. Coffer runs as `npm start` does, in a process of its own, on SQLite (or DATABASE_URL).
//   npm run bench:zip -- [--runs 7] [--files 1000] [--file-mib 1] [--big-gib 10]
//   BENCH_PROFILE=1 npm run bench:zip   also writes the server's CPU profile under .bench/profiles/zip/
import { spawn, spawnSync } from 'node:child_process'
import { createReadStream, existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { parseArgs } from 'node:util'
import { crc32 } from 'node:zlib'
import { buildApp } from '../src/app.ts'
import { blobKeyOf } from '../src/platform/blob/blob-keys.ts'
import { LocalBlobStore } from '../src/platform/blob/local-blob-store.ts'
import { loadConfig } from '../src/platform/config.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { newId } from '../src/platform/ids.ts'
import { FilesRepository } from '../src/resources/files/files.repository.ts'
import { seededStream } from '../test/support/uploads.ts'
import { freePort, startChild, stopChild, waitForServer } from './processes.ts'

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    files: { type: 'string', default: '1000' },
    'file-mib': { type: 'string', default: '1' },
    'big-gib': { type: 'string', default: '10' },
  },
})
const runs = Number(values.runs)
const fileCount = Number(values.files)
const fileSize = Number(values['file-mib']) * 1024 * 1024
const bigCount = Number(values['big-gib'])
const GiB = 1024 ** 3
const CURL = '/usr/bin/curl'
const TIME = '/usr/bin/time'
const PASSWORD = 'a long enough bench password'

for (const [tool, install] of [
  [CURL, 'curl'],
  [TIME, 'time'],
] as const) {
  if (!existsSync(tool)) {
    console.error(`${tool} is absent; install it first: apt-get install -y ${install}`)
    process.exit(1)
  }
}

interface Seeded {
  email: string
  /** The 1,000 small files, in a folder of their own. */
  small: { folderId: string; ids: string[] }
  /** One file of all their bytes together. */
  single: { id: string; size: number }
  /** The 1 GiB files of the 10 GiB zip, in a folder of their own. */
  big: { folderId: string }
  /** Blob files to read once, so that the page cache holds them. */
  blobPaths: string[]
}

/** Accounts, folders, files and blobs, made through the app's own services and store. */
async function seed(dataDir: string): Promise<Seeded> {
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent' })
  const db = openDatabase(config)
  await migrate(db)
  const blobs = await LocalBlobStore.open(path.join(dataDir, 'blobs'))
  const app = await buildApp({ config, db, blobs, logger: false })
  const files = new FilesRepository(db)
  const setCrc = (fileId: string, crc: number) => db.transaction((trx) => files.setCrc32(trx, fileId, crc))
  try {
    const email = `bench-${newId('acc')}@example.com`
    const account = await app.services.accounts.create({ email, password: PASSWORD })
    const blobPaths: string[] = []
    const make = async (
      name: string,
      folderId: string | null,
      size: number,
      write: (key: string) => Promise<number>,
    ) => {
      const id = newId('fil')
      const blobKey = blobKeyOf(account.id, id)
      const crc = await write(blobKey)
      await app.services.files.create({
        id,
        accountId: account.id,
        folderId,
        name,
        contentType: 'application/octet-stream',
        size,
        blobKey,
        sha256: null,
      })
      await setCrc(id, crc)
      blobPaths.push(path.join(dataDir, 'blobs', (await blobs.relativePath(blobKey)) as string))
      return id
    }
    /** `size` reproducible bytes, stored through the blob store; their CRC-32 taken as they pass. */
    const seeded = (size: number, seed: number) => async (key: string) => {
      let crc = 0
      async function* bytes() {
        for await (const chunk of seededStream(size, seed)) {
          crc = crc32(chunk as Buffer, crc)
          yield chunk as Buffer
        }
      }
      const { size: stored } = await blobs.put(key, bytes())
      if (stored !== size) throw new Error(`stored ${stored} bytes of ${size}`)
      return crc
    }
    const smallFolder = await app.services.folders.create(account.id, 'Bench 1000')
    const ids: string[] = []
    for (let i = 0; i < fileCount; i++) {
      ids.push(
        await make(`file-${String(i).padStart(4, '0')}.bin`, smallFolder.id, fileSize, seeded(fileSize, i)),
      )
    }
    const singleSize = fileCount * fileSize
    const single = await make('all.bin', null, singleSize, seeded(singleSize, 7))
    // The 1 GiB files: sparse (a hole the size of the file), their CRC that of as many zeros.
    let zerosCrc = 0
    const zeros = Buffer.alloc(1024 * 1024)
    for (let left = GiB; left > 0; left -= zeros.length) zerosCrc = crc32(zeros, zerosCrc)
    const bigFolder = await app.services.folders.create(account.id, 'Bench 10 GiB')
    for (let i = 0; i < bigCount; i++) {
      await make(`big-${i}.bin`, bigFolder.id, GiB, async (key) => {
        await blobs.put(key, Readable.from([]))
        const file = path.join(dataDir, 'blobs', (await blobs.relativePath(key)) as string)
        await truncate(file, GiB)
        return zerosCrc
      })
    }
    return {
      email,
      small: { folderId: smallFolder.id, ids },
      single: { id: single, size: singleSize },
      big: { folderId: bigFolder.id },
      blobPaths,
    }
  } finally {
    await app.close()
    await db.close()
  }
}

/** Signs in as a browser does; returns the Cookie header of the session and a CSRF token bound to it. */
async function signIn(base: string, email: string): Promise<{ cookie: string; csrf: string }> {
  const jar = new Map<string, string>()
  const remember = (response: Response) => {
    for (const header of response.headers.getSetCookie()) {
      const [pair = ''] = header.split(';')
      const at = pair.indexOf('=')
      jar.set(pair.slice(0, at), pair.slice(at + 1))
    }
  }
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  const token = async (url: string) => {
    const page = await fetch(`${base}${url}`, { headers: { cookie: cookie(), accept: 'text/html' } })
    remember(page)
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1]
    if (!csrf) throw new Error(`no CSRF token on ${url} (${page.status})`)
    return csrf
  }
  const signInToken = await token('/account/sign-in')
  const signedIn = await fetch(`${base}/account/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    body: new URLSearchParams({ email, password: PASSWORD, _csrf: signInToken }),
  })
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}`)
  remember(signedIn)
  return { cookie: cookie(), csrf: await token('/account/keys') }
}

interface Transfer {
  /** Bytes per second, as curl measured them. */
  speed: number
  bytes: number
  /** Seconds from the request to the first byte of the answer's body. */
  firstByte: number
  /** curl's CPU time (user + system) over the transfer's duration. */
  curlBusy: number
}

/** One download with curl, timed by GNU time for curl's CPU; checks the status (and the size, if given). */
async function curl(url: string, headers: string[], options: { body?: string; size?: number } = {}) {
  const args = [
    '-f',
    '%e %U %S',
    CURL,
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{size_download} %{speed_download} %{time_starttransfer}',
  ]
  for (const header of headers) args.push('-H', header)
  if (options.body !== undefined) args.push('--data-binary', options.body)
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
  const [status, bytes, speed, firstByte] = out.trim().split(' ').map(Number)
  if (code !== 0 || status !== 200 || (options.size !== undefined && bytes !== options.size)) {
    throw new Error(`curl ${url}: exit ${code}, status ${status}, ${bytes} bytes; ${err.trim()}`)
  }
  const [elapsed, user, system] = (err.trim().split('\n').at(-1) as string).split(' ').map(Number)
  return {
    speed: speed as number,
    bytes: bytes as number,
    firstByte: firstByte as number,
    curlBusy: ((user as number) + (system as number)) / (elapsed as number),
  } satisfies Transfer
}

/** Milliseconds of CPU the process has used so far, all its threads (utime + stime of /proc/<pid>/stat). */
const TICK_MS = 1000 / (Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100)
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  // Fields from the 3rd on, after the command name in parentheses: utime and stime are the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

/** Resident memory of a process, in MiB (VmRSS). */
async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]) / 1024
}

async function readThrough(files: string[]): Promise<void> {
  for (const file of files) {
    for await (const _ of createReadStream(file, { highWaterMark: 4 * 1024 * 1024 })) {
      // Read and dropped: the page cache keeps it.
    }
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
const ms = (seconds: number) => `${(seconds * 1000).toFixed(0)} ms`

const dataDir = await mkdtemp(path.join(process.env.BENCH_TMP ?? tmpdir(), 'coffer-zip-'))
let server: ReturnType<typeof startChild> | undefined
try {
  const started = Date.now()
  const seeded = await seed(dataDir)
  console.log(
    `seeded ${fileCount} files of ${fileSize / 1024 / 1024} MiB, one of ${seeded.single.size / 1024 / 1024} MiB ` +
      `and ${bigCount} sparse ones of 1 GiB in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  )
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  server = startChild(
    'src/server.ts',
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: base,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    },
    process.env.BENCH_PROFILE === '1'
      ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(import.meta.dirname, '../.bench/profiles/zip')}`]
      : [],
  )
  await waitForServer(`${base}/healthz`, server)
  const pid = server.pid as number
  const { cookie, csrf } = await signIn(base, seeded.email)
  const session = [`Cookie: ${cookie}`]
  const formFile = path.join(dataDir, 'selection.form')
  const form = new URLSearchParams(seeded.small.ids.map((id) => ['fileIds', id]))
  form.append('_csrf', csrf)
  await writeFile(formFile, form.toString())
  const selection = {
    name: `zip of ${fileCount} files (POST /files/zip)`,
    go: () =>
      curl(`${base}/files/zip`, [...session, 'Content-Type: application/x-www-form-urlencoded'], {
        body: `@${formFile}`,
      }),
  }
  const folder = {
    name: `zip of their folder (GET /folders/{id}/zip)`,
    go: () => curl(`${base}/folders/${seeded.small.folderId}/zip`, session),
  }
  const single = {
    name: `one file of ${seeded.single.size / 1024 / 1024} MiB (GET /files/{id}/download)`,
    go: () =>
      curl(`${base}/files/${seeded.single.id}/download`, session, {
        size: seeded.single.size,
      }),
  }
  const scenarios = [single, selection, folder].map((s) => ({
    ...s,
    speeds: [] as number[],
    ratios: [] as number[],
    firstBytes: [] as number[],
    busy: [] as number[],
    /** The server's CPU milliseconds per GiB sent. */
    cpu: [] as number[],
  }))
  const [reference] = scenarios as [(typeof scenarios)[number]]

  await readThrough(seeded.blobPaths)
  for (const s of scenarios) await s.go()
  const zipBytes = (await selection.go()).bytes
  console.log(
    `\n${new Date().toISOString().slice(0, 10)}: ${runs} runs, from the page cache, ${cpus().length} CPUs; Coffer on ` +
      `${process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'}, Node ${process.version}; the zip is ${zipBytes} bytes ` +
      `(${zipBytes - seeded.single.size} of headers)\nGB/s by run (1 GB = 10^9 bytes); each run takes the downloads ` +
      'in turn, starting one further along\n',
  )
  console.log(`| run | ${scenarios.map((s) => s.name).join(' | ')} |`)
  console.log(`|---:|${scenarios.map(() => '---:').join('|')}|`)
  for (let run = 1; run <= runs; run++) {
    const order = scenarios.map(
      (_, i) => scenarios[(i + run - 1) % scenarios.length] as (typeof scenarios)[number],
    )
    for (const s of order) {
      const before = await cpuMs(pid)
      const t = await s.go()
      s.cpu.push(((await cpuMs(pid)) - before) / (t.bytes / GiB))
      s.speeds.push(t.speed)
      s.firstBytes.push(t.firstByte)
      s.busy.push(t.curlBusy)
    }
    for (const s of scenarios)
      s.ratios.push((s.speeds.at(-1) as number) / (reference.speeds.at(-1) as number))
    console.log(`| ${run} | ${scenarios.map((s) => gbps(s.speeds.at(-1) as number)).join(' | ')} |`)
  }
  console.log('\nmedians\n')
  console.log(
    "| download | GB/s | of the single file (median of the runs' ratios) | first byte | server CPU per GiB | curl busy |",
  )
  console.log('|---|---:|---:|---:|---:|---:|')
  for (const s of scenarios) {
    console.log(
      `| ${s.name} | ${gbps(median(s.speeds))} | ${s === reference ? '1' : median(s.ratios).toFixed(2)} | ` +
        `${ms(median(s.firstBytes))} | ${median(s.cpu).toFixed(0)} ms | ${(100 * median(s.busy)).toFixed(0)} % |`,
    )
  }

  // The 10 GiB zip: first byte, and the server's memory before and while it sends.
  const idle = await rssMiB(pid)
  let peak = idle
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await rssMiB(pid))
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })()
  const bigZip = await curl(`${base}/folders/${seeded.big.folderId}/zip`, session)
  sampling = false
  await sampler
  console.log(
    `\n${bigCount} GiB zip (${bigCount} sparse files of 1 GiB, GET /folders/{id}/zip): ${bigZip.bytes} bytes at ` +
      `${gbps(bigZip.speed)} GB/s, first byte after ${ms(bigZip.firstByte)}; server RSS ${idle.toFixed(0)} MiB before, ` +
      `at most ${peak.toFixed(0)} MiB while sending: +${(peak - idle).toFixed(0)} MiB`,
  )
  const busy = median(reference.busy)
  console.log(
    `curl, the client: busy ${(100 * busy).toFixed(0)} % of the single file's transfer (its user + system time over ` +
      `the transfer's time); ${busy < 0.9 ? "it waits for the server: the figures are the server's" : 'it may be the limit of these figures'}.`,
  )
} finally {
  if (server) await stopChild(server)
  await rm(dataDir, { recursive: true, force: true })
}
