import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { Db } from '../src/platform/db/database.ts'
import type { Engine } from '../src/platform/db/engine.ts'
import { encodeCursor } from '../src/platform/db/pagination.ts'
import { OauthRecordsRepository } from '../src/resources/oauth/oauth-records.repository.ts'
import { wireAccounts } from '../src/wiring.ts'
import { freePort, requireWrk, startChild, stopChild, waitForServer, wrk } from './processes.ts'
import { ACCOUNT_ID, BENCH_DIR, FILES, fileIdOf, folderIdOf, openSeeded, seededServerEnv } from './seed.ts'

const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Engine[]
const DURATION = Number(process.env.BENCH_SECONDS ?? 10)
const CONNECTIONS = 8
/** Turns of bare route and get-one-file runs whose medians give the ratios. */
const RATIO_ROUNDS = 3

const _root = path.resolve(import.meta.dirname, '..')

interface Scenario {
  name: string
  path: string
}

interface Measured {
  name: string
  p50: number
  p99: number
  rps: number
  non2xx: number
}

async function measure(name: string, url: string, headers: Record<string, string>): Promise<Measured> {
  const headerLines = Object.entries(headers).map(([header, value]) => `${header}: ${value}`)
  // A short warm-up fills caches and JIT before the measured run.
  await wrk(url, CONNECTIONS, 2, headerLines)
  const result = await wrk(url, CONNECTIONS, DURATION, headerLines)
  return { name, p50: result.p50, p99: result.p99, rps: result.rps, non2xx: result.errors }
}

function table(engine: string, rows: Measured[]): string {
  const lines = [
    `| ${engine} | p50 ms | p99 ms | req/s |`,
    '|---|---:|---:|---:|',
    ...rows.map((r) => `| ${r.name} | ${r.p50} | ${r.p99} | ${Math.round(r.rps).toLocaleString('en')} |`),
  ]
  return lines.join('\n')
}

interface EngineResult {
  rows: Measured[]
  /** Coffer's get-one against the bare route, by throughput. */
  ratio: number
  /** The same with the file read from the database every time. */
  uncachedRatio: number
}

/**
 * An OAuth access token for the bench account, recorded as the authorization server records one (a grant and
 * its token), so that the API's lookup of a token is measured without a browser to consent.
 */
async function mintAccessToken(db: Db, resource: string): Promise<string> {
  const records = new OauthRecordsRepository(db)
  const grantId = `bench-grant-${randomBytes(8).toString('hex')}`
  const token = randomBytes(32).toString('base64url')
  const day = 24 * 60 * 60
  const exp = Math.floor(Date.now() / 1000) + day
  await records.upsert(
    'Grant',
    grantId,
    { accountId: ACCOUNT_ID, clientId: 'bench-client', resources: { [resource]: 'files:read' }, exp },
    day,
  )
  await records.upsert(
    'AccessToken',
    token,
    { accountId: ACCOUNT_ID, clientId: 'bench-client', grantId, aud: resource, scope: 'files:read', exp },
    day,
  )
  return token
}

async function benchEngine(engine: Engine): Promise<EngineResult> {
  const { db, dataDir, databaseUrl } = await openSeeded(engine)

  const { secret } = await wireAccounts(db).apiKeys.create({
    accountId: ACCOUNT_ID,
    name: 'bench',
    scopes: ['files:read'],
  })
  const k = db.kysely
  const deep = await k
    .selectFrom('files')
    .select(['created_at', 'id'])
    .where('account_id', '=', ACCOUNT_ID)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(Math.floor(FILES / 2))
    .limit(1)
    .executeTakeFirstOrThrow()
  const oneFile = fileIdOf(ACCOUNT_ID, Math.floor(FILES / 3))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const accessToken = await mintAccessToken(db, `${base}/api/v1`)
  await db.close()

  // Every server answers with the same PUBLIC_URL, so that all return the same JSON.
  const startCoffer = (listenOn: number, env: Record<string, string> = {}) =>
    startChild('src/server.ts', { ...seededServerEnv({ dataDir, databaseUrl }, base, listenOn), ...env })
  const server = startCoffer(port)
  try {
    await waitForServer(`${base}/healthz`, server)
    const headers = { authorization: `Bearer ${secret}` }
    const cursor = encodeCursor({ createdAt: Number(deep.created_at), id: deep.id })
    // The search term is a fragment of one file's hash, so it matches a handful of names.
    const scenarios: Scenario[] = [
      { name: 'list files, first page', path: '/api/v1/files' },
      {
        name: `list files, page at row ${Math.floor(FILES / 2).toLocaleString('en')}`,
        path: `/api/v1/files?cursor=${cursor}`,
      },
      { name: 'list files in a folder', path: `/api/v1/files?folderId=${folderIdOf(ACCOUNT_ID, 42)}` },
      { name: 'search a name substring', path: '/api/v1/files?query=7d2a9' },
      // First pages of harder searches (every kind, every page: bench/search.ts): a pattern in every name,
      // one whose matches are all old, one whose trigrams are each in many names (1 match), one that matches
      // nothing.
      { name: 'search, in every name', path: '/api/v1/files?query=.pdf' },
      { name: 'search, only the oldest tenth', path: '/api/v1/files?query=report-00' },
      { name: 'search, 1 match, common trigrams', path: '/api/v1/files?query=report-1' },
      { name: 'search, 2 letters, no match', path: '/api/v1/files?query=zz' },
      { name: 'get one file', path: `/api/v1/files/${oneFile}` },
    ]
    for (const s of scenarios) {
      const res = await fetch(base + s.path, { headers })
      const body = (await res.json()) as { data: unknown[] | object }
      const count = Array.isArray(body.data) ? `${body.data.length} items` : 'one item'
      if (res.status !== 200) throw new Error(`${s.name}: ${res.status} ${JSON.stringify(body)}`)
      console.log(`  [${engine}] ${s.name}: ${count}`)
    }
    const rows: Measured[] = []
    for (const s of scenarios) rows.push(await measure(s.name, base + s.path, headers))

    // The same JSON from a bare Fastify route: what routing, auth, the file lookup and serialization cost.
    // And from Coffer with its file cache turned off, which reads the file from the database every time.
    // On a shared 2-core machine a single run of any of them can land in a slow or a fast regime, so they
    // are measured in turns and compared by their medians.
    const getOne = scenarios.find((s) => s.name === 'get one file') as Scenario
    const json = await (await fetch(`${base}${getOne.path}`, { headers })).text()
    const barePort = await freePort()
    const bare = startChild('bench/bare-server.ts', { PORT: String(barePort), BODY: json })
    const uncachedPort = await freePort()
    const uncachedServer = startCoffer(uncachedPort, { FILE_CACHE_SIZE: '0' })
    try {
      await waitForServer(`http://127.0.0.1:${barePort}/`, bare)
      const uncachedUrl = `http://127.0.0.1:${uncachedPort}${getOne.path}`
      await waitForServer(uncachedUrl, uncachedServer)
      const uncachedJson = await (await fetch(uncachedUrl, { headers })).text()
      if (uncachedJson !== json) throw new Error(`the uncached server answers otherwise: ${uncachedJson}`)
      const oauthHeaders = { authorization: `Bearer ${accessToken}` }
      const oauthJson = await (await fetch(`${base}${getOne.path}`, { headers: oauthHeaders })).text()
      if (oauthJson !== json) throw new Error(`the OAuth token is answered otherwise: ${oauthJson}`)
      const gets: Measured[] = [rows.find((r) => r.name === getOne.name) as Measured]
      const uncachedGets: Measured[] = []
      const oauthGets: Measured[] = []
      const bares: Measured[] = []
      for (let round = 0; round < RATIO_ROUNDS; round++) {
        bares.push(await measure('bare Fastify, same JSON', `http://127.0.0.1:${barePort}/`, {}))
        uncachedGets.push(await measure(`${getOne.name}, FILE_CACHE_SIZE=0`, uncachedUrl, headers))
        oauthGets.push(await measure(`${getOne.name}, OAuth access token`, base + getOne.path, oauthHeaders))
        if (round > 0) gets.push(await measure(getOne.name, base + getOne.path, headers))
      }
      const medianOf = (runs: Measured[]) =>
        [...runs].sort((a, b) => a.rps - b.rps)[Math.floor(runs.length / 2)] as Measured
      const get = medianOf(gets)
      const uncached = medianOf(uncachedGets)
      const oauthGet = medianOf(oauthGets)
      const bareRow = medianOf(bares)
      rows.splice(
        rows.findIndex((r) => r.name === getOne.name),
        1,
        get,
        oauthGet,
        uncached,
      )
      rows.push(bareRow)
      const rates = (runs: Measured[]) => runs.map((r) => Math.round(r.rps)).join(', ')
      console.log(
        `  [${engine}] req/s by run: get one file ${rates(gets)}; uncached ${rates(uncachedGets)}; ` +
          `OAuth token ${rates(oauthGets)}; bare ${rates(bares)}`,
      )
      return { rows, ratio: get.rps / bareRow.rps, uncachedRatio: uncached.rps / bareRow.rps }
    } finally {
      await stopChild(bare)
      await stopChild(uncachedServer)
    }
  } finally {
    await stopChild(server)
  }
}

async function main(): Promise<void> {
  await requireWrk()
  mkdirSync(BENCH_DIR, { recursive: true })
  console.log(
    `Coffer API benchmark: ${FILES.toLocaleString('en')} files, wrk, ${CONNECTIONS} connections, ${DURATION} s per scenario`,
  )
  const results: Record<string, EngineResult> = {}
  for (const engine of ENGINES) {
    results[engine] = await benchEngine(engine)
  }
  console.log('')
  const percent = (ratio: number) => `${(ratio * 100).toFixed(0)} %`
  for (const [engine, { rows, ratio, uncachedRatio }] of Object.entries(results)) {
    console.log(table(engine, rows))
    console.log(
      `\n${engine}: authenticated GET /files/{id} runs at ${percent(ratio)} of the bare route; ` +
        `with the file cache off, at ${percent(uncachedRatio)}.\n`,
    )
    const failed = rows.filter((r) => r.non2xx > 0)
    if (failed.length > 0)
      console.log(`WARNING: non-2xx responses in ${failed.map((r) => r.name).join(', ')}`)
  }
  await writeFile(
    path.join(BENCH_DIR, 'api-results.json'),
    `${JSON.stringify({ files: FILES, results }, null, 2)}\n`,
  )
}

await main()
