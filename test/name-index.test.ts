// The name index's bookkeeping (src/resources/files/search/name-index.repository.ts): files numbered in their account in the
// order they are made, at increasing times, also when many are made at once; chunks written once, by one
// writer, a block's rows extended by each, with the changes made to their files after; and migration 0019's
// numbering of existing files.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../src/platform/config.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { FilesRepository } from '../src/resources/files/files.repository.ts'
import { CHUNK_SIZE, slotsAscending } from '../src/resources/files/search/name-grams.ts'
import { COUNTS_BLOCK, NameIndex } from '../src/resources/files/search/name-index.repository.ts'
import { createFolder, insertFiles, walk } from './support/files-helpers.ts'
import {
  call,
  createAccount,
  createFile,
  describeEachEngine,
  ENGINES,
  freshDatabase,
  type TestContext,
} from './support/harness.ts'

describeEachEngine('name index', (ctx) => {
  test('files made at once are numbered in the order of their times, which increase', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const made = await Promise.all(
      Array.from({ length: 40 }, (_, i) => createFile(c, a.id, { name: `f${i}` })),
    )
    const rows = await c.db.kysely
      .selectFrom('files')
      .select(['id', 'seq', 'created_at'])
      .where('account_id', '=', a.id)
      .orderBy('seq')
      .execute()
    assert.deepEqual(
      rows.map((row) => Number(row.seq)),
      Array.from({ length: 40 }, (_, i) => i),
    )
    for (let i = 1; i < rows.length; i++) {
      assert.ok(Number(rows[i]?.created_at) > Number(rows[i - 1]?.created_at), 'times increase with numbers')
    }
    // The API answers each file's time as stored.
    const stored = new Map(rows.map((row) => [row.id, Number(row.created_at)]))
    for (const file of made) assert.equal(file.createdAt, stored.get(file.id))
    const account = await c.db.kysely
      .selectFrom('accounts')
      .select(['file_seq', 'last_file_at'])
      .where('id', '=', a.id)
      .executeTakeFirstOrThrow()
    assert.equal(Number(account.file_seq), 40)
    assert.equal(Number(account.last_file_at), Number(rows.at(-1)?.created_at))
  })

  const indexed = async (c: TestContext, accountId: string) =>
    Number(
      (
        await c.db.kysely
          .selectFrom('accounts')
          .select('name_indexed')
          .where('id', '=', accountId)
          .executeTakeFirstOrThrow()
      ).name_indexed,
    )

  test('the file that fills a chunk has it written, and is found through it', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    await insertFiles(c, a.id, [1, CHUNK_SIZE - 1], ['doc-', '.txt'])
    assert.equal(await indexed(c, a.id), 0)
    const last = await createFile(c, a.id, { name: 'Last-of-the-chunk.txt' })
    assert.equal(await indexed(c, a.id), CHUNK_SIZE)
    const found = await call(c.app, 'GET', '/api/v1/files?query=of-the-c', { token: a.token })
    assert.deepEqual(
      (found.body.data as { id: string }[]).map((f) => f.id),
      [last.id],
    )
  })

  test('chunks written one at a time extend their block: the same rows as written together', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const folder = await createFolder(c.app, a, 'Half')
    await insertFiles(c, a.id, [1, 2 * CHUNK_SIZE], ['doc-', '.txt'])
    await insertFiles(c, a.id, [2 * CHUNK_SIZE + 1, 3 * CHUNK_SIZE + 5], ['doc-', '.pdf'], folder.id)
    const index = new NameIndex(c.db)
    const rows = async () => {
      const all = await c.db.kysely
        .selectFrom('name_grams')
        .select(['gram', 'block', 'files', 'slots'])
        .where('account_id', '=', a.id)
        .orderBy('gram')
        .orderBy('block')
        .execute()
      return all.map((row) => [
        row.gram,
        Number(row.block),
        Number(row.files),
        Buffer.from(row.slots).toString('hex'),
      ])
    }
    const together = await rows()
    await index.rebuild(a.id)
    assert.equal(await index.foldFull(a.id, 1), 3)
    assert.equal(await indexed(c, a.id), 3 * CHUNK_SIZE)
    assert.deepEqual(await rows(), together)
    // A gram in every name: each of the three chunks' slots, in order, in the block's one row.
    const doc = await c.db.kysely
      .selectFrom('name_grams')
      .select(['files', 'slots'])
      .where('account_id', '=', a.id)
      .where('gram', '=', 'doc')
      .where('block', '=', 0)
      .executeTakeFirstOrThrow()
    assert.equal(Number(doc.files), 3 * CHUNK_SIZE)
    assert.deepEqual(
      slotsAscending(doc.slots),
      Array.from({ length: 3 * CHUNK_SIZE }, (_, i) => i),
    )
    const pdfs = await walk(c.app, a.token, `&query=.pdf&folderId=${folder.id}`, 100)
    assert.equal(pdfs.length, CHUNK_SIZE + 5)
  })

  test('a chunk is written once, by one of the writers; renames made at once in it all count', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    await insertFiles(c, a.id, [1, 2 * CHUNK_SIZE + 10], ['doc-', '.txt'])
    // insertFiles wrote the two full chunks; writing again, from several callers at once, writes nothing.
    const index = new NameIndex(c.db)
    assert.deepEqual(
      await Promise.all([index.foldFull(a.id), index.foldFull(a.id), index.foldAll()]),
      [0, 0, 0],
    )
    assert.equal(await indexed(c, a.id), 2 * CHUNK_SIZE)
    const count = await c.db.kysely
      .selectFrom('name_grams')
      .select('files')
      .where('account_id', '=', a.id)
      .where('block', '=', COUNTS_BLOCK)
      .where('gram', '=', 'doc')
      .executeTakeFirstOrThrow()
    assert.equal(Number(count.files), 2 * CHUNK_SIZE)

    // Twenty files of the first chunk renamed at once: each is found by its new name.
    const renamed = Array.from({ length: 20 }, (_, i) => `fil_${a.id}_${100 + i}`)
    const answers = await Promise.all(
      renamed.map((id, i) =>
        call(c.app, 'PATCH', `/api/v1/files/${id}`, { token: a.token, body: { name: `Ledger-${i}-q.txt` } }),
      ),
    )
    for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const found = await call(c.app, 'GET', '/api/v1/files?query=ledger-&limit=100', { token: a.token })
    assert.deepEqual((found.body.data as { id: string }[]).map((f) => f.id).sort(), [...renamed].sort())
    for (let i = 0; i < 20; i++) {
      const one = await call(c.app, 'GET', `/api/v1/files?query=${encodeURIComponent(`-${i}-q`)}`, {
        token: a.token,
      })
      assert.deepEqual(
        (one.body.data as { id: string }[]).map((f) => f.id),
        [renamed[i]],
      )
    }
  })
  test('a block that deletions and renames left many stale slots in is written again from its files', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    await insertFiles(c, a.id, [1, 3 * CHUNK_SIZE], ['doc-', '.txt'])
    const deleted = Array.from({ length: 2000 }, (_, i) => `fil_${a.id}_${i + 1}`)
    await c.db.transaction((trx) => new FilesRepository(c.db).deleteMany(trx, a.id, deleted, 'in use'))
    const renamed = Array.from({ length: 10 }, (_, i) => `fil_${a.id}_${3000 + i}`)
    for (const [i, id] of renamed.entries()) {
      const res = await call(c.app, 'PATCH', `/api/v1/files/${id}`, {
        token: a.token,
        body: { name: `Memo ${i}.md` },
      })
      assert.equal(res.status, 200)
    }
    const stale = async () =>
      (
        await c.db.kysely
          .selectFrom('name_stale')
          .select(['block', 'slots'])
          .where('account_id', '=', a.id)
          .execute()
      ).map((row) => [Number(row.block), Number(row.slots)])
    assert.deepEqual(await stale(), [[0, 2010]])
    const index = new NameIndex(c.db)
    assert.equal(await index.rewriteStale(4096), 0)
    assert.equal(await index.rewriteStale(2000), 1)
    assert.deepEqual(await stale(), [])

    // The block's rows and the counts are those of the files as they are now.
    const gram = async (gram: string, block: number) =>
      c.db.kysely
        .selectFrom('name_grams')
        .select(['files', 'slots'])
        .where('account_id', '=', a.id)
        .where('gram', '=', gram)
        .where('block', '=', block)
        .executeTakeFirst()
    const docs = await c.db.kysely
      .selectFrom('files')
      .select('seq')
      .where('account_id', '=', a.id)
      .where('name', 'like', 'doc-%')
      .orderBy('seq')
      .execute()
    assert.equal(docs.length, 3 * CHUNK_SIZE - 2010)
    const doc = await gram('doc', 0)
    assert.deepEqual(
      slotsAscending(doc?.slots as Uint8Array),
      docs.map((row) => Number(row.seq)),
    )
    assert.equal(Number((await gram('doc', COUNTS_BLOCK))?.files), docs.length)
    assert.equal(Number((await gram('mem', COUNTS_BLOCK))?.files), 10)
    assert.equal(Number((await gram('mem', 0))?.files), 10)
    const memos = await walk(c.app, a.token, '&query=memo', 100)
    assert.deepEqual(memos, [...renamed].reverse())
    assert.deepEqual(await walk(c.app, a.token, '&query=doc-1.', 100), [])
    assert.deepEqual(await walk(c.app, a.token, '&query=doc-3001.', 100), [])
    assert.deepEqual(await walk(c.app, a.token, '&query=doc-2001.', 100), [`fil_${a.id}_2001`])
  })
})

for (const engine of ENGINES) {
  test(`migration 0019 numbers existing files by their times, per account [${engine}]`, async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-migration-'))
    const database = await freshDatabase(engine, dataDir)
    const config = loadConfig({ DATA_DIR: dataDir, ...(database.url ? { DATABASE_URL: database.url } : {}) })
    const db = openDatabase({ ...config, poolSize: 2 })
    try {
      await migrate(db, '0018_file_digests_pending')
      const accounts = ['acc_one', 'acc_two', 'acc_none']
      for (const id of accounts) {
        await db.kysely
          .insertInto('accounts')
          .values({
            id,
            email: `${id}@example.com`,
            password_hash: null,
            created_at: 1,
            disabled_at: null,
          } as never)
          .execute()
      }
      // Inserted out of time order, two at the same millisecond (told apart by id).
      const files: [string, string, number][] = [
        ['acc_one', 'fil_c', 300],
        ['acc_one', 'fil_a', 100],
        ['acc_two', 'fil_x', 50],
        ['acc_one', 'fil_e', 200],
        ['acc_one', 'fil_d', 200],
      ]
      for (const [account, id, at] of files) {
        await db.kysely
          .insertInto('files')
          .values({
            id,
            account_id: account,
            folder_id: null,
            name: `${id}.txt`,
            content_type: 'text/plain',
            size: 1,
            blob_key: id,
            sha256: null,
            created_at: at,
            updated_at: at,
          } as never)
          .execute()
      }
      await migrate(db)
      const numbered = await db.kysely.selectFrom('files').select(['id', 'seq']).orderBy('id').execute()
      assert.deepEqual(
        numbered.map((row) => [row.id, Number(row.seq)]),
        [
          ['fil_a', 0],
          ['fil_c', 3],
          ['fil_d', 1],
          ['fil_e', 2],
          ['fil_x', 0],
        ],
      )
      const counters = await db.kysely
        .selectFrom('accounts')
        .select(['id', 'file_seq', 'last_file_at', 'name_indexed'])
        .orderBy('id')
        .execute()
      assert.deepEqual(
        counters.map((row) => [
          row.id,
          Number(row.file_seq),
          Number(row.last_file_at),
          Number(row.name_indexed),
        ]),
        [
          ['acc_none', 0, 0, 0],
          ['acc_one', 4, 300, 0],
          ['acc_two', 1, 50, 0],
        ],
      )
    } finally {
      await db.close()
      await database.drop()
      await rm(dataDir, { recursive: true, force: true })
    }
  })
}
