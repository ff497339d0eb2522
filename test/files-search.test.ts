// Searching file names (GET /files?query=): what a query matches on both engines, the plans that keep a
// search fast, and how each call stays bounded in a large account or when other accounts' names crowd the
// trigram index. Both engines must give the same answers, so every test runs on each.
// On PostgreSQL the trigram step gives way after BITMAP_READ_TIMEOUT_MS (20 ms), and a busy test machine
// can take that long for any statement; the answers would stay right, but the tests could no longer tell
// which step gave them. So this suite gives the step a second: what a timeout does is tested here by
// making one happen, and the bound itself in files-read-path.test.ts.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CompiledQuery, sql } from 'kysely'
import type { Db } from '../src/db/database.ts'
import type { StoredFile } from '../src/files/files.repository.ts'
import { selectivePart, trigramsOf } from '../src/files/name-sample.ts'
import {
  ftsQuery,
  INDEX_CAP,
  pgTrigramQuery,
  type SearchScope,
  WALK_ROWS,
  walkQuery,
} from '../src/files/name-search.ts'
import { createFolder, insertFiles, newestFirst, walk } from './support/files-helpers.ts'
import { call, createAccount, createFile, describeEachEngine } from './support/harness.ts'

describeEachEngine(
  'files search',
  (ctx) => {
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
            : ftsQuery(c.db, { ...scope(long), lookup: '"name-12345"' }, 51).compile(),
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
        // Neither JIT nor parallel workers on the index step's connections: each cost more than the search.
        const settings = await c.db.readThroughBitmaps<{ jit: string; workers: string }>(
          CompiledQuery.raw(
            "select current_setting('jit') as jit, current_setting('max_parallel_workers_per_gather') as workers",
          ),
          'bitmap_settings',
        )
        assert.deepEqual(settings, [{ jit: 'off', workers: '0' }])
        // New names go straight into the index: no pending list for every search to read through.
        const { rows } = await sql<{ reloptions: string[] | null }>`
        select reloptions from pg_class where relname = 'files_name_trgm'`.execute(c.db.kysely)
        assert.deepEqual(rows[0]?.reloptions, ['fastupdate=off'])
      }
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
      // How often the step was asked after it said "over the cap".
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
  },
  { database: { bitmapReadTimeoutMs: 1_000 } },
)

test('the uncommon part of a query: its longest run of uncommon trigrams, else the whole query', () => {
  assert.deepEqual(trigramsOf('AbÉd'), ['abé', 'béd'])
  const shares: Record<string, number> = {
    rep: 1,
    epo: 1,
    por: 1,
    ort: 1,
    'rt-': 0.9,
    't-0': 0.5,
    '-05': 0.1,
  }
  const share = (trigram: string) => shares[trigram] ?? 0.01
  // Common trigrams left out, on either side: those in more than 5 % of the names.
  assert.equal(selectivePart('report-0500001', share), '0500001')
  assert.equal(
    selectivePart('report-0500001', (trigram) => (trigram === '-05' ? 0.05 : share(trigram))),
    '-0500001',
  )
  assert.equal(selectivePart('x0500001-report', share), 'x0500001-re')
  // Of two runs, the longer; of two as long, the one with the rarer trigram.
  assert.equal(selectivePart('abcd-report-abcdef', share), 't-abcdef')
  const common = (trigram: string) => (trigram.includes('q') ? 1 : trigram === 'def' ? 0.001 : 0.01)
  assert.equal(selectivePart('abcqdef', common), 'def')
  assert.equal(selectivePart('defqabc', common), 'def')
  // Nothing to leave out, nothing uncommon, or too short for a trigram: the whole query.
  assert.equal(selectivePart('0500001', share), '0500001')
  assert.equal(selectivePart('report', share), 'report')
  assert.equal(selectivePart('re', share), 're')
})
