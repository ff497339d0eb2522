// A folder link's counts across three server processes on one PostgreSQL database (issue 44, 2): views of its page
// and downloads of its files and of its zip, made at once through all three, move its counts (and its day's
// counts) by exactly as many; a download limit hit by many more downloads than it allows at once, spread over the
// three, lets exactly as many through; and the pass a password gives on one process opens the link on the others.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createFolder } from './support/files-helpers.ts'
import {
  call,
  createAccount,
  createFile,
  ENGINES,
  startApp,
  type TestAccount,
  type TestContext,
} from './support/harness.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'

/** No rate limit and no cap on connections: every request of the test must be answered. */
const NO_LIMIT = {
  RATE_LIMIT_MAX: '1000000',
  MAX_CONNECTIONS_PER_ADDRESS: '0',
  HEADERS_TIMEOUT_SECONDS: '300',
  IDLE_TIMEOUT_SECONDS: '600',
}

const PROCESSES = 3

interface Answer {
  url: string
  status: number
  body: Buffer
}

/** GETs every one of `urls` at once; resolves with each answer, in their order. */
function getAll(urls: string[], headers: Record<string, string> = {}): Promise<Answer[]> {
  return Promise.all(
    urls.map(async (url) => {
      const response = await fetch(url, { headers, redirect: 'manual' })
      return { url, status: response.status, body: Buffer.from(await response.arrayBuffer()) }
    }),
  )
}

/** The number of entries a zip's end of central directory record states. */
function zipEntries(zip: Buffer): number {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]))
  assert.ok(end >= 0, 'a zip')
  return zip.readUInt16LE(end + 10)
}

describe('a folder link served by three processes on one PostgreSQL database', {
  skip: ENGINES.includes('postgres') ? false : 'TEST_DATABASE_URL is not set',
}, () => {
  let c: TestContext & { stop(): Promise<void> }
  const servers: ServerProcess[] = []
  /** The server of request `i`: each in turn. */
  const base = (i: number) => (servers[i % servers.length] as ServerProcess).base

  before(async () => {
    c = await startApp('postgres')
    const env = {
      ...NO_LIMIT,
      DATABASE_URL: c.config.databaseUrl as string,
      DATA_DIR: c.dataDir,
      ...c.bucket?.env,
    }
    // One at a time: three starting at once on a loaded machine of two cores take long.
    for (let i = 0; i < PROCESSES; i++) servers.push(await startServer(env))
  })

  after(async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await c?.stop()
  })

  /** A folder with two files, and its link with `extra` settings. */
  async function sharedFolder(a: TestAccount, name: string, extra: Record<string, unknown> = {}) {
    const folder = await createFolder(c.app, a, name)
    const files = [
      await createFile(c, a.id, { name: 'one.txt', content: 'the first file', folderId: folder.id }),
      await createFile(c, a.id, { name: 'two.txt', content: 'the second file', folderId: folder.id }),
    ]
    const res = await call(c.app, 'POST', '/api/v1/folder-shares', {
      token: a.token,
      body: { folderId: folder.id, ...extra },
    })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    const page = new URL(res.body.data.publicUrl).pathname
    return { id: res.body.data.id as string, page, files }
  }

  /** The link's counts as the API says them, and as its days in the database hold them. */
  async function counts(a: TestAccount, shareId: string) {
    const res = await call(c.app, 'GET', `/api/v1/folder-shares/${shareId}`, { token: a.token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    const days = await c.db.kysely
      .selectFrom('share_daily_counts')
      .select(['views', 'downloads'])
      .where('share_id', '=', shareId)
      .execute()
    const sum = (key: 'views' | 'downloads') => days.reduce((total, day) => total + Number(day[key]), 0)
    return {
      views: res.body.data.viewCount as number,
      downloads: res.body.data.downloadCount as number,
      daysViews: sum('views'),
      daysDownloads: sum('downloads'),
    }
  }

  test('60 views and 60 downloads (of files and zips) at once through three processes count exactly', async () => {
    const a = await createAccount(c.app)
    const link = await sharedFolder(a, 'Counted across')
    const [one, two] = link.files as [(typeof link.files)[0], (typeof link.files)[0]]
    const views = Array.from({ length: 60 }, (_, i) => `${base(i)}${link.page}`)
    // 20 of each file and 20 zips, each kind through every process.
    const downloads = Array.from({ length: 60 }, (_, i) => {
      const kind = Math.floor(i / 3) % 3
      const path =
        kind === 0
          ? `${link.page}/files/${one.id}/download`
          : kind === 1
            ? `${link.page}/files/${two.id}/download`
            : `${link.page}/zip`
      return `${base(i)}${path}`
    })
    // Neither HEADs nor later ranges nor prefetches count, wherever they land.
    const uncounted = [
      ...Array.from({ length: 6 }, (_, i) =>
        fetch(`${base(i)}${link.page}`, { method: 'HEAD' }).then((r) => r.status),
      ),
      ...Array.from({ length: 6 }, (_, i) =>
        fetch(`${base(i)}${link.page}`, { headers: { 'sec-purpose': 'prefetch' } }).then(async (r) => {
          await r.arrayBuffer()
          return r.status
        }),
      ),
      ...Array.from({ length: 6 }, (_, i) =>
        fetch(`${base(i)}${link.page}/files/${one.id}/download`, { headers: { range: 'bytes=3-' } }).then(
          async (r) => {
            await r.arrayBuffer()
            return r.status
          },
        ),
      ),
    ]
    const [answers, statuses] = await Promise.all([getAll([...views, ...downloads]), Promise.all(uncounted)])
    assert.deepEqual(statuses, [...Array(12).fill(200), ...Array(6).fill(206)])
    for (const answer of answers) assert.equal(answer.status, 200, answer.url)
    for (const answer of answers.slice(0, 60)) {
      const page = answer.body.toString()
      assert.ok(page.includes('one.txt') && page.includes('two.txt'), answer.url)
    }
    for (const answer of answers.slice(60)) {
      if (answer.url.endsWith('/zip')) assert.equal(zipEntries(answer.body), 2, answer.url)
      else assert.match(answer.body.toString(), /^the (first|second) file$/, answer.url)
    }
    assert.deepEqual(await counts(a, link.id), { views: 60, downloads: 60, daysViews: 60, daysDownloads: 60 })
  })

  test('a limit of 10 downloads hit by 30 at once through three processes lets exactly 10 through', async () => {
    const a = await createAccount(c.app)
    const link = await sharedFolder(a, 'Limited across', { maxDownloads: 10 })
    const [one, two] = link.files as [(typeof link.files)[0], (typeof link.files)[0]]
    const paths = [
      `${link.page}/files/${one.id}/download`,
      `${link.page}/files/${two.id}/download`,
      `${link.page}/zip`,
    ]
    const urls = Array.from({ length: 30 }, (_, i) => `${base(i)}${paths[Math.floor(i / 3) % 3]}`)
    const answers = await getAll(urls)
    const served = answers.filter((answer) => answer.status === 200)
    const refused = answers.filter((answer) => answer.status === 410)
    assert.equal(served.length, 10, JSON.stringify(answers.map((answer) => answer.status)))
    assert.equal(refused.length, 20)
    for (const answer of served) {
      if (answer.url.endsWith('/zip')) assert.equal(zipEntries(answer.body), 2)
      else assert.match(answer.body.toString(), /^the (first|second) file$/)
    }
    for (const answer of refused)
      assert.match(answer.body.toString(), /downloaded as many times as its owner allowed/)
    assert.deepEqual(await counts(a, link.id), { views: 0, downloads: 10, daysViews: 0, daysDownloads: 10 })
    // Every process says the link is used up.
    for (let i = 0; i < PROCESSES; i++) {
      const [page] = await getAll([`${base(i)}${link.page}`])
      assert.equal(page?.status, 410)
    }
    assert.deepEqual(await counts(a, link.id), { views: 0, downloads: 10, daysViews: 0, daysDownloads: 10 })
  })

  test('a file moved out of the folder or trashed is gone from the link on every process, though each had served it', async () => {
    const a = await createAccount(c.app)
    const link = await sharedFolder(a, 'Changing across')
    const [one, two] = link.files as [(typeof link.files)[0], (typeof link.files)[0]]
    const everywhere = (path: string) => getAll(servers.map((server) => `${server.base}${path}`))
    // Each process reads (and may keep) both files.
    for (const file of [one, two]) {
      for (const answer of await everywhere(`${link.page}/files/${file.id}/download`)) {
        assert.equal(answer.status, 200, answer.url)
      }
    }
    const moved = await call(c.app, 'PATCH', `/api/v1/files/${one.id}`, {
      token: a.token,
      body: { folderId: null },
    })
    assert.equal(moved.status, 200)
    const trashed = await call(c.app, 'DELETE', `/api/v1/files/${two.id}`, { token: a.token })
    assert.equal(trashed.status, 200)
    // The other processes hear of the change through PostgreSQL: within moments, never served after.
    const deadline = Date.now() + 5000
    for (;;) {
      const answers = await everywhere(`${link.page}/files/${one.id}/download`).then(async (first) => [
        ...first,
        ...(await everywhere(`${link.page}/files/${two.id}/download`)),
      ])
      if (answers.every((answer) => answer.status === 404)) break
      assert.ok(Date.now() < deadline, JSON.stringify(answers.map((answer) => [answer.url, answer.status])))
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    for (const page of await everywhere(link.page)) {
      assert.equal(page.status, 200)
      assert.ok(!page.body.toString().includes('one.txt') && !page.body.toString().includes('two.txt'))
      assert.match(page.body.toString(), /This folder is empty for now/)
    }
    for (const zip of await everywhere(`${link.page}/zip`)) assert.equal(zipEntries(zip.body), 0)
    // Each stays gone: no process serves them again.
    for (const answer of await everywhere(`${link.page}/files/${one.id}/download`))
      assert.equal(answer.status, 404)
  })

  test('the pass a password gives on one process opens the link on the others; a new password ends it on all', async () => {
    const a = await createAccount(c.app)
    const link = await sharedFolder(a, 'Protected across', { password: 'correct horse' })
    const [one] = link.files as [(typeof link.files)[0]]
    const unlocked = await fetch(`${base(0)}${link.page}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'password=correct+horse',
      redirect: 'manual',
    })
    assert.equal(unlocked.status, 303)
    const cookie = (unlocked.headers.get('set-cookie') ?? '').split(';')[0] as string
    assert.match(cookie, /^coffer_link_pass=/)
    const opened = await getAll(
      [1, 2].flatMap((i) => [
        `${base(i)}${link.page}`,
        `${base(i)}${link.page}/files/${one.id}/download`,
        `${base(i)}${link.page}/zip`,
      ]),
      { cookie },
    )
    for (const answer of opened) assert.equal(answer.status, 200, answer.url)
    assert.ok(opened[0]?.body.toString().includes('Protected across'))
    assert.deepEqual(await counts(a, link.id), { views: 2, downloads: 4, daysViews: 2, daysDownloads: 4 })

    const changed = await call(c.app, 'PATCH', `/api/v1/folder-shares/${link.id}`, {
      token: a.token,
      body: { password: 'another horse' },
    })
    assert.equal(changed.status, 200)
    const refused = await getAll(
      [0, 1, 2].map((i) => `${base(i)}${link.page}/zip`),
      { cookie },
    )
    for (const answer of refused) {
      assert.equal(answer.status, 403, answer.url)
      assert.ok(!answer.body.toString().includes('Protected across'))
    }
  })
})
