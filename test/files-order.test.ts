// Lists of files in each order (files/file-order.ts): GET /files?sort= walked page by page gives every file
// once, in the order a person expects (names ignoring the case of ASCII letters, then by their bytes; ties by
// id), the same on both engines, in an account and in a folder; a page read back (the web app's Previous) is
// the page before; a cursor of another order, and a search in another order, are 400s.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { FILE_ORDERS, type FileOrder } from '../src/resources/files/file-order.ts'
import { assertError, call, createAccount, createFile, describeEachEngine } from './support/harness.ts'

interface Listed {
  id: string
  name: string
  size: number
  createdAt: string
  folderId: string | null
}

/** The order a person expects, written out: the rule the database must follow. */
function expected(files: Listed[], order: FileOrder): string[] {
  const nameKey = (name: string) => Buffer.from(name.replace(/[A-Z]/g, (c) => c.toLowerCase()))
  const byId = (a: Listed, b: Listed) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  const compare: Record<FileOrder, (a: Listed, b: Listed) => number> = {
    newest: (a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || -byId(a, b),
    oldest: (a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt) || byId(a, b),
    name: (a, b) => Buffer.compare(nameKey(a.name), nameKey(b.name)) || byId(a, b),
    'name-desc': (a, b) => Buffer.compare(nameKey(b.name), nameKey(a.name)) || -byId(a, b),
    largest: (a, b) => b.size - a.size || -byId(a, b),
    smallest: (a, b) => a.size - b.size || byId(a, b),
  }
  return [...files].sort(compare[order]).map((file) => file.id)
}

const NAMES = [
  'banana.txt',
  'Apple.txt',
  'apple.txt',
  'cherry.pdf',
  'Éclair.png',
  'zebra.txt',
  '_underscore',
  '10 files.zip',
  '9 files.zip',
  'apple.txt',
  'Ärger.doc',
  'b',
]

describeEachEngine('files in every order', (ctx) => {
  test('each order, walked two at a time, gives every file once in its order; in a folder too', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = (await call(c.app, 'POST', '/api/v1/folders', { token: a.token, body: { name: 'Half' } }))
      .body.data
    for (const [i, name] of NAMES.entries()) {
      // Sizes with ties (every third the same), files in and out of the folder.
      await createFile(c, a.id, {
        name,
        content: 'x'.repeat(1 + (i % 3) * 10),
        folderId: i % 2 ? folder.id : null,
      })
    }
    const all = (await call(c.app, 'GET', '/api/v1/files?limit=100', { token: a.token })).body
      .data as Listed[]
    assert.equal(all.length, NAMES.length)
    for (const inFolder of [false, true]) {
      const files = inFolder ? all.filter((f) => f.folderId === folder.id) : all
      for (const order of FILE_ORDERS) {
        const walked: string[] = []
        let cursor: string | null = null
        do {
          const params = new URLSearchParams({ sort: order, limit: '2' })
          if (inFolder) params.set('folderId', folder.id)
          if (cursor) params.set('cursor', cursor)
          const page = await call(c.app, 'GET', `/api/v1/files?${params}`, { token: a.token })
          assert.equal(page.status, 200, JSON.stringify(page.body))
          walked.push(...page.body.data.map((f: Listed) => f.id))
          cursor = page.body.pagination.nextCursor
        } while (cursor)
        assert.deepEqual(walked, expected(files, order), `${order}${inFolder ? ' in the folder' : ''}`)
      }
    }
    const names = (
      await call(c.app, 'GET', '/api/v1/files?sort=name&limit=100', { token: a.token })
    ).body.data.map((f: Listed) => f.name)
    // Digits, then "_" (between the capitals and the small letters in bytes), then "Apple" beside "apple";
    // accented letters after every ASCII one.
    assert.deepEqual(names.slice(0, 6), [
      '10 files.zip',
      '9 files.zip',
      '_underscore',
      'Apple.txt',
      'apple.txt',
      'apple.txt',
    ])
    assert.deepEqual(names.slice(-2), ['Ärger.doc', 'Éclair.png'])
  })

  test('a page read back is the page before; the first page has none before it', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    for (const name of NAMES) await createFile(c, a.id, { name })
    for (const order of ['newest', 'name', 'largest'] as const) {
      const forward: { ids: string[]; prev: string | null }[] = []
      let cursor: string | undefined
      for (;;) {
        const page = await c.app.services.files.list(a.id, { order, cursor, limit: 5 })
        forward.push({ ids: page.items.map((f) => f.id), prev: page.prevCursor })
        if (!page.nextCursor) break
        cursor = page.nextCursor
      }
      assert.equal(forward[0]?.prev, null, 'nothing before the first page')
      // From the last page back to the first, each Previous gives the page before it, with its own Previous.
      for (let i = forward.length - 1; i > 0; i--) {
        const before = forward[i]?.prev as string
        assert.ok(before, `page ${i} has a page before it`)
        const back = await c.app.services.files.list(a.id, { order, before, limit: 5 })
        assert.deepEqual(
          back.items.map((f) => f.id),
          forward[i - 1]?.ids,
          `${order}: back from page ${i}`,
        )
        assert.equal(
          back.prevCursor === null,
          i === 1,
          `${order}: page ${i - 1} has one before it, unless the first`,
        )
        assert.ok(back.nextCursor, 'and the page it came from after it')
      }
    }
  })

  test('a cursor of another order, a search in another order, an unknown order: 400', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    for (const name of NAMES.slice(0, 4)) await createFile(c, a.id, { name })
    const first = await call(c.app, 'GET', '/api/v1/files?sort=name&limit=2', { token: a.token })
    const cursor = first.body.pagination.nextCursor
    assertError(
      await call(c.app, 'GET', `/api/v1/files?sort=largest&cursor=${cursor}`, { token: a.token }),
      400,
      'invalid_request',
    )
    assertError(
      await call(c.app, 'GET', `/api/v1/files?cursor=${cursor}`, { token: a.token }),
      400,
      'invalid_request',
    )
    assertError(
      await call(c.app, 'GET', '/api/v1/files?sort=name&query=apple', { token: a.token }),
      400,
      'invalid_request',
    )
    assertError(
      await call(c.app, 'GET', '/api/v1/files?sort=random', { token: a.token }),
      400,
      'invalid_request',
    )
    // The default order says so too.
    const plain = await call(c.app, 'GET', '/api/v1/files?sort=newest&query=apple', { token: a.token })
    assert.equal(plain.status, 200)
  })
})
