// The owner's web app under load: the home page of an account with 1,000,000 files (BENCH_FILES, the API
// bench's account, bench/seed.ts), a folder's page and the first page of two searches, each asked for by wrk
// at 8 connections as a signed-in browser asks (the session cookie, Accept: text/html), against a bare Fastify
// route answering the home page's HTML from memory, all in one run. The account gets a password, and the
// bench signs in through the sign-in page as a browser does (the page's CSRF token, then the form), so the
// session, its cookie and the CSRF token of every page are the real ones. Scenarios and the bare route are
// run in turns, several rounds; each figure is the median of its rounds. Any answer but a 200 fails the run.
//
//   npm run bench:app                        both engines, 10 s per run, 3 rounds
//   BENCH_ENGINES=sqlite BENCH_SECONDS=5 BENCH_ROUNDS=1 npm run bench:app
//   BENCH_PROFILE=1 npm run bench:app        also writes the servers' CPU profiles under .bench/profiles/
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { hashPassword } from '../src/platform/auth/secrets.ts'
import type { Engine } from '../src/platform/db/engine.ts'
import {
  freePort,
  requireWrk,
  startChild,
  stopChild,
  type WrkFigures,
  waitForServer,
  wrk,
} from './processes.ts'
import { ACCOUNT_ID, BENCH_DIR, FILES, folderIdOf, openSeeded, seededServerEnv } from './seed.ts'

const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Engine[]
const DURATION = Number(process.env.BENCH_SECONDS ?? 10)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const PROFILE = process.env.BENCH_PROFILE === '1'
const CONNECTIONS = 8
/** What the issue asks of every page here. */
const P99_TARGET_MS = 20
const EMAIL = 'bench@example.com'
const PASSWORD = 'a benchmark password'

interface Scenario {
  name: string
  path: string
  /** File rows the page must show. */
  rows: number
}

/** The 50 newest files, a folder's 50 newest, and the first page of a search for a hash fragment (a few
 * names match) and for a pattern in every name (the page fills from the newest files). */
const SCENARIOS: Scenario[] = [
  { name: 'home page (`/`)', path: '/', rows: 50 },
  { name: 'a folder (`/folders/{id}`)', path: `/folders/${folderIdOf(ACCOUNT_ID, 42)}`, rows: 50 },
  { name: 'search, selective (`/?query=7d2a9`)', path: '/?query=7d2a9', rows: 2 },
  { name: 'search, common (`/?query=.pdf`)', path: '/?query=.pdf', rows: 50 },
]

interface Run extends WrkFigures {
  /** The server's CPU time (user and system) per request answered, in µs. */
  cpuUs: number
}

interface Row {
  name: string
  bytes: number
  runs: Run[]
}

/** A process's CPU time so far (user and system), in ms, from /proc: the server's own, whatever else runs. */
function cpuMs(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  // utime and stime are fields 14 and 15 of the whole line, in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number

/** The cookies a response sets, as `name=value` pairs. */
function cookiesOf(response: Response): string[] {
  return response.headers.getSetCookie().map((line) => line.split(';')[0] as string)
}

/**
 * Signs in as a browser does: the sign-in page (which sets the CSRF cookie and holds the token), then its form.
 * Returns the Cookie header of the signed-in browser.
 */
export async function signIn(base: string): Promise<string> {
  const page = await fetch(`${base}/account/sign-in`, { headers: { accept: 'text/html' } })
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1]
  if (page.status !== 200 || !token)
    throw new Error(`the sign-in page answered ${page.status} without a token`)
  const jar = new Map(cookiesOf(page).map((pair) => pair.split('=', 2) as [string, string]))
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  const posted = await fetch(`${base}/account/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      accept: 'text/html',
      'content-type': 'application/x-www-form-urlencoded',
      cookie: cookie(),
    },
    body: new URLSearchParams({ email: EMAIL, password: PASSWORD, _csrf: token, return_to: '/' }).toString(),
  })
  if (posted.status !== 303) throw new Error(`sign-in answered ${posted.status}: ${await posted.text()}`)
  for (const pair of cookiesOf(posted)) {
    const [name, value] = pair.split('=', 2) as [string, string]
    jar.set(name, value)
  }
  if (![...jar.keys()].some((name) => name.endsWith('coffer_session'))) throw new Error('no session cookie')
  return cookie()
}

async function benchEngine(engine: Engine): Promise<Row[]> {
  const { db, dataDir, databaseUrl } = await openSeeded(engine)
  // The seeded account has no password; the same hash the sign-up would store.
  await db.kysely
    .updateTable('accounts')
    .set({ password_hash: await hashPassword(PASSWORD) })
    .where('id', '=', ACCOUNT_ID)
    .execute()
  await db.kysely.deleteFrom('sessions').where('account_id', '=', ACCOUNT_ID).execute()
  await db.close()

  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const profileDir = path.join(BENCH_DIR, 'profiles', engine)
  if (PROFILE) mkdirSync(profileDir, { recursive: true })
  const server = startChild(
    'src/server.ts',
    seededServerEnv({ dataDir, databaseUrl }, base, port),
    PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
  )
  let bare: ChildProcess | undefined
  try {
    await waitForServer(`${base}/healthz`, server)
    const cookie = await signIn(base)
    const headers = [`Cookie: ${cookie}`, 'Accept: text/html']
    const pages = new Map<string, string>()
    for (const s of SCENARIOS) {
      // A search whose index step gave way (PostgreSQL bounds it at 20 ms, and the first call finds nothing
      // in memory) answers a short page with a cursor, as the API may: asked again, it has its rows.
      let body = ''
      let rows = -1
      for (let attempt = 1; attempt <= 5 && rows !== s.rows; attempt++) {
        const response = await fetch(base + s.path, { headers: { cookie, accept: 'text/html' } })
        body = await response.text()
        if (response.status !== 200) throw new Error(`${s.name}: ${response.status}\n${body.slice(0, 500)}`)
        rows = body.match(/<tr [^>]*data-file-id=/g)?.length ?? 0
      }
      if (rows !== s.rows) throw new Error(`${s.name}: ${rows} rows, not ${s.rows}`)
      pages.set(s.name, body)
      console.log(
        `  [${engine}] ${s.name}: ${rows} rows, ${Buffer.byteLength(body).toLocaleString('en')} bytes`,
      )
    }
    const home = pages.get(SCENARIOS[0]?.name as string) as string
    const barePort = await freePort()
    bare = startChild('bench/bare-server.ts', {
      PORT: String(barePort),
      BODY: home,
      CONTENT_TYPE: 'text/html; charset=utf-8',
    })
    const bareUrl = `http://127.0.0.1:${barePort}/`
    await waitForServer(bareUrl, bare)
    if ((await (await fetch(bareUrl)).text()) !== home) throw new Error('the bare route answers other HTML')

    const targets = [
      ...SCENARIOS.map((s) => ({
        name: s.name,
        url: base + s.path,
        headers,
        bytes: Buffer.byteLength(pages.get(s.name) as string),
        pid: server.pid,
      })),
      {
        name: 'bare Fastify, the home page’s HTML',
        url: bareUrl,
        headers: [],
        bytes: Buffer.byteLength(home),
        pid: bare.pid,
      },
    ]
    // Warm-ups: caches, JIT, the PostgreSQL connections' prepared statements.
    for (const t of targets) await wrk(t.url, CONNECTIONS, 2, t.headers)
    const rows: Row[] = targets.map((t) => ({ name: t.name, bytes: t.bytes, runs: [] }))
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [i, t] of targets.entries()) {
        const cpuBefore = cpuMs(t.pid)
        const figures = await wrk(t.url, CONNECTIONS, DURATION, t.headers)
        const cpuUs = ((cpuMs(t.pid) - cpuBefore) * 1000) / figures.requests
        if (figures.errors > 0)
          throw new Error(`${t.name}: ${figures.errors} answers that were not 2xx, or socket errors`)
        rows[i]?.runs.push({ ...figures, cpuUs })
      }
      console.log(
        `  [${engine}] round ${round}: ${rows
          .map((r) => {
            const run = r.runs.at(-1) as Run
            return `${r.name} ${Math.round(run.rps)} req/s p99 ${run.p99} ms ${Math.round(run.cpuUs)} µs CPU`
          })
          .join('; ')}`,
      )
    }
    return rows
  } finally {
    if (bare) await stopChild(bare)
    await stopChild(server)
  }
}

function table(engine: string, rows: Row[]): string {
  const bare = median((rows.at(-1) as Row).runs.map((r) => r.rps))
  const label = engine === 'postgres' ? 'PostgreSQL' : 'SQLite'
  const of = (r: Row, key: 'p50' | 'p99' | 'rps' | 'cpuUs') => median(r.runs.map((x) => x[key]))
  const lines = [
    `| ${label} | HTML bytes | p50 ms | p99 ms | worst p99 ms | req/s | of bare | server CPU µs/req |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows
      .map((r) =>
        [
          r.name,
          r.bytes.toLocaleString('en'),
          of(r, 'p50'),
          of(r, 'p99'),
          Math.max(...r.runs.map((x) => x.p99)),
          Math.round(of(r, 'rps')).toLocaleString('en'),
          (of(r, 'rps') / bare).toFixed(2),
          Math.round(of(r, 'cpuUs')).toLocaleString('en'),
        ].join(' | '),
      )
      .map((line) => `| ${line} |`),
  ]
  return lines.join('\n')
}

async function main(): Promise<void> {
  await requireWrk()
  mkdirSync(BENCH_DIR, { recursive: true })
  console.log(
    `Coffer web app benchmark: ${FILES.toLocaleString('en')} files, wrk, ${CONNECTIONS} connections, ` +
      `${DURATION} s per run, ${ROUNDS} rounds`,
  )
  const results: Record<string, Row[]> = {}
  for (const engine of ENGINES) results[engine] = await benchEngine(engine)
  console.log('')
  const missed: string[] = []
  for (const [engine, rows] of Object.entries(results)) {
    console.log(`${table(engine, rows)}\n`)
    for (const r of rows.slice(0, -1)) {
      const p99 = median(r.runs.map((x) => x.p99))
      if (p99 >= P99_TARGET_MS) missed.push(`${engine}: ${r.name} p99 ${p99} ms`)
    }
  }
  console.log(
    missed.length === 0
      ? `Every page's median p99 is under ${P99_TARGET_MS} ms.`
      : `Over ${P99_TARGET_MS} ms at p99: ${missed.join('; ')}`,
  )
  await writeFile(
    path.join(BENCH_DIR, 'app-results.json'),
    `${JSON.stringify({ files: FILES, date: new Date().toISOString(), results }, null, 2)}\n`,
  )
}

if (import.meta.main) await main()
