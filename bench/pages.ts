// Share page benchmark: views of one share link's public page per second, and their latency, at 8 and 64
// connections, against a bare Fastify route answering the same HTML from memory, as a ratio in one run. The
// real server runs as a child process on SQLite and on PostgreSQL, counting every view (each committed
// before its page is sent). The load generator is wrk, written in C: far faster than either server, so the
// figures are the servers', not the client's. After the runs, the link's view count must equal the
// requests wrk completed.
//
// Then the same with a webhook endpoint that hears of every view (share.viewed, to the bare server, which answers
// 204): what recording an event with each view costs, and how fast the events recorded reach the receiver (from
// the first view to the last delivery's 2xx, each one counted as succeeded in the outbox).
//
//   npm run bench:pages                      both engines, 10 s per run, 3 rounds
//   BENCH_ENGINES=sqlite BENCH_SECONDS=5 npm run bench:pages
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, rmSync } from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import pg from 'pg'
import { blobKeyOf } from '../src/platform/blob/blob-keys.ts'
import { LocalBlobStore } from '../src/platform/blob/local-blob-store.ts'
import { loadConfig } from '../src/platform/config.ts'
import type { Engine } from '../src/platform/db/engine.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { newId } from '../src/platform/ids.ts'
import { wire } from '../src/wiring.ts'
import {
  freePort,
  requireWrk,
  startChild,
  stopChild,
  type WrkFigures,
  waitForServer,
  wrk,
} from './processes.ts'

const ENGINES = (process.env.BENCH_ENGINES ?? 'sqlite,postgres').split(',') as Engine[]
const DURATION = Number(process.env.BENCH_SECONDS ?? 10)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = [8, 64]
/** How long the webhook deliveries may take to catch up once the views end, at most. */
const DRAIN_SECONDS = Number(process.env.BENCH_DRAIN_SECONDS ?? 120)
const BENCH_DIR = path.resolve('.bench')
const PG_ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const PG_DATABASE = 'coffer_bench_pages'
const _root = path.resolve(import.meta.dirname, '..')

type Measured = WrkFigures

/** A fresh database for the run: an empty SQLite directory, or a new PostgreSQL database. */
async function freshDatabase(engine: Engine): Promise<{ dataDir: string; databaseUrl: string | undefined }> {
  const dataDir = path.join(BENCH_DIR, `pages-${engine}`)
  rmSync(dataDir, { recursive: true, force: true })
  mkdirSync(dataDir, { recursive: true })
  if (engine === 'sqlite') return { dataDir, databaseUrl: undefined }
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  await admin.query(`drop database if exists ${PG_DATABASE} with (force)`)
  await admin.query(`create database ${PG_DATABASE}`)
  await admin.end()
  const url = new URL(PG_ADMIN_URL)
  url.pathname = `/${PG_DATABASE}`
  return { dataDir, databaseUrl: url.toString() }
}

/** An account with one text file and its share link, made through Coffer's own services. */
async function shareOneFile(
  env: Record<string, string>,
): Promise<{ accountId: string; shareId: string; page: string }> {
  const config = loadConfig(env)
  const db = openDatabase(config)
  await migrate(db)
  const blobs = await LocalBlobStore.open(path.join(config.dataDir, 'blobs'))
  const { services } = wire({ config, db, blobs })
  try {
    const account = await services.accounts.create({ email: 'pages@example.com' })
    const content = Buffer.from('The minutes of the meeting.\n'.repeat(40))
    const id = newId('fil')
    const blobKey = blobKeyOf(account.id, id)
    await blobs.put(blobKey, Readable.from([content]))
    await services.files.create({
      id,
      accountId: account.id,
      folderId: null,
      name: 'Meeting minutes.txt',
      contentType: 'text/plain',
      size: content.length,
      blobKey,
      sha256: null,
    })
    const share = await services.shares.create(account.id, id)
    return { accountId: account.id, shareId: share.id, page: `/s/${share.publicId}` }
  } finally {
    await db.close()
  }
}

/** An endpoint of the account that hears of every view, made through Coffer's own services. */
async function addWebhook(env: Record<string, string>, accountId: string, url: string): Promise<void> {
  const config = loadConfig(env)
  const db = openDatabase(config)
  const blobs = await LocalBlobStore.open(path.join(config.dataDir, 'blobs'))
  try {
    await wire({ config, db, blobs }).services.webhooks.create(accountId, { url, events: ['share.viewed'] })
  } finally {
    await db.close()
  }
}

/** Waits until no delivery is pending, or `ms` have passed; the deliveries by state. */
async function drained(env: Record<string, string>, ms: number): Promise<Record<string, number>> {
  const db = openDatabase(loadConfig(env))
  const deadline = performance.now() + ms
  try {
    for (;;) {
      const rows = await db.kysely
        .selectFrom('webhook_deliveries')
        .select(['state', db.kysely.fn.countAll<number>().as('count')])
        .groupBy('state')
        .execute()
      const byState = Object.fromEntries(rows.map((row) => [row.state, Number(row.count)]))
      if (!byState.pending || performance.now() > deadline) return byState
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } finally {
    await db.close()
  }
}

async function viewCount(env: Record<string, string>, shareId: string): Promise<number> {
  const db = openDatabase(loadConfig(env))
  try {
    const row = await db.kysely
      .selectFrom('shares')
      .select('view_count')
      .where('id', '=', shareId)
      .executeTakeFirstOrThrow()
    return Number(row.view_count)
  } finally {
    await db.close()
  }
}

const median = (runs: Measured[]) =>
  [...runs].sort((a, b) => a.rps - b.rps)[Math.floor(runs.length / 2)] as Measured

async function benchEngine(engine: Engine): Promise<string> {
  const { dataDir, databaseUrl } = await freshDatabase(engine)
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PUBLIC_URL: base,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    WEBHOOKS_ALLOW_PRIVATE: 'true',
  }
  const { accountId, shareId, page } = await shareOneFile(env)
  const coffer = startChild('src/server.ts', {
    ...env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '100000000',
  })
  const barePort = await freePort()
  let bare: ChildProcess | undefined
  try {
    await waitForServer(`${base}/healthz`, coffer)
    const html = await (await fetch(`${base}${page}`)).text()
    bare = startChild('bench/bare-server.ts', {
      PORT: String(barePort),
      BODY: html,
      CONTENT_TYPE: 'text/html; charset=utf-8',
    })
    const bareUrl = `http://127.0.0.1:${barePort}/`
    await waitForServer(bareUrl, bare)
    if ((await (await fetch(bareUrl)).text()) !== html) throw new Error('the bare route answers other HTML')
    const before = await viewCount(env, shareId)
    let requests = 0
    const lines = [
      `| ${engine}, ${Buffer.byteLength(html)} bytes of HTML | p50 ms | p99 ms | req/s |`,
      '|---|---:|---:|---:|',
    ]
    const ratios: string[] = []
    for (const connections of CONNECTIONS) {
      // Warm-ups, then the two servers in turns; each compared by its median run.
      requests += (await wrk(`${base}${page}`, connections, 2)).requests
      await wrk(bareUrl, connections, 2)
      const pages: Measured[] = []
      const uncounted: Measured[] = []
      const bares: Measured[] = []
      for (let round = 0; round < ROUNDS; round++) {
        pages.push(await wrk(`${base}${page}`, connections, DURATION))
        // A prefetch is served the same page and counts nothing: what the count's commit costs, by difference.
        uncounted.push(await wrk(`${base}${page}`, connections, DURATION, ['Sec-Purpose: prefetch']))
        bares.push(await wrk(bareUrl, connections, DURATION))
      }
      for (const measured of pages) {
        if (measured.errors > 0) throw new Error(`${measured.errors} failed share page requests`)
      }
      const p = median(pages)
      const b = median(bares)
      const row = (name: string, m: Measured) =>
        `| ${name}, ${connections} connections | ${m.p50.toFixed(2)} | ${m.p99.toFixed(2)} | ${Math.round(m.rps).toLocaleString('en')} |`
      lines.push(
        row('share page (view counted)', p),
        row('share page, prefetch (not counted)', median(uncounted)),
        row('bare Fastify, same HTML', b),
      )
      ratios.push(`${connections} connections: ${(p.rps / b.rps).toFixed(2)} of the bare route`)
      console.log(
        `  [${engine}] ${connections} connections, req/s by run: page ${pages.map((m) => Math.round(m.rps)).join(', ')}; ` +
          `not counted ${uncounted.map((m) => Math.round(m.rps)).join(', ')}; bare ${bares.map((m) => Math.round(m.rps)).join(', ')}`,
      )
      requests += pages.reduce((sum, m) => sum + m.requests, 0)
    }
    // Every page wrk received was counted; wrk leaves uncounted the requests in flight when a run ends, which
    // the server may have counted too.
    const counted = (await viewCount(env, shareId)) - before
    if (counted < requests) throw new Error(`${requests} pages received, but only ${counted} views counted`)
    lines.push('', `${engine}: share page views at ${ratios.join('; ')}.`)
    lines.push(
      `${engine}: ${counted.toLocaleString('en')} views counted for ${requests.toLocaleString('en')} pages wrk received (it drops those in flight when a run ends).`,
    )

    // The same views, each recording a share.viewed event that the server's sender delivers meanwhile; at the
    // fewer connections only, as the events pile up faster than one endpoint takes them.
    await addWebhook(env, accountId, bareUrl)
    const heard: string[] = []
    const firstHeard = performance.now()
    for (const connections of CONNECTIONS.slice(0, 1)) {
      await wrk(`${base}${page}`, connections, 2)
      const runs: Measured[] = []
      for (let round = 0; round < ROUNDS; round++)
        runs.push(await wrk(`${base}${page}`, connections, DURATION))
      const m = median(runs)
      heard.push(
        `| share page (view counted, share.viewed recorded), ${connections} connections | ${m.p50.toFixed(2)} | ${m.p99.toFixed(2)} | ${Math.round(m.rps).toLocaleString('en')} |`,
      )
    }
    const viewsEnded = performance.now()
    const deliveries = await drained(env, DRAIN_SECONDS * 1000)
    const drainedAt = performance.now()
    const delivered = deliveries.succeeded ?? 0
    if (deliveries.failed) throw new Error(`${deliveries.failed} webhook deliveries failed`)
    if (deliveries.pending) {
      lines.push(
        `${engine}: ${deliveries.pending.toLocaleString('en')} share.viewed events still pending after ${DRAIN_SECONDS} s.`,
      )
    }
    lines.splice(2 + 3 * CONNECTIONS.length, 0, ...heard) // at the end of the table
    lines.push(
      `${engine}: ${delivered.toLocaleString('en')} share.viewed events delivered to a 2xx receiver in ${((drainedAt - firstHeard) / 1000).toFixed(1)} s from the first view (${Math.round((delivered * 1000) / (drainedAt - firstHeard)).toLocaleString('en')} events/s; the last ${((drainedAt - viewsEnded) / 1000).toFixed(1)} s after the views ended).`,
    )
    return lines.join('\n')
  } finally {
    if (bare) await stopChild(bare)
    await stopChild(coffer)
  }
}

await requireWrk()
console.log(
  `Share page benchmark: wrk, ${CONNECTIONS.join(' and ')} connections, ${DURATION} s per run, ${ROUNDS} rounds`,
)
const tables: string[] = []
for (const engine of ENGINES) tables.push(await benchEngine(engine))
console.log(`\n${tables.join('\n\n')}`)
