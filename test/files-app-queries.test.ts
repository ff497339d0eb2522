// What one view of the files app's pages costs the database: the statements a signed-in GET of the home page,
// a folder's page and a search page runs, counted for an account with 10 files and for one with 5,000. A page
// whose cost grew with the account (a query per file, per folder, per page of rows) would show here; the
// figures of bench/app.ts rest on it.
//
// The statements are counted through the Db contract itself, which the app is built on here wrapped: every
// `read` (the compiled statements of the read path), and every statement run through
// its Kysely instance (a plugin sees each result). What lies below the contract is not counted: SQLite's read
// transaction of a turn of the event loop (db/sqlite.ts), and PostgreSQL's change notifications.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { KyselyPlugin, RootOperationNode } from 'kysely'
import { type App, buildApp } from '../src/app.ts'
import { LocalBlobStore } from '../src/platform/blob/local-blob-store.ts'
import { loadConfig } from '../src/platform/config.ts'
import type { Db } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { insertFiles } from './support/files-helpers.ts'
import { createFile, ENGINES, freshDatabase, type TestContext } from './support/harness.ts'
import { newOwner, WebClient } from './support/web-client.ts'

/** The statements run through `db`, each described by its kind and first table (or its SQL, for reads). */
interface Counter {
  db: Db
  statements: string[]
}

/** A first table's name, for reading the list of statements when an assertion fails. */
function describeNode(node: RootOperationNode): string {
  const from = (node as { from?: { froms?: { table?: { identifier?: { name?: string } } }[] } }).from
  const into = (node as { into?: { table?: { identifier?: { name?: string } } } }).into
  const table =
    (node as { table?: { table?: { identifier?: { name?: string } } } }).table?.table?.identifier?.name ??
    into?.table?.identifier?.name ??
    from?.froms?.[0]?.table?.identifier?.name ??
    '?'
  return `${node.kind.replace('Node', '')} ${table}`
}

function counting(db: Db): Counter {
  const statements: string[] = []
  const described = new Map<unknown, string>()
  const plugin: KyselyPlugin = {
    transformQuery: ({ node, queryId }) => {
      described.set(queryId, describeNode(node))
      return node
    },
    // Called once for every statement the Kysely instance executes, compiled by a builder or handed over
    // compiled; a builder compiled once and run through `read` is counted there instead.
    transformResult: async ({ result, queryId }) => {
      statements.push(`kysely: ${described.get(queryId) ?? 'compiled query'}`)
      described.delete(queryId)
      return result
    },
  }
  const kysely = db.kysely.withPlugin(plugin)
  const counted: Db = {
    ...db,
    kysely,
    transaction: (work) => kysely.transaction().execute(work),
    read: (query, name) => {
      statements.push(`read: ${name ?? query.sql.slice(0, 60)}`)
      return db.read(query, name)
    },
    changeEpoch: (watched, scope) => db.changeEpoch(watched, scope),
    ping: () => db.ping(),
    reportTo: (log) => db.reportTo(log),
    close: () => db.close(),
  }
  return { db: counted, statements }
}

interface Owner {
  id: string
  web: WebClient
  folderId: string
}

/** An owner signed in on the web, with `size` files: the oldest two named "minutes-…", half in a folder. */
async function ownerWith(ctx: TestContext, size: number): Promise<Owner> {
  const { id, email } = await newOwner(ctx.app)
  const folder = await ctx.app.services.folders.create(id, 'Reports')
  const half = Math.floor(size / 2)
  await insertFiles(ctx, id, [1, 2], ['minutes-', '.txt'], folder.id)
  if (half >= 3) await insertFiles(ctx, id, [3, half], ['report-', '.txt'], folder.id)
  await insertFiles(ctx, id, [half + 1, size], ['report-', '.txt'])
  return { id, web: await WebClient.signedIn(ctx.app, email), folderId: folder.id }
}

for (const engine of ENGINES) {
  describe(`statements of a page view of the files app [${engine}]`, () => {
    let ctx: (TestContext & { counter: Counter; stop(): Promise<void> }) | undefined
    before(async () => {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-test-'))
      const database = await freshDatabase(engine, dataDir)
      const config = loadConfig({
        DATA_DIR: dataDir,
        PUBLIC_URL: 'http://coffer.test',
        LOG_LEVEL: 'silent',
        ...(database.url ? { DATABASE_URL: database.url } : {}),
      })
      const opened = openDatabase({ ...config, poolSize: 4 })
      await migrate(opened)
      const counter = counting(opened)
      const blobs = await LocalBlobStore.open(path.join(dataDir, 'blobs'))
      const app: App = await buildApp({ config, db: counter.db, blobs, logger: false })
      await app.ready()
      // Every statement of the Db is counted: the jobs that poll (the webhook sender's lease every 500 ms, the
      // request deadlines every 10 s) would be counted with a page's when they fall within it.
      await app.jobs.webhookSender.stop()
      await app.jobs.requestDeadlines.stop()
      ctx = {
        engine,
        app,
        db: counter.db,
        blobs,
        blobStore: 'local',
        config,
        dataDir,
        counter,
        async stop() {
          await app.close()
          await opened.close()
          await database.drop()
          await rm(dataDir, { recursive: true, force: true })
        },
      }
    })
    after(async () => ctx?.stop())

    /**
     * The statements a GET of `url` ran with the caches of the account's rows cold (`first`: a change of the
     * account's folder just before moves their epoch, in this process at once), and seen again (`again`: what
     * the caches hold, while no notification of a change came between).
     */
    async function statementsOf(owner: Owner, url: string, rows: number) {
      const c = ctx as NonNullable<typeof ctx>
      const measure = async () => {
        c.counter.statements.length = 0
        const page = await owner.web.get(url)
        assert.equal(page.statusCode, 200, `${url}: ${page.body.slice(0, 300)}`)
        assert.equal(page.body.match(/<tr [^>]*data-file-id=/g)?.length ?? 0, rows, `${url}: rows shown`)
        // Lookups by id are named after the number of ids they take (id-lookup.ts): one statement either way.
        return c.counter.statements.map((statement) => statement.replace(/(by_ids|by_id_list)_\d+$/, '$1'))
      }
      await c.app.services.folders.rename(owner.id, owner.folderId, 'Reports')
      const first = await measure()
      const again = await measure()
      return { first, again }
    }

    test('the home page, a folder and a search cost the same few statements for 10 files as for 5,000', async () => {
      const c = ctx as NonNullable<typeof ctx>
      const small = await ownerWith(c, 10)
      const large = await ownerWith(c, 5_000)
      const pages = (owner: Owner, size: number) => [
        { name: 'home page', url: '/', rows: Math.min(size, 50) },
        { name: 'a folder', url: `/folders/${owner.folderId}`, rows: Math.min(size / 2, 50) },
        { name: 'search, every name', url: '/?query=.txt', rows: Math.min(size, 50) },
        { name: 'search, two old files', url: '/?query=minutes', rows: 2 },
      ]
      type Page = ReturnType<typeof pages>[number]
      type Statements = Awaited<ReturnType<typeof statementsOf>>
      const counted: { page: Page; small: Statements; large: Statements }[] = []
      for (const [i, page] of pages(small, 10).entries()) {
        const ofLarge = pages(large, 5_000)[i] as Page
        counted.push({
          page,
          small: await statementsOf(small, page.url, page.rows),
          large: await statementsOf(large, ofLarge.url, ofLarge.rows),
        })
      }
      const report = counted.map(
        ({ page, small, large }) =>
          `${page.name}: 10 files ${small.first.length} (again ${small.again.length}), ` +
          `5,000 files ${large.first.length} (again ${large.again.length}): ${large.first.join(', ')}`,
      )
      console.log(`[${engine}] statements per page view\n  ${report.join('\n  ')}`)
      const [home, folder, everyName, twoOld] = counted as [
        (typeof counted)[0],
        (typeof counted)[0],
        (typeof counted)[0],
        (typeof counted)[0],
      ]
      // The session, the page's ids (from the order index), the folders beside it, then the files, in one
      // statement whether they are 10 or 50; and the folder itself, and its link (for its Share panel). A search: where the account's name index
      // ends (and its grams' counts), the newest files (those after the index), then the files.
      for (const [name, page, statements] of [
        ['home page', home, 4],
        ['a folder', folder, 6],
        ['search, every name', everyName, 5],
      ] as const) {
        assert.deepEqual(page.large.first, page.small.first, name)
        assert.equal(page.large.first.length, statements, `${name}: ${page.large.first.join(', ')}`)
      }
      // A rare match among many files takes the search's further steps (name-search.ts): the rest of the
      // files the name index does not hold, then the grams' rows in the one block, and the candidates' rows
      // (the grams' counts came with where the index ends).
      assert.ok(twoOld.small.first.length <= 5, twoOld.small.first.join(', '))
      assert.ok(twoOld.large.first.length <= 8, twoOld.large.first.join(', '))
      // Seen again, the folders' menu and the files of a search may come from memory, never more statements.
      for (const { page, small, large } of counted) {
        assert.ok(small.again.length <= small.first.length, `${page.name} again: ${small.again.join(', ')}`)
        assert.ok(large.again.length <= large.first.length, `${page.name} again: ${large.again.join(', ')}`)
      }
      if (engine === 'sqlite') {
        // Nothing changed between the views: the menu, the files, and a search's newest files came from
        // memory; the page's ids, and where the search's index ends, are read again.
        assert.equal(home.large.again.length, 2, home.large.again.join(', '))
        assert.equal(everyName.large.again.length, 2, everyName.large.again.join(', '))
      }
    })

    test("the folders' menu is read again once a folder changes, here or through another connection", async () => {
      const c = ctx as NonNullable<typeof ctx>
      const owner = await ownerWith(c, 10)
      const menu = async () => [...(await owner.web.get('/')).body.matchAll(/class="folder-name">([^<]+)</g)]
      assert.deepEqual(
        (await menu()).map((m) => m[1]),
        ['All files', 'Reports'],
      )
      await c.app.services.folders.create(owner.id, 'Invoices')
      assert.deepEqual(
        (await menu()).map((m) => m[1]),
        ['All files', 'Invoices', 'Reports'],
        'a folder made by this process is in the menu at once',
      )
      // Another process (a second server, the CLI) renames one: seen once its change is known (PostgreSQL's
      // notification, SQLite's next turn).
      const other = openDatabase({ databaseUrl: c.config.databaseUrl, dataDir: c.dataDir })
      try {
        await other.kysely
          .updateTable('folders')
          .set({ name: 'Receipts', name_key: 'receipts' })
          .where('id', '=', owner.folderId)
          .execute()
      } finally {
        await other.close()
      }
      const deadline = Date.now() + 10_000
      let names: (string | undefined)[] = []
      while (Date.now() < deadline) {
        names = (await menu()).map((m) => m[1])
        if (names.includes('Receipts')) break
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      assert.deepEqual(names, ['All files', 'Invoices', 'Receipts'])
    })

    test("the pages' own text stays within Latin-1, so that a page is sent from one byte a character", async () => {
      // bench/app.ts: one character beyond Latin-1 made the home page a two-byte string of over 128 KB, four
      // times the CPU to send. Names given here are ASCII; the page must add nothing wider of its own.
      const c = ctx as NonNullable<typeof ctx>
      const { id, web, folderId } = await ownerWith(c, 60)
      // A file with its bytes and a share link, for its own page with the viewer and the Share panel.
      const file = await createFile(c, id, { name: 'notes.txt', content: 'The minutes.\n' })
      await c.app.services.shares.create(id, file.id)
      const pages = [
        '/',
        `/folders/${folderId}`,
        '/?query=report',
        '/?query=nothing-like-it',
        `/files/${file.id}`,
        `/files/${file.id}/delete`,
      ]
      for (const url of pages) {
        const page = await web.get(url)
        assert.equal(page.statusCode, 200, url)
        const wide = [...page.body].filter((char) => (char.codePointAt(0) as number) > 0xff)
        assert.deepEqual(wide, [], `${url} holds characters beyond Latin-1`)
      }
    })
  })
}
