// Migration 0035 (quotas) on a database that already holds files: each account's usage row is backfilled from
// its files (the trash included, and its part), an account without files gets none (it reads as zeros), and
// the triggers keep the rows exact from then on. On each engine.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../src/platform/config.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { newId } from '../src/platform/ids.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'

for (const engine of ENGINES) {
  test(`migration 0035 backfills every account's usage from its files, and the triggers keep it [${engine}]`, async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-migration-'))
    const database = await freshDatabase(engine, dataDir)
    const config = loadConfig({ DATA_DIR: dataDir, ...(database.url ? { DATABASE_URL: database.url } : {}) })
    const db = openDatabase({ ...config, poolSize: 2 })
    try {
      await migrate(db, '0034_roles_and_invitations')
      const now = Date.now()
      const [a, b, empty] = [newId('acc'), newId('acc'), newId('acc')]
      for (const [i, id] of [a, b, empty].entries()) {
        await db.kysely
          .insertInto('accounts')
          .values({ id, email: `m${i}@example.com`, password_hash: null, created_at: now, disabled_at: null })
          .execute()
      }
      const file = (account: string, size: number, trashed: boolean) => ({
        id: newId('fil'),
        account_id: account,
        folder_id: null,
        name: 'f.txt',
        content_type: 'text/plain',
        size,
        blob_key: `k-${newId('fil')}`,
        sha256: null,
        created_at: now,
        updated_at: now,
        trashed_at: trashed ? now : null,
        purge_at: trashed ? now + 1000 : null,
      })
      const files = [file(a, 10, false), file(a, 20, true), file(a, 30, false), file(b, 5_000_000_000, true)]
      for (const row of files)
        await db.kysely
          .insertInto('files')
          .values(row as never)
          .execute()

      await migrate(db)
      const usage = async () =>
        (
          await db.kysely
            .selectFrom('account_usage')
            .select(['account_id', 'files', 'bytes', 'trash_files', 'trash_bytes'])
            .execute()
        )
          .map((r) => ({
            account: r.account_id,
            files: Number(r.files),
            bytes: Number(r.bytes),
            trashFiles: Number(r.trash_files),
            trashBytes: Number(r.trash_bytes),
          }))
          .sort((x, y) => x.account.localeCompare(y.account))
      const expected = [
        { account: a, files: 3, bytes: 60, trashFiles: 1, trashBytes: 20 },
        { account: b, files: 1, bytes: 5_000_000_000, trashFiles: 1, trashBytes: 5_000_000_000 },
      ].sort((x, y) => x.account.localeCompare(y.account))
      assert.deepEqual(await usage(), expected)

      // From then on, the triggers: a restore, a new file, a purge.
      const [, second, , big] = files
      assert.ok(second && big)
      await db.kysely
        .updateTable('files')
        .set({ trashed_at: null, purge_at: null })
        .where('id', '=', second.id)
        .execute()
      await db.kysely
        .insertInto('files')
        .values(file(empty, 7, false) as never)
        .execute()
      await db.kysely.deleteFrom('files').where('id', '=', big.id).execute()
      assert.deepEqual(
        await usage(),
        [
          { account: a, files: 3, bytes: 60, trashFiles: 0, trashBytes: 0 },
          { account: b, files: 0, bytes: 0, trashFiles: 0, trashBytes: 0 },
          { account: empty, files: 1, bytes: 7, trashFiles: 0, trashBytes: 0 },
        ].sort((x, y) => x.account.localeCompare(y.account)),
      )
    } finally {
      await db.close()
      await database.drop()
      await rm(dataDir, { recursive: true, force: true })
    }
  })
}
