// Searching file names (GET /files?query=): what a query matches on both engines, the statements that keep a
// search fast, and what a search answers in a large account, across the name index's blocks
// (src/resources/files/search/name-index.repository.ts): full pages but the last, newest first, whatever changed since the blocks were
// written. Both engines must give the same answers, so every test runs on each.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CompiledQuery } from 'kysely'
import { openDatabase } from '../src/platform/db/open.ts'
import type { StoredFile } from '../src/resources/files/files.repository.ts'
import {
  addSlot,
  BLOCK_SIZE,
  CHUNK_SIZE,
  decodeSlots,
  emptySlots,
  encodeSlots,
  foldName,
  gramsOf,
  queryGrams,
  type SlotSet,
  slotsAscending,
  slotsDescending,
  slotsInAll,
} from '../src/resources/files/search/name-grams.ts'
import { NameIndex } from '../src/resources/files/search/name-index.repository.ts'
import { createFolder, insertFiles, newestFirst, walk } from './support/files-helpers.ts'
import { call, createAccount, createFile, describeEachEngine, type TestContext } from './support/harness.ts'

/** One page of a search, as a client reads it. */
async function searchPage(
  c: TestContext,
  token: string,
  query: string,
  options: { limit: number; cursor?: string | null; folderId?: string },
) {
  const url =
    `/api/v1/files?query=${encodeURIComponent(query)}&limit=${options.limit}` +
    (options.cursor ? `&cursor=${options.cursor}` : '') +
    (options.folderId ? `&folderId=${options.folderId}` : '')
  const res = await call(c.app, 'GET', url, { token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return {
    ids: (res.body.data as { id: string }[]).map((f) => f.id),
    next: res.body.pagination.nextCursor as string | null,
  }
}

/**
 * Every page of a search: their ids in order, and how many pages it took. Every page but the last must be
 * full, and the last must not be empty unless it is the only one.
 */
async function searchAll(c: TestContext, token: string, query: string, limit: number, folderId?: string) {
  const ids: string[] = []
  let cursor: string | null | undefined
  let pages = 0
  do {
    const page = await searchPage(c, token, query, { limit, cursor, folderId })
    pages++
    if (page.next) assert.equal(page.ids.length, limit, `${query}: page ${pages} is short, and not the last`)
    else if (pages > 1) assert.ok(page.ids.length > 0, `${query}: the last page is empty`)
    ids.push(...page.ids)
    cursor = page.next
  } while (cursor)
  return { ids, pages }
}

describeEachEngine('files search', (ctx) => {
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
      // Non-ASCII: case folds as Unicode folds it (ß is ss), at every query length; accents do not, but an accent
      // written apart from its letter is the same as one written with it.
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

  test('search statements read the order of numbers and the index, never a whole table', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folders: string[] = []
    for (let f = 0; f < 4; f++) folders.push((await createFolder(c.app, a, `Folder ${f}`)).id)
    for (const [f, folderId] of folders.entries()) {
      await insertFiles(c, a.id, [f * 4096 + 1, (f + 1) * 4096], ['name-', '.txt'], folderId)
    }
    // And files after the index's chunks, read one by one.
    await insertFiles(c, a.id, [4 * 4096 + 1, 4 * 4096 + 100], ['name-', '.txt'], folders[2])
    // Every statement the searches run, explained with its values.
    const read = c.db.read
    const statements = new Map<string, CompiledQuery>()
    c.db.read = async (query, name) => {
      if (name?.startsWith('search_')) statements.set(name, query)
      return read(query, name)
    }
    const searches = async () => {
      await searchAll(c, a.token, 'name-12345', 100)
      await searchAll(c, a.token, 'NAME-1', 100)
      await searchPage(c, a.token, 'e-', { limit: 100, folderId: folders[2] })
      const first = await searchPage(c, a.token, 'name-', { limit: 10 })
      await searchPage(c, a.token, 'name-', { limit: 10, cursor: first.next })
    }
    try {
      await searches()
      // More files after the index than a search keeps in memory (the job is behind): it reads those that may
      // match, in the folder or not.
      await insertFiles(c, a.id, [4 * 4096 + 101, 4 * 4096 + 2200], ['name-', '.txt'], folders[2], false)
      await searches()
    } finally {
      c.db.read = read
    }
    assert.deepEqual([...statements.keys()].sort(), [
      'search_account',
      'search_account_after',
      'search_blocks',
      'search_candidates',
      'search_newest',
      'search_unindexed_all',
      'search_unindexed_folder',
    ])
    for (const [name, query] of statements) {
      const prefix = c.engine === 'sqlite' ? 'explain query plan ' : 'explain '
      const rows = await read<Record<string, string>>(
        CompiledQuery.raw(prefix + query.sql, [...query.parameters]),
      )
      const plan = rows.map((r) => r.detail ?? r['QUERY PLAN']).join('\n')
      assert.doesNotMatch(
        plan,
        c.engine === 'sqlite' ? /SCAN (files|name_grams)\b/ : /Seq Scan on (files|name_grams)/,
        `${name}:\n${plan}`,
      )
      // The files after the blocks, and the candidates, by their numbers: not the whole folder's files by the
      // folder's order index, which SQLite chose where it had no statistics for the folder index.
      if (/unindexed|candidates|newest/.test(name))
        assert.match(plan, /files_account_seq/, `${name}:\n${plan}`)
    }
  })

  test('search in a large account: full pages but the last, newest first, across blocks', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Reports')
    // Two blocks, the second partly indexed: old archives, photos after them, then a few archives in a folder.
    const archives = 4796
    const photos = BLOCK_SIZE
    await insertFiles(c, a.id, [1, archives], ['Archive-', '.txt'])
    await insertFiles(c, a.id, [archives + 1, archives + photos], ['photo-', '.jpg'])
    await insertFiles(
      c,
      a.id,
      [archives + photos + 1, archives + photos + 300],
      ['Archive-', '.txt'],
      folder.id,
    )
    const idOf = (n: number) => `fil_${a.id}_${n}`
    const newest = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => idOf(to - i))

    // Dense and new: one page, another to come.
    const dense = await searchPage(c, a.token, 'PHOTO', { limit: 50 })
    assert.deepEqual(dense.ids, newest(archives + photos - 49, archives + photos))
    assert.notEqual(dense.next, null)
    // Rare and old: complete in one call.
    assert.deepEqual(await searchAll(c, a.token, 'archive-42.', 50), { ids: [idOf(42)], pages: 1 })
    assert.deepEqual(await searchAll(c, a.token, 'chive-420', 50), {
      ids: [4209, 4208, 4207, 4206, 4205, 4204, 4203, 4202, 4201, 4200, 420].map(idOf),
      pages: 1,
    })
    // Common and old, behind a block of photos: full pages from the first.
    const all = await searchAll(c, a.token, 'archive', 100)
    assert.deepEqual(all.ids, [
      ...newest(archives + photos + 1, archives + photos + 300),
      ...newest(1, archives),
    ])
    assert.equal(all.pages, Math.ceil((archives + 300) / 100))
    // In a folder, and one or two characters.
    assert.deepEqual(
      (await searchAll(c, a.token, 'e-', 100, folder.id)).ids,
      newest(archives + photos + 1, archives + photos + 300),
    )
    assert.deepEqual((await searchAll(c, a.token, 'o', 100, folder.id)).ids.length, 0)
    // One character, in the old names only (.txt), behind the block of photos.
    assert.deepEqual((await searchAll(c, a.token, 'x', 100)).ids, all.ids)
    // No match: one empty page, whatever the length.
    for (const query of ['z', 'zq', 'archive-0', 'photo-1.txt']) {
      assert.deepEqual(await searchAll(c, a.token, query, 100), { ids: [], pages: 1 }, query)
    }

    // Changes to files the index holds: a rename is found by its new name only, a move in its new
    // folder only, a deleted file no more.
    const renamed = idOf(10)
    const rename = await call(c.app, 'PATCH', `/api/v1/files/${renamed}`, {
      token: a.token,
      body: { name: 'Straße-Plan.txt', folderId: folder.id },
    })
    assert.equal(rename.status, 200, JSON.stringify(rename.body))
    assert.deepEqual((await searchAll(c, a.token, 'STRASSE', 10)).ids, [renamed])
    assert.deepEqual((await searchAll(c, a.token, 'ße-p', 10, folder.id)).ids, [renamed])
    assert.deepEqual((await searchAll(c, a.token, 'archive-10.', 10)).ids, [])
    const gone = await call(c.app, 'DELETE', `/api/v1/files/${idOf(420)}`, { token: a.token })
    assert.equal(gone.status, 200)
    assert.deepEqual(
      (await searchAll(c, a.token, 'chive-420', 50)).ids,
      [4209, 4208, 4207, 4206, 4205, 4204, 4203, 4202, 4201, 4200].map(idOf),
    )

    // Cursors stay put while files come: a new match is on the next search's first page, not on the pages
    // of the search under way; new files fill chunks, which are written, and are found in them.
    const first = await searchPage(c, a.token, 'archive', { limit: 100 })
    for (let i = 0; i < 4000; i += 500) {
      await insertFiles(c, a.id, [10_000_000 + i, 10_000_000 + i + 499], ['late-archive-', '.txt'])
    }
    const made = await createFile(c, a.id, { name: 'Archive-newest.txt' })
    const second = await searchPage(c, a.token, 'archive', { limit: 100, cursor: first.next })
    assert.deepEqual(second.ids, all.ids.slice(100, 200))
    assert.equal((await searchPage(c, a.token, 'archive', { limit: 1 })).ids[0], made.id)
    assert.equal((await searchAll(c, a.token, 'late-archive-', 100)).ids.length, 8 * 500)
  })

  test('rows of the index kept in memory: never an answer of before a rename, a move or a chunk written', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Kept')
    await insertFiles(c, a.id, [1, CHUNK_SIZE + 10], ['doc-', '.txt'])
    const idOf = (n: number) => `fil_${a.id}_${n}`
    const newestOf = (numbers: number[]) => numbers.sort((x, y) => y - x).map(idOf)
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
    // Read from the block's rows, which the search keeps.
    assert.deepEqual((await searchAll(c, a.token, 'doc-11.', 10)).ids, [idOf(11)])
    assert.deepEqual((await searchAll(c, a.token, 'doc-12.', 10, folder.id)).ids, [])
    // A rename adds the file to rows kept: the next search finds it. So does a move to the folder.
    const renamed = await call(c.app, 'PATCH', `/api/v1/files/${idOf(500)}`, {
      token: a.token,
      body: { name: 'doc-11.copy.txt' },
    })
    assert.equal(renamed.status, 200)
    assert.deepEqual((await searchAll(c, a.token, 'doc-11.', 10)).ids, newestOf([11, 500]))
    const moved = await call(c.app, 'PATCH', `/api/v1/files/${idOf(12)}`, {
      token: a.token,
      body: { folderId: folder.id },
    })
    assert.equal(moved.status, 200)
    assert.deepEqual((await searchAll(c, a.token, 'doc-12.', 10, folder.id)).ids, [idOf(12)])

    // A chunk written by the job of another process (no file changes, so no notification on PostgreSQL) moves
    // files from the search's own read of the newest files into the block's rows, which the search kept from
    // before: it reads them again.
    await insertFiles(c, a.id, [CHUNK_SIZE + 11, 2 * CHUNK_SIZE + 5], ['doc-', '.txt'], null, false)
    const expected = newestOf([20, ...range(200, 209), ...range(2000, 2 * CHUNK_SIZE + 5)])
    assert.deepEqual((await searchAll(c, a.token, 'doc-20', 100)).ids, expected)
    const otherProcess = openDatabase({ dataDir: c.dataDir, databaseUrl: c.config.databaseUrl, poolSize: 1 })
    try {
      assert.equal(await new NameIndex(otherProcess).foldFull(a.id, 4), 1)
    } finally {
      await otherProcess.close()
    }
    assert.deepEqual((await searchAll(c, a.token, 'doc-20', 100)).ids, expected)
  })

  test("search in one account among others of the same names: only the account's own matches", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    await insertFiles(c, b.id, [1, 2 * CHUNK_SIZE], ['shared-', '.txt'])
    await insertFiles(c, a.id, [1, 30], ['shared-', '.txt'])
    await insertFiles(c, a.id, [31, 60], ['other-', '.txt'])
    const idOf = (n: number) => `fil_${a.id}_${n}`
    const found = await searchAll(c, a.token, 'shared-', 10)
    assert.deepEqual(found, { ids: Array.from({ length: 30 }, (_, i) => idOf(30 - i)), pages: 3 })
    assert.deepEqual(await searchAll(c, a.token, 'shared-7.', 10), { ids: [idOf(7)], pages: 1 })
    // Only the other account has this one.
    assert.deepEqual(await searchAll(c, a.token, `shared-${2 * CHUNK_SIZE - 1}.`, 10), { ids: [], pages: 1 })
  })
})

test('folding: case as Unicode folds it, accents kept, one form of each accented letter', () => {
  assert.equal(foldName('Straße'), foldName('STRASSE'))
  assert.equal(foldName('ﬁle'), 'file')
  assert.equal(foldName('ΟΔΟΣ'), foldName('οδος'))
  assert.equal(foldName('Cafe\u0301'), foldName('CAFÉ'))
  assert.notEqual(foldName('café'), foldName('cafe'))
  assert.ok(foldName('İstanbul').includes('i'))
  assert.deepEqual([...gramsOf('abc')], ['a', 'b', 'c', 'ab', 'bc', 'abc'])
  assert.deepEqual(queryGrams('ab'), ['ab'])
  assert.deepEqual(queryGrams('abc'), ['abc'])
})

test('grams: runs of four are kept by their buckets, so trigrams held apart do not make a candidate', () => {
  const [quad] = [...gramsOf('abcd')].slice(-1) as [string]
  assert.deepEqual([...gramsOf('abcd')], ['a', 'b', 'c', 'd', 'ab', 'bc', 'cd', 'abc', 'bcd', quad])
  assert.ok(quad.startsWith('\u0002') && /^[0-9a-f]{4}$/.test(quad.slice(1)), quad)
  assert.deepEqual(queryGrams('abcd'), ['abc', 'bcd', quad])
  // A name holding a query holds its grams, characters of two UTF-16 units among them too.
  for (const text of ['abcab', 'report-00', 'ü𝒳ß𝒳-日本語x']) {
    const folded = foldName(text)
    const name = gramsOf(`x${folded}y`)
    assert.ok(
      queryGrams(folded).every((gram) => name.has(gram)),
      text,
    )
  }
  // The benchmark's oldest names: "report-00" in the first, its trigrams apart in the second.
  const oldest = gramsOf('report-0012345-3f00c1a2.pdf')
  const apart = gramsOf('report-0712345-00c1a2f3.pdf')
  const grams = queryGrams('report-00')
  assert.ok(grams.every((gram) => oldest.has(gram)))
  assert.ok(grams.filter((gram) => gram.length === 3).every((gram) => apart.has(gram)))
  assert.ok(!grams.every((gram) => apart.has(gram)))
})

test('slot sets: stored as a list up to 4,095 slots, as a bitmap from 4,096, read back the same', () => {
  const listMost = BLOCK_SIZE / 16 - 1
  for (const count of [0, 1, listMost, listMost + 1, BLOCK_SIZE]) {
    const slots = emptySlots()
    // An odd multiplier numbers every slot once.
    for (let i = 0; i < count; i++) addSlot(slots, (i * 2654435761) % BLOCK_SIZE)
    const stored = encodeSlots(slots)
    assert.equal(stored.byteLength, count <= listMost ? count * 2 : BLOCK_SIZE / 8)
    const read = slotsDescending(decodeSlots(stored))
    assert.equal(read.length, count)
    assert.deepEqual(read, slotsDescending(slots))
    assert.deepEqual(
      read,
      [...read].sort((x, y) => y - x),
    )
    assert.deepEqual(slotsAscending(stored), [...read].reverse())
  }
  // The slots in all of several sets, as stored: bitmaps and lists alike, newest first, up to a slot.
  const odd = emptySlots()
  const low = emptySlots()
  const few = emptySlots()
  for (let slot = 0; slot < BLOCK_SIZE; slot++) {
    if (slot % 2) addSlot(odd, slot)
    if (slot < 5000) addSlot(low, slot)
    if (slot % 100 === 1) addSlot(few, slot)
  }
  const [oddStored, lowStored, fewStored] = [odd, low, few].map(encodeSlots) as [
    Uint8Array,
    Uint8Array,
    Uint8Array,
  ]
  assert.equal(lowStored.byteLength, BLOCK_SIZE / 8)
  assert.equal(fewStored.byteLength, 2 * 656)
  const inAll = (sets: Uint8Array[], highest?: number) => [...slotsInAll(sets, highest)]
  assert.deepEqual(
    inAll([oddStored, lowStored]),
    slotsDescending(low).filter((slot) => slot % 2),
  )
  assert.deepEqual(
    inAll([oddStored, lowStored], 4000),
    slotsDescending(low).filter((slot) => slot % 2 && slot <= 4000),
  )
  assert.deepEqual(inAll([lowStored, oddStored], 1), [1])
  assert.deepEqual(inAll([lowStored, oddStored], 0), [])
  assert.deepEqual(
    inAll([lowStored, fewStored, oddStored]),
    Array.from({ length: 50 }, (_, i) => 4901 - 100 * i),
  )
  assert.deepEqual(
    inAll([lowStored, fewStored, oddStored], 4900),
    inAll([lowStored, fewStored, oddStored]).slice(1),
  )
  // Lists against lists, each walked down once.
  const tens = emptySlots()
  for (let slot = 1; slot < 30_000; slot += 10) addSlot(tens, slot)
  const tensStored = encodeSlots(tens)
  assert.equal(tensStored.byteLength, 2 * 3000)
  const fewBelow = slotsDescending(few).filter((slot) => slot < 30_000)
  assert.deepEqual(inAll([tensStored, fewStored]), fewBelow)
  assert.deepEqual(inAll([fewStored, tensStored, oddStored]), fewBelow)
  assert.deepEqual(
    inAll([tensStored, fewStored], 20_000),
    fewBelow.filter((slot) => slot <= 20_000),
  )
  assert.deepEqual(inAll([fewStored, encodeSlots(emptySlots())]), [])
  assert.deepEqual(inAll([fewStored]), slotsDescending(few))
  assert.deepEqual(inAll([fewStored], 101), [101, 1])
  // A list stored at an odd offset of a larger buffer (as a driver's Buffer may be) reads the same.
  const shifted = new Uint8Array(fewStored.byteLength + 1)
  shifted.set(fewStored, 1)
  assert.deepEqual(inAll([tensStored, shifted.subarray(1)]), fewBelow)

  // Sets of every shape, in any order and any number, against the slots each set holds (a seeded generator,
  // so that a failure is the same on every run).
  let seed = 7
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return seed / 2 ** 32
  }
  for (let round = 0; round < 200; round++) {
    const sets = Array.from({ length: 1 + Math.floor(random() * 4) }, () => {
      const density = [0.0002, 0.003, 0.01, 0.05, 0.3, 0.95][Math.floor(random() * 6)] as number
      const set = emptySlots()
      for (let slot = 0; slot < BLOCK_SIZE; slot++) if (random() < density) addSlot(set, slot)
      return set
    })
    const highest = random() < 0.3 ? Math.floor(random() * BLOCK_SIZE) : BLOCK_SIZE - 1
    const held = sets.map((set) => new Set(slotsDescending(set)))
    const expected = slotsDescending(sets[0] as SlotSet).filter(
      (slot) => slot <= highest && held.every((slots) => slots.has(slot)),
    )
    assert.deepEqual(inAll(sets.map(encodeSlots), highest), expected, `round ${round}`)
  }
})
