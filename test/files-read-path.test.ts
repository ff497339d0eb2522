// The machinery that makes reading files fast (docs/architecture.md, "Performance"): lookups of one turn
// batched into one query, statements PostgreSQL plans once per connection, the time bound of the connections
// that read through bitmaps, and the index SQLite picks for a folder's page without statistics. Its effects
// are invisible in the API's answers, so these tests look at queries and plans.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CompiledQuery, sql } from 'kysely'
import { openDatabase } from '../src/platform/db/open.ts'
import { encodeCursor } from '../src/platform/db/pagination.ts'
import { selectFiles } from '../src/resources/files/files.repository.ts'
import { wire } from '../src/wiring.ts'
import { createFolder, insertFiles } from './support/files-helpers.ts'
import {
  call,
  createAccount,
  createFile,
  describeEachEngine,
  startApp,
  type TestContext,
} from './support/harness.ts'

/** 20,000 files: enough for PostgreSQL to plan as it would for a large account. */
async function addLargeAccountFiles(c: TestContext, accountId: string): Promise<void> {
  await insertFiles(c, accountId, [1, 20_000], ['name-', '.txt'])
}

describeEachEngine('files read path', (ctx) => {
  test('files asked for together are each answered for their own account, in one query on PostgreSQL', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const mine = await createFile(c, a.id, { name: 'mine.txt' })
    const theirs = await createFile(c, b.id, { name: 'theirs.txt' })
    // Keys in use are served from memory (PostgreSQL's notification listener needs a moment at first), so
    // the five requests below reach the file lookup in the same turn.
    for (const token of [a.token, b.token]) await call(c.app, 'GET', '/api/v1/folders', { token })
    await new Promise((resolve) => setTimeout(resolve, 50))
    for (const token of [a.token, b.token]) await call(c.app, 'GET', '/api/v1/folders', { token })
    // A write of this process, so that the files (cached when they were created) are read again.
    await createFolder(c.app, a, 'Anything')
    let queries = 0
    const read = c.db.read
    c.db.read = (query, name) => {
      if (name?.startsWith('files_by_ids_') || name === 'file_by_id') queries += 1
      return read(query, name)
    }
    try {
      const results = await Promise.all([
        call(c.app, 'GET', `/api/v1/files/${mine.id}`, { token: a.token }),
        call(c.app, 'GET', `/api/v1/files/${theirs.id}`, { token: a.token }),
        call(c.app, 'GET', `/api/v1/files/${theirs.id}`, { token: b.token }),
        call(c.app, 'GET', `/api/v1/files/${mine.id}`, { token: a.token }),
        call(c.app, 'GET', '/api/v1/files/fil_00000000000000000000000000', { token: b.token }),
      ])
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 404, 200, 200, 404],
      )
      assert.equal(results[0]?.body.data.name, 'mine.txt')
      assert.equal(results[2]?.body.data.name, 'theirs.txt')
      assert.deepEqual(results[0]?.body, results[3]?.body)
      assert.equal(queries, c.engine === 'postgres' ? 1 : 5)
    } finally {
      c.db.read = read
    }
  })

  test('PostgreSQL plans the file lookups and every plain list once per connection, not per request', async (t) => {
    const c = ctx()
    if (c.engine !== 'postgres') return t.skip('SQLite plans a statement when it is prepared')
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Plans')
    const files = await Promise.all(
      ['a', 'b', 'c'].map((name) => createFile(c, a.id, { name, folderId: folder.id })),
    )
    // One connection, so every execution below and the look at its prepared statements share a session.
    const db = openDatabase({ ...c.config, poolSize: 1 })
    try {
      // Plans are weighed by the table's statistics: with a handful of rows, even a statement replanned
      // every time would do.
      await addLargeAccountFiles(c, a.id)
      // As autovacuum leaves a table (its visibility map set): a list's page is read from the order index
      // alone, and PostgreSQL weighs the plans by that. Freshly written, each row would cost a visit to the
      // table, and the generic plan of a page after a cursor seemed dearer than planning each time (0.18 ms of
      // planning for 0.05 of reading, measured at 10,000,000 files).
      await sql`vacuum files`.execute(db.kysely)
      // Without the file cache, so that no lookup is answered from memory.
      const { services } = wire({ config: { ...c.config, fileCacheSize: 0 }, db, blobs: c.blobs })
      const { folders, shares, requests } = services
      const service = () => services.files
      const request = await requests.create(a.id, { title: 'Plans' })
      const after = encodeCursor({ createdAt: files[2]?.createdAt ?? 0, id: files[2]?.id ?? '' })
      for (let i = 0; i < 8; i++) {
        await service().get(a.id, files[0]?.id ?? '')
        const batch = service()
        await Promise.all(files.map((file) => batch.get(a.id, file.id)))
        await service().list(a.id, { limit: 50 })
        await service().list(a.id, { limit: 10, cursor: after })
        await service().list(a.id, { limit: 50, folderId: folder.id })
        await service().list(a.id, { limit: 100, folderId: folder.id, cursor: after })
        await folders.list(a.id, { limit: 25 })
        await shares.list(a.id, { limit: 25, cursor: after })
        await requests.list(a.id, { limit: 25 })
        await requests.list(a.id, { limit: 25, folderId: folder.id })
        await requests.listSubmissions(a.id, request.id, { limit: 25 })
      }
      const { rows } = await sql<{ name: string; generic_plans: number; custom_plans: number }>`
        select name, generic_plans, custom_plans from pg_prepared_statements
        where name ~ '^(files|folders|shares|requests|submissions)_' order by name`.execute(db.kysely)
      // A list's files are read by the ids of its page: one statement per power of two of them, as many as the
      // pages' sizes need (which depend on the order of files made in the same millisecond).
      const byIdList = /^files_by_id_list_\d+$/
      assert.ok(rows.some((row) => byIdList.test(row.name)))
      assert.deepEqual(
        rows.map((row) => row.name).filter((name) => !byIdList.test(name)),
        [
          'files_by_ids_1',
          'files_by_ids_4',
          'files_list_51',
          'files_list_after_11',
          'files_list_folder_51',
          'files_list_folder_after_101',
          'folders_list_26',
          'shares_list_after_26',
          'requests_list_26',
          'requests_list_folder_26',
          'submissions_list_26',
        ].sort(),
      )
      // PostgreSQL tries five custom plans before it compares them with the generic one.
      for (const row of rows) {
        assert.ok(row.custom_plans <= 5 && row.generic_plans >= 3, `${row.name}: ${JSON.stringify(row)}`)
      }
    } finally {
      await db.close()
    }
  })
})

test('SQLite, with no statistics (Coffer never runs ANALYZE): a page of a folder reads the folder index', async () => {
  const c = await startApp('sqlite')
  try {
    const a = await createAccount(c.app)
    const folder = await c.app.services.folders.create(a.id, 'Folder')
    await createFile(c, a.id, { folderId: folder.id })
    const page = selectFiles(c.db.kysely)
      .where('files.account_id', '=', a.id)
      .where('files.folder_id', '=', folder.id)
      .where('files.trashed_at', 'is', null)
      .orderBy('files.created_at', 'desc')
      .orderBy('files.id', 'desc')
      .limit(51)
      .compile()
    const plan = (
      await c.db.read<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${page.sql}`, [...page.parameters]),
      )
    )
      .map((row) => row.detail)
      .join('\n')
    assert.match(plan, /SEARCH files USING INDEX files_folder_order \(folder_id=\? AND account_id=\?\)/)
    assert.doesNotMatch(plan, /TEMP B-TREE/, 'the index gives the order')
  } finally {
    await c.stop()
  }
})
