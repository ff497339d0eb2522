// Counts under load: a thousand page views and a thousand downloads of one link, 400 at a time, over real
// connections, must move its counts (and its day's counts) by exactly a thousand each, on each engine, and
// with two server processes on one PostgreSQL database.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { call, createAccount, createFile, ENGINES, startApp, type TestContext } from './support/harness.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'
import { startListening } from './support/uploads.ts'

const REQUESTS = 1000
/**
 * A thousand requests from one address at once, none refused: no rate limit, no cap on connections, and time
 * for each to wait its turn. On a slow machine the last of two thousand connections may wait over the default
 * 20 s for its headers to be read, and be answered 408 (the timeouts have tests of their own).
 */
const NO_LIMIT = {
  RATE_LIMIT_MAX: '1000000',
  MAX_CONNECTIONS_PER_ADDRESS: '0',
  HEADERS_TIMEOUT_SECONDS: '300',
  IDLE_TIMEOUT_SECONDS: '600',
}

/**
 * The most requests in flight at once: enough for every commit to take a batch of them, and no more sockets than
 * the server's listen backlog (511) takes at once on a loaded machine (two thousand connections at once made
 * the kernel reset some while the whole suite ran, ECONNRESET in CI).
 */
const IN_FLIGHT = 400

/** GETs `urls`, IN_FLIGHT at a time; every answer must be a 200 with the expected body. */
async function getAll(urls: string[], body: string): Promise<void> {
  const answers: { status: number; text: string }[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < urls.length) {
        const url = urls[next++] as string
        const response = await fetch(url)
        answers.push({ status: response.status, text: await response.text() })
      }
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

describe('two server processes on one PostgreSQL database', {
  skip: ENGINES.includes('postgres') ? false : 'TEST_DATABASE_URL is not set',
}, () => {
  let c: TestContext & { stop(): Promise<void> }
  const servers: ServerProcess[] = []

  before(async () => {
    c = await startApp('postgres')
    const env = {
      ...NO_LIMIT,
      DATABASE_URL: c.config.databaseUrl as string,
      DATA_DIR: c.dataDir,
      ...c.bucket?.env,
    }
    servers.push(await startServer(env), await startServer(env))
  })

  after(async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await c?.stop()
  })

  test(`${REQUESTS} views and ${REQUESTS} downloads spread over both count exactly`, async () => {
    const { account, shareId, page } = await shareWithFile(c)
    const urls = Array.from({ length: REQUESTS }, (_, i) => {
      const { base } = servers[i % servers.length] as ServerProcess
      return [`${base}${page}`, `${base}${page}/download`]
    }).flat()
    await getAll(urls, 'counted bytes')
    await expectCounts(c, account.token, shareId, REQUESTS, REQUESTS)
  })
})
