// Fleet benchmark (issue 24): the same requests through nginx (examples/nginx-fleet.conf, round-robin) to three
// Coffer processes and to one, each process with a DATA_DIR of its own, on one PostgreSQL database, Redis and a
// bucket of Ceph's object store, as in README "Running several processes"; and, as the practical limit, the
// same nginx in front of bare Fastify processes answering one route from memory. Requests: one file's metadata
// with an API key (GET /files/{id}), and views of a share link's page (each view counted, committed before the
// page is sent: after the runs the link's count must be at least the views wrk completed). wrk, written in C,
// is the load generator, at 32 connections.
//   npm run bench:fleet                 (BENCH_SECONDS=10 per figure; BENCH_PG_ADMIN_URL, REDIS_URL)
// This machine has 2 cores shared by wrk, nginx, the processes, PostgreSQL, Redis and Ceph: three processes
// cannot have a core each here, and the figures say how the fleet behaves when they compete for two.
import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { startCeph } from '../test/support/ceph.ts'
import { newAccount, newKey } from '../test/support/cli-helpers.ts'
import { type Nginx, startFleetNginx } from '../test/support/nginx.ts'
import { type ServerProcess, startServer } from '../test/support/server-process.ts'
import { prepareUploads, uploadWithGrant, waitForUpload } from '../test/support/uploads.ts'
import {
  freePort,
  requireWrk,
  startChild,
  stopChild,
  type WrkFigures,
  waitForServer,
  wrk,
} from './processes.ts'

const DURATION = Number(process.env.BENCH_SECONDS ?? 10)
const CONNECTIONS = 32
const PG_ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const DATABASE = 'coffer_bench_fleet'

await requireWrk()
const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
await admin.connect()
await admin.query(`drop database if exists ${DATABASE} with (force)`)
await admin.query(`create database ${DATABASE}`)
const databaseUrl = new URL(PG_ADMIN_URL)
databaseUrl.pathname = `/${DATABASE}`

const ceph = await startCeph()
const tmp = await mkdtemp(path.join(tmpdir(), 'coffer-bench-fleet-'))
const servers: ServerProcess[] = []
const bare: ChildProcess[] = []
const fronts: Nginx[] = []
try {
  await ceph.createBucket('fleet')
  const fleetPort = await freePort()
  const fleetBase = `http://127.0.0.1:${fleetPort}`
  const env = (dataDir: string) => ({
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl.href,
    REDIS_URL,
    ...ceph.env('fleet'),
    PUBLIC_URL: fleetBase,
    TRUST_PROXY: 'true',
    RATE_LIMIT_MAX: '1000000000',
    LOG_LEVEL: 'warn',
  })
  const storage = {
    dataDir: path.join(tmp, 'cli'),
    databaseUrl: databaseUrl.href,
    blobEnv: ceph.env('fleet'),
  }
  const account = await newAccount(storage)
  const { key: token } = await newKey(storage, account.email, 'all')
  for (let i = 0; i < 3; i++) servers.push(await startServer(env(path.join(tmp, `data-${i}`))))
  const upstreams = servers.map((server) => `127.0.0.1:${server.port}`)
  const front = async (to: string[], port?: number) => {
    const nginx = await startFleetNginx({
      upstreams: to.length === 3 ? to : ([to[0], to[0], to[0]] as string[]),
      port: port ?? (await freePort()),
      logRequests: false,
    })
    fronts.push(nginx)
    return nginx.base
  }
  const threeProcesses = await front(upstreams, fleetPort)
  const oneProcess = await front([upstreams[0] as string])

  // One file, shared.
  process.env.VERCEL_BLOB_API_URL = `${threeProcesses}/blob`
  const [grant] = await prepareUploads(threeProcesses, token, [
    { name: 'notes.txt', type: 'text/plain', size: 12 },
  ])
  if (!grant) throw new Error('no grant')
  await uploadWithGrant(grant, Buffer.from('fleet bench\n'))
  const status = await waitForUpload(grant, token)
  if (status.status !== 'complete') throw new Error(`upload ended ${JSON.stringify(status)}`)
  const fileId = status.result.id
  const shared = await fetch(`${threeProcesses}/api/v1/shares`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ fileId }),
  })
  const share = ((await shared.json()) as { data: { id: string; publicUrl: string } }).data
  const sharePath = new URL(share.publicUrl).pathname

  // The practical limit: bare Fastify processes answering the file's JSON from memory.
  const body = await (
    await fetch(`${threeProcesses}/api/v1/files/${fileId}`, {
      headers: { authorization: `Bearer ${token}` },
    })
  ).text()
  const barePorts = await Promise.all([freePort(), freePort(), freePort()])
  for (const port of barePorts) {
    const child = startChild('bench/bare-server.ts', { PORT: String(port), BODY: body })
    bare.push(child)
    await waitForServer(`http://127.0.0.1:${port}/`, child)
  }
  const bareUpstreams = barePorts.map((port) => `127.0.0.1:${port}`)
  const bareThree = await front(bareUpstreams)
  const bareOne = await front([bareUpstreams[0] as string])

  const auth = [`authorization: Bearer ${token}`]
  /** Requests wrk completed, warm-ups included, by URL. */
  const completed = new Map<string, number>()
  const measure = async (url: string, headers: string[] = []): Promise<WrkFigures> => {
    const warm = await wrk(url, CONNECTIONS, 2, headers)
    const figures = await wrk(url, CONNECTIONS, DURATION, headers)
    completed.set(url, (completed.get(url) ?? 0) + warm.requests + figures.requests)
    return figures
  }
  const rows: [string, WrkFigures, WrkFigures][] = []
  rows.push(['bare Fastify route (the limit)', await measure(`${bareOne}/`), await measure(`${bareThree}/`)])
  rows.push([
    'GET /files/{id}, API key',
    await measure(`${oneProcess}/api/v1/files/${fileId}`, auth),
    await measure(`${threeProcesses}/api/v1/files/${fileId}`, auth),
  ])
  const views = [await measure(`${oneProcess}${sharePath}`), await measure(`${threeProcesses}${sharePath}`)]
  rows.push(['share page view, counted', views[0] as WrkFigures, views[1] as WrkFigures])

  // Every view wrk completed was counted, whichever process served it (a view still under way when wrk
  // stopped may be counted too, never the other way round).
  const counted = await fetch(`${threeProcesses}/api/v1/shares/${share.id}`, {
    headers: { authorization: `Bearer ${token}` },
  })
  const viewCount = ((await counted.json()) as { data: { viewCount: number } }).data.viewCount
  const failed = rows.flatMap(([, ...figures]) => figures).reduce((sum, f) => sum + f.errors, 0)

  console.log(
    `Coffer fleet benchmark: wrk, ${CONNECTIONS} connections, ${DURATION} s per figure, through nginx`,
  )
  console.log(`${''.padEnd(32)} ${'1 process'.padStart(20)} ${'3 processes'.padStart(20)}  3 / 1`)
  for (const [label, one, three] of rows) {
    const cell = (f: WrkFigures) => `${f.rps.toFixed(0)} req/s p99 ${f.p99.toFixed(1)} ms`
    console.log(
      `${label.padEnd(32)} ${cell(one).padStart(20)} ${cell(three).padStart(20)}  ${(three.rps / one.rps).toFixed(2)}`,
    )
  }
  const viewed =
    (completed.get(`${oneProcess}${sharePath}`) ?? 0) + (completed.get(`${threeProcesses}${sharePath}`) ?? 0)
  console.log(
    `share views: wrk completed ${viewed}, the link counted ${viewCount}; failed requests: ${failed}`,
  )
  if (viewCount < viewed || failed > 0) throw new Error('views were lost, or requests failed')
} finally {
  for (const nginx of fronts) await nginx.stop()
  for (const server of servers) await server.stop()
  for (const child of bare) await stopChild(child)
  await ceph.stop()
  await admin.query(`drop database if exists ${DATABASE} with (force)`)
  await admin.end()
  await rm(tmp, { recursive: true, force: true })
}
