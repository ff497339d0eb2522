// Migrations run by several processes at once on a new database: the command-line tool beside a server that
// starts, or a fleet's processes started together. Each must find the schema whole, none must fail on what
// another has just done (issue 41: "migration 0013 … duplicate column name: crc32" on SQLite). On each engine.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../src/platform/config.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { newId, newPublicId } from '../src/platform/ids.ts'
import { cli } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'

for (const engine of ENGINES) {
  test(`four processes migrating a new database at once all succeed [${engine}]`, async () => {
    for (let round = 0; round < 2; round++) {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-migrate-'))
      const database = await freshDatabase(engine, dataDir)
      try {
        const storage = { dataDir, databaseUrl: database.url }
        const runs = await Promise.all(
          Array.from({ length: 4 }, (_, i) =>
            cli(storage, ['accounts', 'create', '--email', `m${round}-${i}@example.com`, '--json']),
          ),
        )
        for (const [i, run] of runs.entries()) assert.equal(run.code, 0, `process ${i}: ${run.stderr}`)
        const listed = await cli(storage, ['accounts', 'list', '--json'])
        assert.equal(listed.code, 0, listed.stderr)
        assert.equal(JSON.parse(listed.stdout).accounts.length, 4)
      } finally {
        await database.drop()
        await rm(dataDir, { recursive: true, force: true })
      }
    }
  })
}

for (const engine of ENGINES) {
  test(`migration 0033 keeps every link, its days and its passes, and lets a share name a folder instead of a file [${engine}]`, async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-migration-'))
    const database = await freshDatabase(engine, dataDir)
    const config = loadConfig({ DATA_DIR: dataDir, ...(database.url ? { DATABASE_URL: database.url } : {}) })
    const db = openDatabase({ ...config, poolSize: 2 })
    try {
      await migrate(db, '0032_trash')
      const now = Date.now()
      const account = newId('acc')
      const file = newId('fil')
      const folder = newId('fld')
      const share = newId('shr')
      await db.kysely
        .insertInto('accounts')
        .values({
          id: account,
          email: 'm@example.com',
          password_hash: null,
          created_at: now,
          disabled_at: null,
        })
        .execute()
      await db.kysely
        .insertInto('folders')
        .values({ id: folder, account_id: account, name: 'F', name_key: 'f', created_at: now } as never)
        .execute()
      await db.kysely
        .insertInto('files')
        .values({
          id: file,
          account_id: account,
          folder_id: null,
          name: 'f.txt',
          content_type: 'text/plain',
          size: 1,
          blob_key: 'k',
          sha256: null,
          created_at: now,
          updated_at: now,
        } as never)
        .execute()
      const link = {
        id: share,
        account_id: account,
        file_id: file,
        public_id: newPublicId(),
        is_active: true,
        expires_at: 123,
        view_count: 7,
        download_count: 3,
        password_hash: 'hash',
        max_downloads: 9,
        created_at: now,
        updated_at: now,
      }
      await db.kysely.insertInto('shares').values(link).execute()
      const day = { share_id: share, account_id: account, day: 100, views: 7, downloads: 3 }
      await db.kysely.insertInto('share_daily_counts').values(day).execute()
      const pass = { pass_hash: 'p', share_id: share, bytes_left: 5, expires_at: now + 60_000 }
      await db.kysely.insertInto('download_passes').values(pass).execute()

      await migrate(db)
      const kept = await db.kysely.selectFrom('shares').selectAll().executeTakeFirstOrThrow()
      assert.deepEqual(
        { ...kept, expires_at: Number(kept.expires_at), view_count: Number(kept.view_count) },
        { ...link, is_active: kept.is_active, folder_id: null, expires_at: 123, view_count: 7 },
      )
      assert.equal(Number(kept.download_count), 3)
      assert.equal((await db.kysely.selectFrom('share_daily_counts').selectAll().execute()).length, 1)
      assert.equal((await db.kysely.selectFrom('download_passes').selectAll().execute()).length, 1)

      const folderLink = {
        ...link,
        id: newId('shr'),
        file_id: null,
        folder_id: folder,
        public_id: newPublicId(),
      }
      await db.kysely.insertInto('shares').values(folderLink).execute()
      await assert.rejects(
        db.kysely
          .insertInto('shares')
          .values({ ...link, id: newId('shr'), file_id: null, folder_id: null, public_id: newPublicId() })
          .execute(),
        'a link of nothing is refused',
      )
      await assert.rejects(
        db.kysely
          .insertInto('shares')
          .values({ ...folderLink, id: newId('shr'), file_id: file, public_id: newPublicId() })
          .execute(),
        'a link of a file and a folder at once is refused',
      )
      // The days and passes still point at the links, and go with them.
      await db.kysely.deleteFrom('files').where('id', '=', file).execute()
      assert.equal((await db.kysely.selectFrom('share_daily_counts').selectAll().execute()).length, 0)
      assert.equal((await db.kysely.selectFrom('download_passes').selectAll().execute()).length, 0)
      await db.kysely.deleteFrom('folders').where('id', '=', folder).execute()
      assert.equal((await db.kysely.selectFrom('shares').selectAll().execute()).length, 0)
    } finally {
      await db.close()
      await database.drop()
      await rm(dataDir, { recursive: true, force: true })
    }
  })
}
