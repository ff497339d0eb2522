// The per-process cache of file rows (FilesService): a file is read from the database once, then served from
// memory until its account's files, folders or shares change, in this process or in any other.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import type { App } from '../src/app.ts'
import { loadConfig } from '../src/platform/config.ts'
import type { Db } from '../src/platform/db/database.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import {
  assertError,
  call,
  createAccount,
  createFile,
  describeEachEngine,
  dropListenerAndAwaitItsReturn,
  startApp,
  type TestAccount,
  type TestContext,
} from './support/harness.ts'

const fileUrl = (id: string) => `/api/v1/files/${id}`

/** A read of files by id: PostgreSQL's batched statements, SQLite's one. */
const isFileRead = (statementName: string | undefined) =>
  statementName?.startsWith('files_by_ids_') || statementName === 'file_by_id'

/** Runs `body` with a count of the app's reads of files by id. */
async function countingFileReads(db: Db, body: (reads: () => number) => Promise<void>): Promise<void> {
  let reads = 0
  const read = db.read
  db.read = (query, name) => {
    if (isFileRead(name)) reads += 1
    return read(query, name)
  }
  try {
    await body(() => reads)
  } finally {
    db.read = read
  }
}

/**
 * An account with one file, its key in use, and PostgreSQL's listener started (the first request starts it;
 * until it listens nothing is cached).
 */
async function accountWithFile(c: TestContext): Promise<{ account: TestAccount; fileId: string }> {
  const account = await createAccount(c.app)
  const file = await createFile(c, account.id, { name: 'first.txt' })
  for (let i = 0; i < 2; i++) await nameOf(c.app, account, file.id)
  // Then the notifications of the writes above have arrived, and the next read is cached.
  await sleep(50)
  await nameOf(c.app, account, file.id)
  return { account, fileId: file.id }
}

async function nameOf(app: App, account: TestAccount, fileId: string): Promise<string> {
  const res = await call(app, 'GET', fileUrl(fileId), { token: account.token })
  assert.equal(res.status, 200)
  return res.body.data.name
}

/** PostgreSQL tells the app of another process's change by a notification, which arrives within moments. */
async function seenWithinASecond(
  app: App,
  account: TestAccount,
  fileId: string,
  name: string,
): Promise<void> {
  const deadline = Date.now() + 1000
  while ((await nameOf(app, account, fileId)) !== name) {
    assert.ok(Date.now() < deadline, 'the change was not seen within a second')
    await sleep(5)
  }
}

/** Renames the file through connections other than the app's, as another process would. */
async function renameThrough(db: Db, fileId: string, name: string): Promise<void> {
  await db.kysely.updateTable('files').set({ name }).where('id', '=', fileId).execute()
}

describeEachEngine('file cache', (ctx) => {
  test('a file is read once, then from memory until a change through the API, which shows at once', async () => {
    const c = ctx()
    const { account, fileId } = await accountWithFile(c)
    await countingFileReads(c.db, async (reads) => {
      for (let i = 0; i < 3; i++) assert.equal(await nameOf(c.app, account, fileId), 'first.txt')
      assert.equal(reads(), 0, 'a file in use is not read again')

      const renamed = await call(c.app, 'PATCH', fileUrl(fileId), {
        token: account.token,
        body: { name: 'second.txt' },
      })
      assert.equal(renamed.status, 200)
      assert.equal(await nameOf(c.app, account, fileId), 'second.txt')

      const share = await call(c.app, 'POST', '/api/v1/shares', { token: account.token, body: { fileId } })
      assert.equal(share.status, 201)
      assert.equal(
        (await call(c.app, 'GET', fileUrl(fileId), { token: account.token })).body.data.share.id,
        share.body.data.id,
      )

      const folder = await call(c.app, 'POST', '/api/v1/folders', {
        token: account.token,
        body: { name: 'Box' },
      })
      await call(c.app, 'PATCH', fileUrl(fileId), {
        token: account.token,
        body: { folderId: folder.body.data.id },
      })
      await call(c.app, 'PATCH', `/api/v1/folders/${folder.body.data.id}`, {
        token: account.token,
        body: { name: 'Crate' },
      })
      const moved = await call(c.app, 'GET', fileUrl(fileId), { token: account.token })
      assert.equal(moved.body.data.folder.name, 'Crate')
      assert.equal(moved.body.data.folder.fileCount, 1)

      assert.equal((await call(c.app, 'DELETE', fileUrl(fileId), { token: account.token })).status, 200)
      assertError(await call(c.app, 'GET', fileUrl(fileId), { token: account.token }), 404, 'not_found')
    })
  })

  test('PostgreSQL: a write of this process is seen by its next request, before its notification', async (t) => {
    const c = ctx()
    if (c.engine !== 'postgres') return t.skip('SQLite needs no notifications')
    const { account, fileId } = await accountWithFile(c)
    // Without the notification, only the process's own account of its writes can tell it.
    await sql`alter table files disable trigger files_update_notify`.execute(c.db.kysely)
    try {
      const renamed = await call(c.app, 'PATCH', fileUrl(fileId), {
        token: account.token,
        body: { name: 'own.txt' },
      })
      assert.equal(renamed.status, 200)
      assert.equal(await nameOf(c.app, account, fileId), 'own.txt')
    } finally {
      await sql`alter table files enable trigger files_update_notify`.execute(c.db.kysely)
    }
  })

  test('reads through the query builder or raw SQL do not count as writes', async () => {
    const c = ctx()
    const { account, fileId } = await accountWithFile(c)
    await countingFileReads(c.db, async (reads) => {
      await c.db.kysely.selectFrom('files').select('id').where('id', '=', fileId).execute()
      await sql`select 1`.execute(c.db.kysely)
      assert.equal(await nameOf(c.app, account, fileId), 'first.txt')
      assert.equal(reads(), 0)
    })
  })

  test("a cached file is still another account's 404, and stays cached for its own", async () => {
    const c = ctx()
    const stranger = await createAccount(c.app)
    const { account, fileId } = await accountWithFile(c)
    // The stranger's key in use, and the file cached after the write of its first use.
    await call(c.app, 'GET', '/api/v1/folders', { token: stranger.token })
    await sleep(50)
    await nameOf(c.app, account, fileId)
    await countingFileReads(c.db, async (reads) => {
      assertError(await call(c.app, 'GET', fileUrl(fileId), { token: stranger.token }), 404, 'not_found')
      const download = `${fileUrl(fileId)}/download`
      assertError(await call(c.app, 'GET', download, { token: stranger.token }), 404, 'not_found')
      assert.equal(reads(), 2, "the stranger's requests are read from the database")
      assert.equal(await nameOf(c.app, account, fileId), 'first.txt')
      assert.equal(reads(), 2, "the owner's file is still cached")
    })
  })

  test('a change through another connection (another process) is seen', async () => {
    const c = ctx()
    const { account, fileId } = await accountWithFile(c)
    const other = openDatabase({ ...c.config, poolSize: 1 })
    try {
      await renameThrough(other, fileId, 'elsewhere.txt')
      // SQLite: one file, so the next request's read sees the commit.
      if (c.engine === 'sqlite') assert.equal(await nameOf(c.app, account, fileId), 'elsewhere.txt')
      else await seenWithinASecond(c.app, account, fileId, 'elsewhere.txt')
    } finally {
      await other.close()
    }
  })

  test('a read that overlaps a change by another process is not trusted after it', async () => {
    const c = ctx()
    const { account, fileId } = await accountWithFile(c)
    const other = openDatabase({ ...c.config, poolSize: 1 })
    // A write of this process, so the next request reads the file again.
    await call(c.app, 'POST', '/api/v1/folders', { token: account.token, body: { name: 'Anything' } })
    const read = c.db.read
    c.db.read = async (query, name) => {
      const rows = await read(query, name)
      if (!isFileRead(name)) return rows
      // The rows read are now out of date, and the notification of the change has had time to arrive.
      c.db.read = read
      await renameThrough(other, fileId, 'meanwhile.txt')
      await sleep(100)
      return rows
    }
    try {
      assert.equal(await nameOf(c.app, account, fileId), 'first.txt')
      assert.equal(await nameOf(c.app, account, fileId), 'meanwhile.txt')
    } finally {
      c.db.read = read
      await other.close()
    }
  })

  test("PostgreSQL: another account's change leaves this account's files cached", async (t) => {
    const c = ctx()
    if (c.engine !== 'postgres') return t.skip('SQLite knows only that the database file changed')
    const { account, fileId } = await accountWithFile(c)
    const { fileId: theirs } = await accountWithFile(c)
    // This process's writes for the second account made it read every file again.
    await nameOf(c.app, account, fileId)
    const other = openDatabase({ ...c.config, poolSize: 1 })
    try {
      await countingFileReads(c.db, async (reads) => {
        await renameThrough(other, theirs, 'theirs.txt')
        await sleep(100)
        assert.equal(await nameOf(c.app, account, fileId), 'first.txt')
        assert.equal(reads(), 0)
        // While a change of the account's own is seen.
        await renameThrough(other, fileId, 'mine.txt')
        await seenWithinASecond(c.app, account, fileId, 'mine.txt')
        assert.equal(reads(), 1)
      })
    } finally {
      await other.close()
    }
  })

  test('PostgreSQL: a change made while the notification connection is down is seen once it is back', async (t) => {
    const c = ctx()
    if (c.engine !== 'postgres') return t.skip('SQLite needs no notifications')
    const { account, fileId } = await accountWithFile(c)
    const other = openDatabase({ ...c.config, poolSize: 1 })
    try {
      await dropListenerAndAwaitItsReturn(other, () => renameThrough(other, fileId, 'unnoticed.txt'))
      assert.equal(await nameOf(c.app, account, fileId), 'unnoticed.txt')
      // And files are cached again, once the app listens: its new connection shows in pg_stat_activity before
      // its LISTEN is done, and an entry read before then is read again after (one more read, on a busy
      // machine).
      for (let waited = 0; Number.isNaN(c.db.changeEpoch('files_folders_shares', account.id)); waited += 10) {
        assert.ok(waited < 5000, 'the app listens again')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      assert.equal(await nameOf(c.app, account, fileId), 'unnoticed.txt')
      await countingFileReads(c.db, async (reads) => {
        for (let i = 0; i < 3; i++) assert.equal(await nameOf(c.app, account, fileId), 'unnoticed.txt')
        assert.equal(reads(), 0)
      })
    } finally {
      await other.close()
    }
  })
})

test('FILE_CACHE_SIZE=0 reads every file from the database; other values are checked', async () => {
  assert.equal(loadConfig({}).fileCacheSize, 10_000)
  assert.throws(() => loadConfig({ FILE_CACHE_SIZE: '-1' }), /FILE_CACHE_SIZE must be a whole number/)
  assert.throws(() => loadConfig({ FILE_CACHE_SIZE: '1000001' }), /FILE_CACHE_SIZE must be between 0 and/)
  const c = await startApp('sqlite', { env: { FILE_CACHE_SIZE: '0' } })
  try {
    const { account, fileId } = await accountWithFile(c)
    await countingFileReads(c.db, async (reads) => {
      for (let i = 0; i < 3; i++) assert.equal(await nameOf(c.app, account, fileId), 'first.txt')
      assert.equal(reads(), 3)
    })
  } finally {
    await c.stop()
  }
})
