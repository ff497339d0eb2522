import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CompiledQuery, sql } from 'kysely'
import type { App } from '../src/app.ts'
import type { Scope } from '../src/auth/scopes.ts'
import { BITMAP_READ_TIMEOUT_MS, type Db, openDatabase } from '../src/db/database.ts'
import { encodeCursor } from '../src/db/pagination.ts'
import {
  ftsQuery,
  INDEX_CAP,
  pgTrigramQuery,
  type SearchScope,
  WALK_ROWS,
  walkQuery,
} from '../src/files/file-search.ts'
import { FilesService, type StoredFile, selectFiles } from '../src/files/files.service.ts'
import { FoldersService } from '../src/folders/folders.service.ts'
import { newId, newPublicId } from '../src/ids.ts'
import { RequestsService } from '../src/requests/requests.service.ts'
import { SharesService } from '../src/shares/shares.service.ts'
import {
  type ApiResponse,
  assertError,
  call,
  chars,
  createAccount,
  createFile,
  describeEachEngine,
  startApp,
  type TestAccount,
  type TestContext,
} from './support/harness.ts'

const iso = (ms: number) => new Date(ms).toISOString()

/** The File the API must return for `file`, given its folder and share as the API shows them. */
function fileJson(
  file: Pick<StoredFile, 'id' | 'name' | 'contentType' | 'size' | 'createdAt'>,
  folder: Record<string, unknown> | null = null,
  share: Record<string, unknown> | null = null,
) {
  return {
    id: file.id,
    name: file.name,
    contentType: file.contentType,
    size: file.size,
    createdAt: iso(file.createdAt),
    share,
    folderId: (folder?.id as string | undefined) ?? null,
    folder,
  }
}

/**
 * PostgreSQL: gives the account 20,000 files named `name-<n>.txt` at root, written straight to the database,
 * and refreshes the statistics, so that queries are planned as they are for large accounts.
 */
/**
 * Inserts files number `from` to `to` of the account, named `${prefix}${n}${suffix}` and created at n ms
 * after the epoch (so older than any file made through the API), straight into the table: fast enough for
 * tens of thousands.
 */
async function insertFiles(
  c: TestContext,
  accountId: string,
  [from, to]: [number, number],
  [prefix, suffix]: [string, string],
  folderId: string | null = null,
): Promise<void> {
  await sql`with recursive seq(n) as (
      select cast(${from} as integer) union all select n + 1 from seq where n < cast(${to} as integer))
    insert into files (id, account_id, folder_id, name, content_type, size, blob_key, sha256, created_at, updated_at)
    select 'fil_' || ${accountId} || '_' || n, ${accountId}, ${folderId}, ${prefix} || n || ${suffix}, 'text/plain', 1,
           'k/' || ${accountId} || '/' || n, null, n, n
    from seq`.execute(c.db.kysely)
  await sql`analyze`.execute(c.db.kysely)
}

/** 20,000 files: enough for PostgreSQL to plan as it would for a large account. */
async function addLargeAccountFiles(c: TestContext, accountId: string): Promise<void> {
  await insertFiles(c, accountId, [1, 20_000], ['name-', '.txt'])
}

async function createFolder(app: App, account: TestAccount, name: string) {
  const res = await call(app, 'POST', '/api/v1/folders', { token: account.token, body: { name } })
  assert.equal(res.status, 201)
  return res.body.data as {
    id: string
    name: string
    createdAt: string
    fileCount: number
    requestCount: number
  }
}

async function folderCounts(app: App, account: TestAccount, folderId: string): Promise<number> {
  const res = await call(app, 'GET', `/api/v1/folders/${folderId}`, { token: account.token })
  assert.equal(res.status, 200)
  return res.body.data.fileCount
}

async function insertShare(
  c: TestContext,
  accountId: string,
  fileId: string,
  values: { isActive: boolean; expiresAt: number | null; viewCount: number; downloadCount: number },
) {
  const now = Date.now()
  const row = {
    id: newId('shr', now),
    account_id: accountId,
    file_id: fileId,
    public_id: newPublicId(),
    is_active: values.isActive,
    expires_at: values.expiresAt,
    view_count: values.viewCount,
    download_count: values.downloadCount,
    created_at: now,
    updated_at: now,
  }
  await c.db.kysely.insertInto('shares').values(row).execute()
  return row
}

/** Files as the list orders them: newest first, then id descending. */
const newestFirst = <T extends { createdAt: number; id: string }>(files: T[]) =>
  [...files].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))

/** Every id of a listing, page by page; fails if a page repeats an id. */
async function walk(app: App, token: string, params: string, limit: number): Promise<string[]> {
  const ids: string[] = []
  let cursor: string | null = null
  do {
    const url: string = `/api/v1/files?limit=${limit}${params}${cursor ? `&cursor=${cursor}` : ''}`
    const res: ApiResponse = await call(app, 'GET', url, { token })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.ok(res.body.data.length <= limit)
    ids.push(...res.body.data.map((f: { id: string }) => f.id))
    cursor = res.body.pagination.nextCursor
  } while (cursor)
  assert.equal(new Set(ids).size, ids.length, 'a file was listed twice')
  return ids
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describeEachEngine('files', (ctx) => {
  test('get and list files with full shapes: folder embedded, share null', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Invoices')
    const inFolder = await createFile(c, a.id, {
      name: 'march.pdf',
      contentType: 'application/pdf',
      folderId: folder.id,
    })
    await sleep(2)
    const atRoot = await createFile(c, a.id, { name: 'notes.txt', content: 'hello' })
    const folderJson = { ...folder, fileCount: 1 }

    const got = await call(c.app, 'GET', `/api/v1/files/${inFolder.id}`, { token: a.token })
    assert.equal(got.status, 200)
    assert.deepEqual(got.body, { data: fileJson(inFolder, folderJson) })
    assert.equal(got.body.data.size, inFolder.content.length)

    const root = await call(c.app, 'GET', `/api/v1/files/${atRoot.id}`, { token: a.token })
    assert.deepEqual(root.body, {
      data: {
        id: atRoot.id,
        name: 'notes.txt',
        contentType: 'text/plain',
        size: 5,
        createdAt: iso(atRoot.createdAt),
        share: null,
        folderId: null,
        folder: null,
      },
    })

    const list = await call(c.app, 'GET', '/api/v1/files', { token: a.token })
    assert.equal(list.status, 200)
    assert.deepEqual(list.body, {
      data: [fileJson(atRoot), fileJson(inFolder, folderJson)],
      pagination: { nextCursor: null },
    })

    const filtered = await call(c.app, 'GET', `/api/v1/files?folderId=${folder.id}`, { token: a.token })
    assert.deepEqual(filtered.body, {
      data: [fileJson(inFolder, folderJson)],
      pagination: { nextCursor: null },
    })

    const empty = await createFolder(c.app, a, 'Empty')
    const none = await call(c.app, 'GET', `/api/v1/files?folderId=${empty.id}`, { token: a.token })
    assert.deepEqual(none.body, { data: [], pagination: { nextCursor: null } })
  })

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
      // Each lookup gets a service of its own, so none is answered from the cache of an earlier one.
      const service = () => new FilesService({ db, blobs: c.blobs })
      const folders = new FoldersService(db)
      const shares = new SharesService({ db, config: c.config })
      const requests = new RequestsService({ db, config: c.config })
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
      assert.deepEqual(
        rows.map((row) => row.name),
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

  test('a share is summarised with its public URL and its effective state', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const active = await createFile(c, a.id, { name: 'shared.txt' })
    const expired = await createFile(c, a.id, { name: 'expired.txt' })
    const disabled = await createFile(c, a.id, { name: 'disabled.txt' })
    const future = Date.now() + 3_600_000
    const s1 = await insertShare(c, a.id, active.id, {
      isActive: true,
      expiresAt: future,
      viewCount: 7,
      downloadCount: 3,
    })
    const s2 = await insertShare(c, a.id, expired.id, {
      isActive: true,
      expiresAt: Date.now() - 1000,
      viewCount: 0,
      downloadCount: 0,
    })
    const s3 = await insertShare(c, a.id, disabled.id, {
      isActive: false,
      expiresAt: null,
      viewCount: 1,
      downloadCount: 0,
    })
    const summary = (s: typeof s1) => ({
      id: s.id,
      publicId: s.public_id,
      publicUrl: `http://coffer.test/s/${s.public_id}`,
      isActive: s === s1,
      expiresAt: s.expires_at === null ? null : iso(s.expires_at),
      viewCount: s.view_count,
      downloadCount: s.download_count,
    })
    const got = await call(c.app, 'GET', `/api/v1/files/${active.id}`, { token: a.token })
    assert.deepEqual(got.body, { data: fileJson(active, null, summary(s1)) })
    const list = await call(c.app, 'GET', '/api/v1/files', { token: a.token })
    assert.deepEqual(
      list.body.data,
      newestFirst([
        { ...active, json: fileJson(active, null, summary(s1)) },
        { ...expired, json: fileJson(expired, null, summary(s2)) },
        { ...disabled, json: fileJson(disabled, null, summary(s3)) },
      ]).map((f) => f.json),
    )
  })

  test('list bounds: limit, cursor, query, folderId and unknown parameters', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const files = []
    for (let i = 0; i < 101; i++) files.push(await createFile(c, a.id, { name: `bulk-${i}.txt` }))
    const ordered = newestFirst(files).map((f) => f.id)
    const list = (query: string) => call(c.app, 'GET', `/api/v1/files${query}`, { token: a.token })

    const byDefault = await list('')
    assert.deepEqual(
      byDefault.body.data.map((f: { id: string }) => f.id),
      ordered.slice(0, 50),
    )
    assert.equal(typeof byDefault.body.pagination.nextCursor, 'string')
    assert.ok(byDefault.body.pagination.nextCursor.length <= 128)

    const one = await list('?limit=1')
    assert.deepEqual(
      one.body.data.map((f: { id: string }) => f.id),
      ordered.slice(0, 1),
    )
    const hundred = await list('?limit=100')
    assert.deepEqual(
      hundred.body.data.map((f: { id: string }) => f.id),
      ordered.slice(0, 100),
    )
    const rest = await list(`?limit=100&cursor=${hundred.body.pagination.nextCursor}`)
    assert.deepEqual(rest.body, {
      data: [fileJson(files[0] as StoredFile)],
      pagination: { nextCursor: null },
    })

    for (const [query, pattern] of [
      ['?limit=0', /limit.*at least 1/],
      ['?limit=101', /limit.*at most 100/],
      ['?limit=1.5', /limit.*integer/],
      ['?limit=ten', /limit.*integer/],
      [`?cursor=${chars(129)}`, /cursor.*at most 128/],
      [`?cursor=${chars(128)}`, /cursor.*malformed/],
      ['?cursor=bm90LWEtY3Vyc29y', /cursor.*malformed/],
      ['?query=bulk&cursor=bm90LWEtY3Vyc29y', /cursor.*malformed/],
      ['?query=', /query.*at least 1/],
      [`?query=${chars(201)}`, /query.*at most 200/],
      ['?folderId=', /folderId.*at least 1/],
      [`?folderId=${chars(101)}`, /folderId.*at most 100/],
      ['?sort=name', /sort/],
    ] as const) {
      assert.match(assertError(await list(query), 400, 'invalid_request'), pattern, query)
    }
    assert.deepEqual((await list(`?query=${chars(200)}`)).body, {
      data: [],
      pagination: { nextCursor: null },
    })
    assert.deepEqual((await list('?query=bulk-100')).body.data, [fileJson(files[100] as StoredFile)])
    assertError(await list(`?folderId=${chars(100)}`), 404, 'not_found')
    assertError(await list('?folderId=fld_absent'), 404, 'not_found')
  })

  test('pagination walks neither repeat nor skip while files are added and deleted', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const files = []
    // Several files share a millisecond here, so the id breaks ties.
    for (let i = 0; i < 20; i++) files.push(await createFile(c, a.id, { name: `walk-${i}` }))
    const expected = newestFirst(files).map((f) => f.id)
    assert.deepEqual(await walk(c.app, a.token, '', 3), expected)
    await sleep(2)

    const seen: string[] = []
    const page = async (cursor: string | null) => {
      const res = await call(c.app, 'GET', `/api/v1/files?limit=3${cursor ? `&cursor=${cursor}` : ''}`, {
        token: a.token,
      })
      assert.equal(res.status, 200)
      seen.push(...res.body.data.map((f: { id: string }) => f.id))
      return res.body.pagination.nextCursor as string | null
    }
    const del = async (id: string) =>
      assert.equal((await call(c.app, 'DELETE', `/api/v1/files/${id}`, { token: a.token })).status, 200)

    let cursor = await page(null)
    assert.deepEqual(seen, expected.slice(0, 3))
    // Newer files than the walk began with, a file ahead of the walk, and the file the cursor names.
    const added = [
      await createFile(c, a.id, { name: 'late-1' }),
      await createFile(c, a.id, { name: 'late-2' }),
    ]
    await del(expected[6] as string)
    await del(expected[2] as string)
    cursor = await page(cursor)
    assert.deepEqual(seen.slice(3), expected.slice(3, 6))
    // A file already seen, and the next file of the walk.
    await del(expected[0] as string)
    await del(expected[7] as string)
    while (cursor) cursor = await page(cursor)
    assert.deepEqual(
      seen,
      expected.filter((id) => id !== expected[6] && id !== expected[7]),
    )

    const remaining = expected.filter((id) => ![0, 2, 6, 7].includes(expected.indexOf(id)))
    assert.deepEqual(await walk(c.app, a.token, '', 3), [
      ...newestFirst(added).map((f) => f.id),
      ...remaining,
    ])
  })

  test('search: case-insensitive substring, literal wildcards, short queries, folder and pages', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Reports')
    const names = [
      'Quarterly Report 2024.pdf',
      'report-draft.txt',
      'Résumé Final.docx',
      'Привет мир.txt',
      '100%_done.txt',
      '100 percent.txt',
      'a_b.txt',
      'axb.txt',
      'say "hi".txt',
      'back\\slash.txt',
      '日本語ファイル.txt',
      'ÉCOLE.txt',
      'star*?[x].txt',
    ]
    const byName = new Map<string, StoredFile>()
    for (const name of names) byName.set(name, await createFile(c, a.id, { name }))
    const inFolder = await createFile(c, a.id, { name: 'Annual REPORT.pdf', folderId: folder.id })
    byName.set(inFolder.name, inFolder)
    const other = await createAccount(c.app)
    await createFile(c, other.id, { name: 'Other report.pdf' })

    const search = async (query: string, extra = '') => {
      const res = await call(c.app, 'GET', `/api/v1/files?query=${encodeURIComponent(query)}${extra}`, {
        token: a.token,
      })
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`)
      return (res.body.data as { name: string }[]).map((f) => f.name).sort()
    }
    const cases: [string, string[]][] = [
      ['port', ['Annual REPORT.pdf', 'Quarterly Report 2024.pdf', 'report-draft.txt']],
      ['REPORT', ['Annual REPORT.pdf', 'Quarterly Report 2024.pdf', 'report-draft.txt']],
      ['rterly rep', ['Quarterly Report 2024.pdf']],
      ['%', ['100%_done.txt']],
      ['%_', ['100%_done.txt']],
      ['0%_d', ['100%_done.txt']],
      ['_', ['100%_done.txt', 'a_b.txt']],
      ['a_b', ['a_b.txt']],
      ['"', ['say "hi".txt']],
      ['"hi"', ['say "hi".txt']],
      ['y "h', ['say "hi".txt']],
      ['\\', ['back\\slash.txt']],
      ['k\\s', ['back\\slash.txt']],
      ['*', ['star*?[x].txt']],
      ['?[', ['star*?[x].txt']],
      ['*?[x]', ['star*?[x].txt']],
      ['xB', ['axb.txt']],
      ['X]', ['star*?[x].txt']],
      ['%%', []],
      ['pdf', ['Annual REPORT.pdf', 'Quarterly Report 2024.pdf']],
      ['nothing like it', []],
      // Non-ASCII: one-to-one case pairs fold on both engines, at every query length; accents do not.
      ['é', ['ÉCOLE.txt', 'Résumé Final.docx']],
      ['É', ['ÉCOLE.txt', 'Résumé Final.docx']],
      ['RÉ', ['Résumé Final.docx']],
      ['rÉsUmÉ', ['Résumé Final.docx']],
      ['école', ['ÉCOLE.txt']],
      ['resume', []],
      ['пр', ['Привет мир.txt']],
      ['ПРИВЕТ', ['Привет мир.txt']],
      ['本語', ['日本語ファイル.txt']],
      ['本語フ', ['日本語ファイル.txt']],
    ]
    for (const [query, expected] of cases) assert.deepEqual(await search(query), expected.sort(), query)

    assert.deepEqual(await search('report', `&folderId=${folder.id}`), ['Annual REPORT.pdf'])
    assert.deepEqual(await search('re', `&folderId=${folder.id}`), ['Annual REPORT.pdf'])
    assert.deepEqual(await search('draft', `&folderId=${folder.id}`), [])
    const theirs = await call(c.app, 'GET', '/api/v1/files?query=report', { token: other.token })
    assert.deepEqual(
      theirs.body.data.map((f: { name: string }) => f.name),
      ['Other report.pdf'],
    )

    // Combined with pagination: only matches, newest first, each once.
    const matches = []
    for (let i = 0; i < 7; i++) {
      matches.push(await createFile(c, a.id, { name: `Match-${i}.bin` }))
      await createFile(c, a.id, { name: `miss-${i}.bin` })
    }
    const expected = newestFirst(matches).map((f) => f.id)
    assert.deepEqual(await walk(c.app, a.token, '&query=MATCH', 3), expected)
    assert.deepEqual(await walk(c.app, a.token, '&query=ma', 2), expected)
  })

  test('search plans: walks read the order indexes, the index step only the trigram index', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    // A large account with its files in folders, so that both engines plan as they would in production.
    const folders: string[] = []
    for (let f = 0; f < 20; f++) folders.push((await createFolder(c.app, a, `Folder ${f}`)).id)
    for (const [f, folderId] of folders.entries()) {
      await insertFiles(c, a.id, [f * 1000 + 1, f * 1000 + 1000], ['name-', '.txt'], folderId)
    }
    // The trigram step's pattern for the index, the walk's for a name (the same on PostgreSQL).
    const scope = (pattern: string, folderId?: string): SearchScope => ({
      accountId: a.id,
      pattern,
      folderId,
      after: undefined,
    })
    const [long, short] = c.engine === 'sqlite' ? ['*name-12345*', '*e-*'] : ['%name-12345%', '%e-%']
    // Each plan as the statement's connection makes it: the index step's where only bitmaps may be used.
    const explain = async (name: string, compiled: CompiledQuery, read: Db['readThroughBitmaps']) => {
      const prefix = c.engine === 'sqlite' ? 'explain query plan ' : 'explain '
      const rows = await read<Record<string, string>>(
        CompiledQuery.raw(prefix + compiled.sql, [...compiled.parameters]),
        `explain_${name}`,
      )
      assert.ok(rows)
      return rows.map((r) => r.detail ?? r['QUERY PLAN']).join('\n')
    }
    const plans = {
      long: await explain('long', walkQuery(c.db, scope(long), WALK_ROWS, 51).compile(), c.db.read),
      short: await explain('short', walkQuery(c.db, scope(short), WALK_ROWS, 51).compile(), c.db.read),
      folder: await explain(
        'folder',
        walkQuery(c.db, scope(long, folders[3]), WALK_ROWS, 51).compile(),
        c.db.read,
      ),
      index: await explain(
        'index',
        c.engine === 'postgres'
          ? pgTrigramQuery(c.db, scope(long), 51).compile()
          : ftsQuery(c.db, scope('"name-12345"'), 51).compile(),
        c.db.readThroughBitmaps,
      ),
    }
    const trigramIndex = c.engine === 'sqlite' ? /files_name_fts/ : /files_name_trgm/
    // The walks read their order index alone: it holds the names they test (migration 0006).
    const readsIndexAlone = (plan: string, index: string) => {
      assert.match(
        plan,
        new RegExp(c.engine === 'sqlite' ? `COVERING INDEX ${index}` : `Index Only Scan using ${index}`),
      )
      assert.doesNotMatch(
        plan,
        new RegExp(c.engine === 'sqlite' ? `USING INDEX ${index}` : `Index Scan using ${index}`),
      )
    }
    for (const walk of [plans.long, plans.short]) {
      readsIndexAlone(walk, 'files_account_order')
      assert.doesNotMatch(walk, trigramIndex)
    }
    readsIndexAlone(plans.folder, 'files_folder_order')
    assert.doesNotMatch(plans.folder, trigramIndex)
    assert.match(plans.index, trigramIndex)
    assert.doesNotMatch(plans.index, /files_account_order|Seq Scan/)
    // SQLite reads the few matches by rowid and sorts them, rather than walking the account's files.
    if (c.engine === 'sqlite') assert.match(plans.index, /USING INTEGER PRIMARY KEY/)
    if (c.engine === 'postgres') {
      // A pattern in every name: alone, PostgreSQL would read the table until it had its 5,001 rows; on the
      // index step's connections it cannot.
      const dense = await explain(
        'dense',
        pgTrigramQuery(c.db, scope('%name-%'), 51).compile(),
        c.db.readThroughBitmaps,
      )
      assert.match(dense, trigramIndex)
      assert.doesNotMatch(dense, /files_account_order|Seq Scan/)
      assert.match(
        await explain('dense_alone', pgTrigramQuery(c.db, scope('%name-%'), 51).compile(), c.db.read),
        /Seq Scan/,
      )
      // New names go straight into the index: no pending list for every search to read through.
      const { rows } = await sql<{ reloptions: string[] | null }>`
        select reloptions from pg_class where relname = 'files_name_trgm'`.execute(c.db.kysely)
      assert.deepEqual(rows[0]?.reloptions, ['fastupdate=off'])
    }
  })

  test('readThroughBitmaps: PostgreSQL cancels a statement past its time bound, and it reads as undefined', async (t) => {
    const c = ctx()
    if (c.engine !== 'postgres') return t.skip('SQLite bounds its index step by the cap alone')
    const sleep = (ms: number) => CompiledQuery.raw(`select pg_sleep(${ms / 1000}) as slept`, [])
    assert.equal(await c.db.readThroughBitmaps(sleep(BITMAP_READ_TIMEOUT_MS * 5), 'sleep_long'), undefined)
    // The connection goes on serving; a statement within the bound has its rows.
    assert.deepEqual(await c.db.readThroughBitmaps(sleep(1), 'sleep_short'), [{ slept: '' }])
    // Any other failure is still one.
    await assert.rejects(
      c.db.readThroughBitmaps(CompiledQuery.raw('select 1/0', []), 'divide'),
      /division by zero/,
    )
  })

  test('search in a large account: rare and dense patterns in one call, old matches by bounded pages', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    // More old matches than the trigram step sorts, all behind more recent files than one call walks.
    const archives = INDEX_CAP + 500
    const photos = WALK_ROWS + 500
    await insertFiles(c, a.id, [1, archives], ['Archive-', '.txt'])
    await insertFiles(c, a.id, [archives + 1, archives + photos], ['photo-', '.jpg'])
    const idOf = (n: number) => `fil_${a.id}_${n}`
    const page = async (query: string, limit: number, cursor?: string | null) => {
      const url = `/api/v1/files?query=${encodeURIComponent(query)}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`
      const res = await call(c.app, 'GET', url, { token: a.token })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return {
        ids: (res.body.data as { id: string }[]).map((f) => f.id),
        next: res.body.pagination.nextCursor as string | null,
      }
    }

    // Dense: the first rows walked fill the page.
    const dense = await page('PHOTO', 50)
    assert.deepEqual(
      dense.ids,
      Array.from({ length: 50 }, (_, i) => idOf(archives + photos - i)),
    )
    assert.notEqual(dense.next, null)
    // Rare, and old: found by the trigram index, complete in one call.
    assert.deepEqual(await page('archive-42.', 50), { ids: [idOf(42)], next: null })
    assert.deepEqual(await page('chive-420', 50), {
      ids: [4209, 4208, 4207, 4206, 4205, 4204, 4203, 4202, 4201, 4200, 420].map(idOf),
      next: null,
    })

    // Common and old: the first call walks its share of recent files, finds none, and says where to go on.
    const first = await page('archive', 100)
    assert.deepEqual(first.ids, [])
    assert.notEqual(first.next, null)
    const found: string[] = [...first.ids]
    let cursor = first.next
    let calls = 1
    while (cursor) {
      const next = await page('archive', 100, cursor)
      assert.ok(next.ids.length <= 100)
      found.push(...next.ids)
      cursor = next.next
      calls++
    }
    assert.deepEqual(
      found,
      Array.from({ length: archives }, (_, i) => idOf(archives - i)),
    )
    assert.equal(calls, Math.ceil(archives / 100) + 1)

    // A query too short for the trigram index that matches nothing: WALK_ROWS files per call.
    const none = [await page('zq', 50)]
    while (none.at(-1)?.next) none.push(await page('zq', 50, none.at(-1)?.next))
    assert.deepEqual(
      none.map((p) => p.ids.length),
      Array(Math.ceil((archives + photos) / WALK_ROWS)).fill(0),
    )
  })

  test("search when other accounts' names crowd the trigram index: only the account's own matches", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    // More matches in another account than the trigram step reads, so this account's search walks instead.
    await insertFiles(c, b.id, [1, INDEX_CAP + 1], ['shared-', '.txt'])
    await insertFiles(c, a.id, [1, 30], ['shared-', '.txt'])
    await insertFiles(c, a.id, [31, 60], ['other-', '.txt'])
    const idOf = (n: number) => `fil_${a.id}_${n}`
    const search = async (query: string, cursor?: string) => {
      const url = `/api/v1/files?query=${query}&limit=10${cursor ? `&cursor=${cursor}` : ''}`
      const res = await call(c.app, 'GET', url, { token: a.token })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return res.body as { data: { id: string }[]; pagination: { nextCursor: string | null } }
    }
    // The trigram step's answers, in order: over the cap, within it, or none (PostgreSQL's time bound).
    const readThroughBitmaps = c.db.readThroughBitmaps
    const answers: ('over cap' | 'within' | 'timed out')[] = []
    let timeOutNext = false
    c.db.readThroughBitmaps = async (...args) => {
      const rows = timeOutNext ? undefined : await readThroughBitmaps(...args)
      timeOutNext = false
      const found = (rows?.[0] as { found?: number } | undefined)?.found
      answers.push(rows === undefined ? 'timed out' : Number(found) > INDEX_CAP ? 'over cap' : 'within')
      return rows
    }
    // The step is asked until it has said "over the cap" once (a busy machine may time it out before).
    const askedSinceOverCap = () => answers.length - 1 - answers.indexOf('over cap')
    try {
      const found: string[] = []
      let page = await search('shared-')
      for (;;) {
        found.push(...page.data.map((f) => f.id))
        if (!page.pagination.nextCursor) break
        page = await search('shared-', page.pagination.nextCursor)
      }
      assert.deepEqual(
        found,
        Array.from({ length: 30 }, (_, i) => idOf(30 - i)),
      )
      // Too many matches for the index: the next pages, and the next search for it, walk at once.
      assert.ok(answers.includes('over cap'), answers.join())
      assert.equal(askedSinceOverCap(), 0)
      assert.deepEqual(
        (await search('shared-')).data.map((f) => f.id),
        found.slice(0, 10),
      )
      assert.equal(askedSinceOverCap(), 0)
      // A rare pattern that both accounts' names share: the trigram step, and this account's match alone.
      const rare = await search('shared-7.')
      assert.deepEqual(rare, { data: [rare.data[0]], pagination: { nextCursor: null } })
      assert.equal(rare.data[0]?.id, idOf(7))
      assert.ok(askedSinceOverCap() >= 1)
      // A step that timed out is asked again next time: a busy moment says nothing of the pattern.
      timeOutNext = true
      const walked = await search('shared-8.')
      assert.deepEqual(walked, { data: [walked.data[0]], pagination: { nextCursor: null } })
      assert.equal(walked.data[0]?.id, idOf(8))
      const asked = answers.length
      await search('shared-8.')
      assert.equal(answers.length, asked + 1)
    } finally {
      c.db.readThroughBitmaps = readThroughBitmaps
    }
  })

  test('PATCH renames and moves a file, keeping folder counts and the search index exact', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const one = await createFolder(c.app, a, 'One')
    const two = await createFolder(c.app, a, 'Two')
    const file = await createFile(c, a.id, { name: 'before-rename.txt' })
    const patch = (body: unknown) =>
      call(c.app, 'PATCH', `/api/v1/files/${file.id}`, { token: a.token, body })

    const renamed = await patch({ name: 'after-rename.txt' })
    assert.equal(renamed.status, 200)
    assert.deepEqual(renamed.body, { data: fileJson({ ...file, name: 'after-rename.txt' }) })
    const found = await call(c.app, 'GET', '/api/v1/files?query=after-ren', { token: a.token })
    assert.deepEqual(
      found.body.data.map((f: { id: string }) => f.id),
      [file.id],
    )
    const stale = await call(c.app, 'GET', '/api/v1/files?query=before-ren', { token: a.token })
    assert.deepEqual(stale.body.data, [])

    const moved = await patch({ folderId: one.id })
    assert.deepEqual(moved.body, {
      data: fileJson({ ...file, name: 'after-rename.txt' }, { ...one, fileCount: 1 }),
    })
    assert.equal(await folderCounts(c.app, a, one.id), 1)

    const both = await patch({ name: 'final.txt', folderId: two.id })
    assert.deepEqual(both.body, { data: fileJson({ ...file, name: 'final.txt' }, { ...two, fileCount: 1 }) })
    assert.equal(await folderCounts(c.app, a, one.id), 0)
    assert.equal(await folderCounts(c.app, a, two.id), 1)

    const same = await patch({ folderId: two.id })
    assert.deepEqual(same.body, both.body)
    assert.equal(await folderCounts(c.app, a, two.id), 1)

    const toRoot = await patch({ folderId: null })
    assert.deepEqual(toRoot.body, { data: fileJson({ ...file, name: 'final.txt' }) })
    assert.equal(await folderCounts(c.app, a, two.id), 0)
    const atRootAgain = await patch({ folderId: null })
    assert.deepEqual(atRootAgain.body, toRoot.body)

    const long = chars(255, 'n')
    assert.equal((await patch({ name: long })).body.data.name, long)
    assert.equal((await patch({ name: 'x' })).body.data.name, 'x')
  })

  test('PATCH bounds and refusals leave the file and the counts unchanged', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Kept')
    const theirs = await createFolder(c.app, b, 'Theirs')
    const file = await createFile(c, a.id, { name: 'stay.txt', folderId: folder.id })
    const patch = (body: unknown, id = file.id) =>
      call(c.app, 'PATCH', `/api/v1/files/${id}`, { token: a.token, body })

    for (const [body, pattern] of [
      [{}, /at least one field/],
      [{ name: '' }, /name.*at least 1/],
      [{ name: chars(256) }, /name.*at most 255/],
      [{ name: '   ' }, /name.*blank/],
      [{ name: 5 }, /name.*string/],
      [{ folderId: 5 }, /folderId.*string/],
      [{ folderId: '' }, /folderId.*at least 1/],
      [{ folderId: chars(101) }, /folderId.*at most 100/],
      [{ name: 'ok', size: 3 }, /Unknown field "size"/],
    ] as const) {
      assert.match(assertError(await patch(body), 400, 'invalid_request'), pattern, JSON.stringify(body))
    }
    assertError(
      await call(c.app, 'PATCH', `/api/v1/files/${file.id}`, {
        token: a.token,
        rawBody: '{"name":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    )
    assert.match(
      assertError(await patch({ folderId: theirs.id }), 404, 'not_found'),
      new RegExp(`Folder ${theirs.id}`),
    )
    assertError(await patch({ folderId: chars(100) }), 404, 'not_found')
    assertError(await patch({ name: 'x' }, 'fil_absent'), 404, 'not_found')
    assertError(await patch({ name: 'x' }, chars(129)), 400, 'invalid_request')

    const after = await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })
    assert.deepEqual(after.body, { data: fileJson(file, { ...folder, fileCount: 1 }) })
    assert.equal(await folderCounts(c.app, b, theirs.id), 0)
  })

  test('DELETE /files/{fileId} removes the row, its blob, its share and its folder count', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Doomed')
    const file = await createFile(c, a.id, { folderId: folder.id })
    const kept = await createFile(c, a.id, { folderId: folder.id })
    const share = await insertShare(c, a.id, file.id, {
      isActive: true,
      expiresAt: null,
      viewCount: 0,
      downloadCount: 0,
    })
    assert.deepEqual(await c.blobs.stat(file.blobKey), { size: file.content.length })

    const deleted = await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token })
    assert.equal(deleted.status, 200)
    assert.deepEqual(deleted.body, { data: { id: file.id } })
    assert.equal(await c.blobs.stat(file.blobKey), undefined)
    const shares = await c.db.kysely.selectFrom('shares').select('id').where('id', '=', share.id).execute()
    assert.deepEqual(shares, [])
    assert.equal(await folderCounts(c.app, a, folder.id), 1)
    assertError(await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token }), 404, 'not_found')
    assertError(await call(c.app, 'DELETE', `/api/v1/files/${file.id}`, { token: a.token }), 404, 'not_found')
    assertError(
      await call(c.app, 'DELETE', `/api/v1/files/${chars(129)}`, { token: a.token }),
      400,
      'invalid_request',
    )
    assert.deepEqual(await c.blobs.stat(kept.blobKey), { size: kept.content.length })
    const list = await call(c.app, 'GET', '/api/v1/files', { token: a.token })
    assert.deepEqual(list.body.data, [fileJson(kept, { ...folder, fileCount: 1 })])
  })

  test('DELETE /files deletes what it can, once, and lists exactly that', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const one = await createFolder(c.app, a, 'One')
    const two = await createFolder(c.app, a, 'Two')
    const f1 = await createFile(c, a.id, { folderId: one.id })
    const f2 = await createFile(c, a.id, { folderId: one.id })
    const f3 = await createFile(c, a.id, { folderId: two.id })
    const f4 = await createFile(c, a.id)
    const keep = await createFile(c, a.id, { folderId: one.id })
    const foreign = await createFile(c, b.id)
    await insertShare(c, a.id, f3.id, { isActive: true, expiresAt: null, viewCount: 0, downloadCount: 0 })

    const res = await call(c.app, 'DELETE', '/api/v1/files', {
      token: a.token,
      body: { fileIds: [f3.id, 'fil_absent', f1.id, foreign.id, f3.id, f4.id, f2.id] },
    })
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { data: { deletedIds: [f3.id, f1.id, f4.id, f2.id] } })
    for (const f of [f1, f2, f3, f4]) assert.equal(await c.blobs.stat(f.blobKey), undefined, f.id)
    for (const f of [keep, foreign])
      assert.deepEqual(await c.blobs.stat(f.blobKey), { size: f.content.length })
    assert.equal(await folderCounts(c.app, a, one.id), 1)
    assert.equal(await folderCounts(c.app, a, two.id), 0)
    assert.equal((await call(c.app, 'GET', `/api/v1/files/${foreign.id}`, { token: b.token })).status, 200)
    const shares = await c.db.kysely.selectFrom('shares').select('id').where('file_id', '=', f3.id).execute()
    assert.deepEqual(shares, [])
    const list = await call(c.app, 'GET', '/api/v1/files', { token: a.token })
    assert.deepEqual(list.body.data, [fileJson(keep, { ...one, fileCount: 1 })])

    const again = await call(c.app, 'DELETE', '/api/v1/files', { token: a.token, body: { fileIds: [f1.id] } })
    assert.deepEqual(again.body, { data: { deletedIds: [] } })
  })

  test('concurrent moves and overlapping deletes keep folder counts exact', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const one = await createFolder(c.app, a, 'One')
    const two = await createFolder(c.app, a, 'Two')
    const file = await createFile(c, a.id, { folderId: one.id })
    const targets = [two.id, null, one.id, two.id, one.id, null, two.id, one.id, two.id, null, one.id, two.id]
    const moves = await Promise.all(
      targets.map((folderId) =>
        call(c.app, 'PATCH', `/api/v1/files/${file.id}`, { token: a.token, body: { folderId } }),
      ),
    )
    assert.deepEqual(
      moves.map((m) => m.status),
      targets.map(() => 200),
    )
    const where = (await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })).body.data
      .folderId
    assert.equal(await folderCounts(c.app, a, one.id), where === one.id ? 1 : 0)
    assert.equal(await folderCounts(c.app, a, two.id), where === two.id ? 1 : 0)

    // Files moving crosswise between the same two folders must not deadlock on the counters.
    const x = await createFile(c, a.id, { folderId: one.id })
    const y = await createFile(c, a.id, { folderId: two.id })
    const swaps = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        call(c.app, 'PATCH', `/api/v1/files/${i % 2 ? x.id : y.id}`, {
          token: a.token,
          body: { folderId: (i >> 1) % 2 ? one.id : two.id },
        }),
      ),
    )
    assert.deepEqual(
      swaps.map((m) => m.status),
      swaps.map(() => 200),
    )
    const placed = await Promise.all(
      [x, y].map(
        async (f) => (await call(c.app, 'GET', `/api/v1/files/${f.id}`, { token: a.token })).body.data,
      ),
    )
    const count = (folderId: string) =>
      placed.filter((f) => f.folderId === folderId).length + (where === folderId ? 1 : 0)
    assert.equal(await folderCounts(c.app, a, one.id), count(one.id))
    assert.equal(await folderCounts(c.app, a, two.id), count(two.id))
    await call(c.app, 'DELETE', '/api/v1/files', { token: a.token, body: { fileIds: [x.id, y.id] } })

    const batch = []
    for (let i = 0; i < 12; i++) batch.push(await createFile(c, a.id, { folderId: i % 2 ? one.id : two.id }))
    const ids = batch.map((f) => f.id)
    const deletes = await Promise.all(
      [ids.slice(0, 8), ids.slice(4), ids.slice(2, 10), [...ids].reverse()].map((fileIds) =>
        call(c.app, 'DELETE', '/api/v1/files', { token: a.token, body: { fileIds } }),
      ),
    )
    const deleted = deletes.flatMap((d) => d.body.data.deletedIds as string[])
    assert.deepEqual([...deleted].sort(), [...ids].sort(), 'each file is deleted by exactly one request')
    assert.equal(await folderCounts(c.app, a, one.id), where === one.id ? 1 : 0)
    assert.equal(await folderCounts(c.app, a, two.id), where === two.id ? 1 : 0)
  })

  test('DELETE /files bounds: 1..100 ids of 1..128 characters, no other fields', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const bulk = (body: unknown) => call(c.app, 'DELETE', '/api/v1/files', { token: a.token, body })
    const file = await createFile(c, a.id)
    const hundred = Array.from({ length: 99 }, (_, i) => `fil_none_${i}`)
    assert.deepEqual((await bulk({ fileIds: [...hundred, file.id] })).body, {
      data: { deletedIds: [file.id] },
    })
    assert.deepEqual((await bulk({ fileIds: [chars(128)] })).body, { data: { deletedIds: [] } })
    assert.deepEqual((await bulk({ fileIds: ['x'] })).body, { data: { deletedIds: [] } })
    for (const [body, pattern] of [
      [{ fileIds: [] }, /fileIds.*at least 1 item/],
      [{ fileIds: [...hundred, 'a', 'b'] }, /fileIds.*at most 100 items/],
      [{ fileIds: [''] }, /fileIds\[0\].*at least 1/],
      [{ fileIds: [chars(129)] }, /fileIds\[0\].*at most 128/],
      [{ fileIds: [5] }, /fileIds\[0\].*string/],
      [{ fileIds: 'fil_x' }, /fileIds.*array/],
      [{}, /missing the required field "fileIds"/],
      [{ fileIds: ['x'], force: true }, /Unknown field "force"/],
    ] as const) {
      assert.match(assertError(await bulk(body), 400, 'invalid_request'), pattern, JSON.stringify(body))
    }
  })

  test('another account sees 404 for every file operation and never its files', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Private')
    const file = await createFile(c, a.id, { name: 'secret-plans.txt', folderId: folder.id })
    const own = await createFile(c, b.id, { name: 'mine.txt' })
    const bFolder = await createFolder(c.app, b, 'B folder')
    const as = (method: string, url: string, body?: unknown) =>
      call(c.app, method, url, { token: b.token, ...(body === undefined ? {} : { body }) })

    assertError(await as('GET', `/api/v1/files/${file.id}`), 404, 'not_found')
    assertError(await as('PATCH', `/api/v1/files/${file.id}`, { name: 'stolen' }), 404, 'not_found')
    assertError(await as('PATCH', `/api/v1/files/${file.id}`, { folderId: bFolder.id }), 404, 'not_found')
    assertError(await as('DELETE', `/api/v1/files/${file.id}`), 404, 'not_found')
    assertError(await as('GET', `/api/v1/files/${file.id}/download`), 404, 'not_found')
    const head = await c.app.inject({
      method: 'HEAD',
      url: `/api/v1/files/${file.id}/download`,
      headers: { authorization: `Bearer ${b.token}` },
    })
    assert.equal(head.statusCode, 404)
    assert.deepEqual((await as('DELETE', '/api/v1/files', { fileIds: [file.id] })).body, {
      data: { deletedIds: [] },
    })
    assertError(await as('GET', `/api/v1/files?folderId=${folder.id}`), 404, 'not_found')
    assertError(await as('GET', `/api/v1/files?folderId=${folder.id}&query=secret`), 404, 'not_found')
    assert.deepEqual((await as('GET', '/api/v1/files')).body, {
      data: [fileJson(own)],
      pagination: { nextCursor: null },
    })
    assert.deepEqual((await as('GET', '/api/v1/files?query=secret')).body.data, [])
    assert.deepEqual((await as('GET', '/api/v1/files?query=se')).body.data, [])
    // Nor may the owner move a file into another account's folder.
    assertError(
      await call(c.app, 'PATCH', `/api/v1/files/${file.id}`, {
        token: a.token,
        body: { folderId: bFolder.id },
      }),
      404,
      'not_found',
    )
    assertError(
      await call(c.app, 'PATCH', `/api/v1/files/${own.id}`, {
        token: b.token,
        body: { folderId: folder.id },
      }),
      404,
      'not_found',
    )

    const still = await call(c.app, 'GET', `/api/v1/files/${file.id}`, { token: a.token })
    assert.deepEqual(still.body, { data: fileJson(file, { ...folder, fileCount: 1 }) })
    assert.deepEqual(await c.blobs.stat(file.blobKey), { size: file.content.length })
    assert.equal(await folderCounts(c.app, b, bFolder.id), 0)
  })

  test('scopes: files:read reads, files:write writes, anything else is 403; bad credentials are 401', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const file = await createFile(c, a.id)
    const spare = await createFile(c, a.id)
    const reads: [string, string][] = [
      ['GET', '/api/v1/files'],
      ['GET', `/api/v1/files/${file.id}`],
      ['GET', `/api/v1/files/${file.id}/download`],
    ]
    const writes: [string, string, unknown][] = [
      ['PATCH', `/api/v1/files/${file.id}`, { name: 'renamed.txt' }],
      ['DELETE', '/api/v1/files', { fileIds: ['fil_absent'] }],
      ['DELETE', `/api/v1/files/${spare.id}`, undefined],
    ]
    const readKey = await a.key(['files:read'])
    const writeKey = await a.key(['files:write'])
    const others = await a.key([
      'folders:read',
      'folders:write',
      'shares:read',
      'shares:write',
      'requests:read',
    ] as Scope[])
    for (const [method, url] of reads) {
      assert.equal((await call(c.app, method, url, { token: readKey })).status, 200, `${method} ${url}`)
      for (const token of [writeKey, others]) {
        assert.match(
          assertError(await call(c.app, method, url, { token }), 403, 'insufficient_scope'),
          /files:read/,
        )
      }
    }
    for (const [method, url, body] of writes) {
      for (const token of [readKey, others]) {
        assert.match(
          assertError(await call(c.app, method, url, { token, body }), 403, 'insufficient_scope'),
          /files:write/,
        )
      }
      assert.equal(
        (await call(c.app, method, url, { token: writeKey, body })).status,
        200,
        `${method} ${url}`,
      )
    }

    const revoked = await c.app.services.apiKeys.create({
      accountId: a.id,
      name: 'old',
      scopes: ['files:read'],
    })
    await c.app.services.apiKeys.revoke(revoked.key.id)
    for (const [method, url, body] of [...reads.map(([m, u]) => [m, u, undefined] as const), ...writes]) {
      const credentials: (Record<string, string> | undefined)[] = [
        undefined,
        { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
        { authorization: 'Bearer' },
        { authorization: `Bearer coffer_${chars(40, 'z')}` },
        { authorization: `Bearer ${revoked.secret}` },
      ]
      for (const headers of credentials) {
        const res = await call(c.app, method, url, { body, ...(headers ? { headers } : {}) })
        assertError(res, 401, 'unauthorized')
        assert.match(String(res.headers['www-authenticate']), /^Bearer/)
      }
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
