// The storage reconciler (src/resources/maintenance/reconciler.job.ts) on a store with one of everything that can go wrong:
// a file's blob and a preview without rows (old enough to be orphans, and one too recent to tell), a row whose
// blob is gone, a stale leftover and one in use, and blobs that are not orphans though no file owns them yet
// (a processing upload's, a recorded deletion's). Checked through the job and through the CLI, on each engine.
import assert from 'node:assert/strict'
import { utimes, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { test } from 'node:test'
import { hashSecret } from '../src/platform/auth/secrets.ts'
import { blobKeyOf, previewKeyOf, probeKey } from '../src/platform/blob/blob-keys.ts'
import { newId } from '../src/platform/ids.ts'
import { BackupsRepository } from '../src/resources/maintenance/backups.repository.ts'
import { cli, storageOf } from './support/cli-helpers.ts'
import { call, createAccount, createFile, describeEachEngine, type TestContext } from './support/harness.ts'

const TWO_HOURS_AGO = new Date(Date.now() - 2 * 60 * 60 * 1000)

/** Makes a blob look as if it were last written two hours ago. */
async function age(c: TestContext, key: string): Promise<void> {
  await utimes(path.join(c.dataDir, 'blobs', `${key}.blob`), TWO_HOURS_AGO, TWO_HOURS_AGO)
}

async function anomalies(c: TestContext) {
  const a = await createAccount(c.app)
  const kept = await createFile(c, a.id)
  await age(c, kept.blobKey)
  const lost = await createFile(c, a.id)
  await c.blobs.delete(lost.blobKey)

  const orphan = blobKeyOf(a.id, newId('fil'))
  await c.blobs.put(orphan, Buffer.from('no row'))
  await age(c, orphan)
  const recent = blobKeyOf(a.id, newId('fil'))
  await c.blobs.put(recent, Buffer.from('an upload may claim me'))
  const orphanPreview = previewKeyOf(a.id, newId('fil'))
  await c.blobs.put(orphanPreview, Buffer.from('webp'))
  await age(c, orphanPreview)

  // An upload being processed: its blob exists before its file row.
  const processingFile = newId('fil')
  const processing = blobKeyOf(a.id, processingFile)
  await c.blobs.put(processing, Buffer.from('being processed'))
  await age(c, processing)
  const intentId = newId('upl')
  const now = Date.now()
  await c.db.kysely
    .insertInto('upload_intents')
    .values({
      id: intentId,
      account_id: a.id,
      folder_id: null,
      name: 'p.txt',
      content_type: 'text/plain',
      size: 15,
      pathname: `${intentId}/p.txt`,
      grant_hash: hashSecret('x'),
      expires_at: now + 60_000,
      state: 'processing',
      error: null,
      file_id: processingFile,
      stored_size: 15,
      sha256: null,
      stored_at: now,
      lease_until: now + 60_000,
      created_at: now,
      updated_at: now,
    })
    .execute()
  // A deletion recorded and not yet carried out: the blob deletions job's, not an orphan.
  const deleting = blobKeyOf(a.id, newId('fil'))
  await c.blobs.put(deleting, Buffer.from('going'))
  await age(c, deleting)
  await c.db.kysely.insertInto('blob_deletions').values({ key: deleting, recorded_at: now }).execute()

  // A readiness probe whose removal failed, and one under way; something Coffer did not write, with a key's
  // shape and without one.
  const strayProbe = probeKey()
  await c.blobs.put(strayProbe, Buffer.from('ok'))
  await age(c, strayProbe)
  await c.blobs.put(probeKey(), Buffer.from('ok'))
  await c.blobs.put('elsewhere/thing', Buffer.from('not ours'))
  await writeFile(path.join(c.dataDir, 'blobs', 'README.txt'), 'not a blob')

  const temp = path.join(c.dataDir, 'blobs', '.tmp')
  await writeFile(path.join(temp, 'crashed.part'), 'half a blob')
  await utimes(path.join(temp, 'crashed.part'), TWO_HOURS_AGO, TWO_HOURS_AGO)
  await writeFile(path.join(temp, 'writing.part'), 'a write under way')
  return { a, kept, lost, orphan, recent, orphanPreview, processing, deleting, strayProbe }
}

describeEachEngine(
  'storage check',
  (ctx) => {
    test('finds each kind of mismatch; repairs orphans and stale leftovers, never a row without its blob', async () => {
      const c = ctx()
      // The check of the app's start has run on an empty store.
      await c.app.jobs.storageReconciler.stop()
      const made = await anomalies(c)
      const reconciler = c.app.jobs.storageReconciler

      const found = await reconciler.check({ repair: false })
      assert.equal(found.blobs.count, 10)
      assert.deepEqual(found.orphanBlobs, { count: 1, sample: [made.orphan], removed: 0 })
      assert.deepEqual(found.orphanPreviews, { count: 1, sample: [made.orphanPreview], removed: 0 })
      assert.equal(found.recentOrphans, 1)
      assert.deepEqual(found.missingBlobs, { count: 1, sample: [made.lost.blobKey] })
      assert.deepEqual(found.staleLeftovers, { count: 1, sample: ['crashed.part'], removed: 0, bytes: 11 })
      assert.equal(found.activeLeftovers, 1)
      assert.deepEqual(found.strayProbes, { count: 1, sample: [made.strayProbe], removed: 0 })
      assert.deepEqual(
        { ...found.unrecognised, sample: found.unrecognised.sample.sort() },
        { count: 2, sample: ['README.txt', 'elsewhere/thing'], bytes: 18 },
      )
      assert.equal(found.problems, 1)
      assert.equal((await c.blobs.stat(made.orphan))?.size, 6, 'a check without repair changes nothing')

      const repaired = await reconciler.check({ repair: true })
      assert.equal(repaired.orphanBlobs.removed, 1)
      assert.equal(repaired.orphanPreviews.removed, 1)
      assert.equal(repaired.staleLeftovers.removed, 1)
      assert.equal(repaired.strayProbes.removed, 1)
      assert.equal(repaired.unrecognised.count, 2, 'what Coffer did not write is never removed')
      assert.equal(await c.blobs.stat(made.strayProbe), undefined)
      assert.equal(await c.blobs.stat(made.orphan), undefined)
      assert.equal(await c.blobs.stat(made.orphanPreview), undefined)
      for (const key of [made.kept.blobKey, made.recent, made.processing, made.deleting]) {
        assert.ok(await c.blobs.stat(key), `${key} is kept`)
      }
      // The file whose blob is lost keeps its row: the owner sees it, the operator restores it.
      const row = await c.db.kysely.selectFrom('files').select('id').where('id', '=', made.lost.id).execute()
      assert.equal(row.length, 1)

      const after = await reconciler.check({ repair: false })
      assert.equal(
        after.orphanBlobs.count +
          after.orphanPreviews.count +
          after.staleLeftovers.count +
          after.strayProbes.count,
        0,
      )
      assert.equal(after.missingBlobs.count, 1)

      // The CLI: the same report as JSON, and exit 1 while a row has lost its blob.
      const run = await cli(storageOf(c), ['storage', 'check', '--json'])
      assert.equal(run.code, 1, run.stderr)
      const report = JSON.parse(run.stdout)
      assert.deepEqual(report.missingBlobs, { count: 1, sample: [made.lost.blobKey] })
      assert.equal(report.repair, false)
      const text = await cli(storageOf(c), ['storage', 'check'])
      assert.match(
        text.stdout,
        /Rows whose blob is MISSING \(not repairable; restore from a backup\): 1\n {2}files\//,
      )
      assert.match(text.stdout, /Objects Coffer did not write \(never removed\): 2, 18 bytes\n/)

      await c.db.kysely.deleteFrom('files').where('id', '=', made.lost.id).execute()
      const clean = await cli(storageOf(c), ['storage', 'check', '--repair', '--json'])
      assert.equal(clean.code, 0, clean.stderr)
      assert.equal(JSON.parse(clean.stdout).problems, 0)
    })

    test("a backup's hold keeps the blobs of files deleted meanwhile until it ends; then the sweep removes them", async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id)
      const holds = new BackupsRepository(c.db)
      await holds.hold('backup-test', Date.now() + 60_000)
      // Deleted, then deleted from the trash: for good.
      const deleteForGood = async (id: string) => {
        assert.equal((await call(c.app, 'DELETE', `/api/v1/files/${id}`, { token: a.token })).status, 200)
        return call(c.app, 'DELETE', `/api/v1/trash/${id}`, { token: a.token })
      }
      const deleted = await deleteForGood(file.id)
      assert.equal(deleted.status, 200)
      assert.ok(await c.blobs.stat(file.blobKey), 'the blob waits for the backup')
      assert.equal(await c.app.jobs.blobDeletions.sweep(), 0)
      await holds.release('backup-test')
      // The earlier test's recorded deletion goes in the same sweep.
      assert.ok((await c.app.jobs.blobDeletions.sweep()) >= 1)
      assert.equal(await c.blobs.stat(file.blobKey), undefined)
      // A hold whose backup died ends by itself.
      const other = await createFile(c, a.id)
      await holds.hold('backup-died', Date.now() - 1)
      await deleteForGood(other.id)
      assert.equal(await c.blobs.stat(other.blobKey), undefined)
    })
  },
  // The leftovers are made as files of the local store's own (`.tmp`); the S3 store's, multipart uploads, are
  // listed and removed by its own test (s3-blob-store.test.ts) through the same calls the check makes.
  { blobStore: 'local' },
)
