// Counts under load: a thousand page views and a thousand downloads of one link at once, over real
// connections, must move its counts (and its day's counts) by exactly a thousand each, on each engine, and
// with two server processes on one PostgreSQL database.
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { call, createAccount, createFile, ENGINES, startApp, type TestContext } from './support/harness.ts'
import { freePort, startListening } from './support/uploads.ts'

const ROOT = path.resolve(import.meta.dirname, '..')
const REQUESTS = 1000
/** High enough that a thousand requests from one address are not refused. */
const NO_LIMIT = { RATE_LIMIT_MAX: '1000000' }

/** GETs `urls` all at once; every answer must be a 200 with the expected body. */
async function getAll(urls: string[], body: string): Promise<void> {
  const answers = await Promise.all(
    urls.map(async (url) => {
      const response = await fetch(url)
      return { status: response.status, text: await response.text() }
    }),
  )
  for (const answer of answers) assert.equal(answer.status, 200)
  const downloads = answers.filter((answer) => !answer.text.startsWith('<!doctype html>'))
  for (const download of downloads) assert.equal(download.text, body)
}

async function shareWithFile(c: TestContext) {
  const a = await createAccount(c.app)
  const file = await createFile(c, a.id, { content: 'counted bytes' })
  const res = await call(c.app, 'POST', '/api/v1/shares', { token: a.token, body: { fileId: file.id } })
  return { account: a, shareId: res.body.data.id as string, page: new URL(res.body.data.publicUrl).pathname }
}

async function expectCounts(
  c: TestContext,
  token: string,
  shareId: string,
  views: number,
  downloads: number,
) {
  const share = await call(c.app, 'GET', `/api/v1/shares/${shareId}`, { token })
  assert.deepEqual(
    { views: share.body.data.viewCount, downloads: share.body.data.downloadCount },
    { views, downloads },
  )
  const daily = await call(c.app, 'GET', `/api/v1/analytics/daily?shareId=${shareId}`, { token })
  assert.deepEqual(daily.body.data.days.at(-1), { date: daily.body.data.to, views, downloads })
}

for (const engine of ENGINES) {
  test(`${REQUESTS} views and ${REQUESTS} downloads at once count exactly [${engine}]`, async () => {
    const c = await startListening(engine, { env: NO_LIMIT })
    try {
      const { account, shareId, page } = await shareWithFile(c)
      await getAll(
        [
          ...Array.from({ length: REQUESTS }, () => `${c.base}${page}`),
          ...Array.from({ length: REQUESTS }, () => `${c.base}${page}/download`),
        ],
        'counted bytes',
      )
      await expectCounts(c, account.token, shareId, REQUESTS, REQUESTS)
    } finally {
      await c.stop()
    }
  })
}

/** `node src/server.ts` on a port of its own, ready when /healthz answers. */
async function startServer(env: Record<string, string>): Promise<{ base: string; child: ChildProcess }> {
  const port = await freePort()
  const child = spawn(process.execPath, [path.join(ROOT, 'src/server.ts')], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const base = `http://127.0.0.1:${port}`
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
    try {
      if ((await fetch(`${base}/healthz`)).ok) return { base, child }
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  child.kill()
  throw new Error('the server did not start')
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

describe('two server processes on one PostgreSQL database', {
  skip: ENGINES.includes('postgres') ? false : 'TEST_DATABASE_URL is not set',
}, () => {
  let c: TestContext & { stop(): Promise<void> }
  const servers: { base: string; child: ChildProcess }[] = []

  before(async () => {
    c = await startApp('postgres')
    const env = {
      ...NO_LIMIT,
      DATABASE_URL: c.config.databaseUrl as string,
      DATA_DIR: c.dataDir,
    }
    servers.push(await startServer(env), await startServer(env))
  })

  after(async () => {
    await Promise.all(servers.map((server) => stopServer(server.child)))
    await c?.stop()
  })

  test(`${REQUESTS} views and ${REQUESTS} downloads spread over both count exactly`, async () => {
    const { account, shareId, page } = await shareWithFile(c)
    const urls = Array.from({ length: REQUESTS }, (_, i) => {
      const { base } = servers[i % servers.length] as { base: string }
      return [`${base}${page}`, `${base}${page}/download`]
    }).flat()
    await getAll(urls, 'counted bytes')
    await expectCounts(c, account.token, shareId, REQUESTS, REQUESTS)
  })
})
