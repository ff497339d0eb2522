// Backup and restore, on each engine: files uploaded, a backup taken by the CLI while uploads and deletes go
// on, restored by the CLI into new storage, a server started there; every file of the restored database
// downloads byte for byte, every file that existed before the backup began and was not deleted is there, and
// the storage check of the restored store finds no row without its blob.
import assert from 'node:assert/strict'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { cli, newAccount, newKey, type Storage } from './support/cli-helpers.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { blobStorageFor } from './support/s3.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'
import { prepareUploads, sha256, uploadWithGrant, waitForUpload } from './support/uploads.ts'

interface Side {
  storage: Storage
  drop(): Promise<void>
}

async function newStorage(engine: 'sqlite' | 'postgres'): Promise<Side> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-backup-'))
  const database = await freshDatabase(engine, dataDir)
  const blobs = await blobStorageFor(engine)
  return {
    storage: { dataDir, databaseUrl: database.url, blobEnv: blobs.env },
    drop: async () => {
      await database.drop()
      await blobs.drop()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

const envOf = (storage: Storage) => ({
  DATA_DIR: storage.dataDir,
  DATABASE_URL: storage.databaseUrl ?? '',
  RATE_LIMIT_MAX: '100000',
  ...storage.blobEnv,
})

for (const engine of ENGINES) {
  describe(`backup and restore [${engine}]`, () => {
    let source: Side
    let target: Side
    let backupDir: string
    let server: ServerProcess | undefined
    before(async () => {
      source = await newStorage(engine)
      target = await newStorage(engine)
      backupDir = path.join(await mkdtemp(path.join(tmpdir(), 'coffer-backup-dir-')), 'backup')
    })
    after(async () => {
      await server?.stop()
      await source?.drop()
      await target?.drop()
      await rm(path.dirname(backupDir), { recursive: true, force: true })
    })

    test('a backup taken under write load restores into new storage, every file byte for byte', async () => {
      const account = await newAccount(source.storage)
      const { key: token } = await newKey(source.storage, account.email, 'all')
      server = await startServer(envOf(source.storage))
      const on = server
      process.env.VERCEL_BLOB_API_URL = `${on.base}/blob`
      /** Every file ever uploaded: id → SHA-256 of its bytes. */
      const uploaded = new Map<string, string>()
      let counter = 0
      const upload = async (count: number) => {
        const contents = Array.from({ length: count }, () => Buffer.from(`file ${counter++} `.repeat(200)))
        const grants = await prepareUploads(
          on.base,
          token,
          contents.map((content, i) => ({ name: `f${i}.txt`, type: 'text/plain', size: content.length })),
        )
        await Promise.all(grants.map((grant, i) => uploadWithGrant(grant, contents[i] as Buffer)))
        const ids: string[] = []
        for (const [i, grant] of grants.entries()) {
          const status = await waitForUpload(grant, token)
          assert.equal(status.status, 'complete')
          if (status.status !== 'complete') continue
          uploaded.set(status.result.id, sha256(contents[i] as Buffer))
          ids.push(status.result.id)
        }
        return ids
      }
      const before = await upload(40)
      const deletedBefore = before.slice(0, 5)
      await fetch(`${on.base}/api/v1/files`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ fileIds: deletedBefore }),
      })

      // Uploads and deletes go on while the backup runs.
      let loading = true
      const load = (async () => {
        let rounds = 0
        while (loading || rounds < 2) {
          const ids = await upload(5)
          await fetch(`${on.base}/api/v1/files/${ids[0]}`, {
            method: 'DELETE',
            headers: { authorization: `Bearer ${token}` },
          })
          rounds++
        }
        return rounds
      })()
      const made = await cli(source.storage, ['backup', 'create', '--to', backupDir, '--json'])
      loading = false
      const rounds = await load
      assert.equal(made.code, 0, made.stderr)
      assert.ok(rounds >= 2, 'the load ran during the backup')
      const manifest = JSON.parse(made.stdout)
      assert.equal(manifest.engine, engine)
      assert.ok(manifest.blobs >= 35)
      assert.ok((await readdir(backupDir)).includes('manifest.json'))
      await on.stop()
      server = undefined

      // A backup goes into an empty directory only, and a restore into empty storage only.
      const again = await cli(source.storage, ['backup', 'create', '--to', backupDir])
      assert.equal(again.code, 1)
      assert.match(again.stderr, /is not an empty directory/)
      const onAFile = await cli(source.storage, [
        'backup',
        'create',
        '--to',
        path.join(backupDir, 'manifest.json'),
      ])
      assert.equal(onAFile.code, 1)
      assert.match(onAFile.stderr, /is not an empty directory/)
      const noBackup = await cli(target.storage, [
        'backup',
        'restore',
        '--from',
        path.join(backupDir, 'blobs'),
      ])
      assert.equal(noBackup.code, 1)
      assert.match(noBackup.stderr, /holds no complete Coffer backup/)
      const intoUsed = await cli(source.storage, ['backup', 'restore', '--from', backupDir])
      assert.equal(intoUsed.code, 1)

      const restored = await cli(target.storage, ['backup', 'restore', '--from', backupDir, '--json'])
      assert.equal(restored.code, 0, restored.stderr)
      assert.equal(JSON.parse(restored.stdout).blobs, manifest.blobs)

      server = await startServer(envOf(target.storage))
      const files: string[] = []
      let cursor: string | null = null
      do {
        const response = await fetch(
          `${server.base}/api/v1/files?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
          { headers: { authorization: `Bearer ${token}` } },
        )
        const page = (await response.json()) as {
          data: { id: string }[]
          pagination: { nextCursor: string | null }
        }
        files.push(...page.data.map((file) => file.id))
        cursor = page.pagination.nextCursor
      } while (cursor)
      for (const id of before.slice(5))
        assert.ok(files.includes(id), `${id}, uploaded before the backup, is restored`)
      for (const id of deletedBefore)
        assert.ok(!files.includes(id), `${id}, deleted before the backup, is not`)
      for (const id of files) {
        const download: Response = await fetch(`${server.base}/api/v1/files/${id}/download`, {
          headers: { authorization: `Bearer ${token}` },
        })
        assert.equal(download.status, 200, id)
        assert.equal(sha256(Buffer.from(await download.arrayBuffer())), uploaded.get(id), id)
      }
      await server.stop()
      server = undefined
      const check = await cli(target.storage, ['storage', 'check', '--json'])
      assert.equal(check.code, 0, check.stderr)
      assert.equal(JSON.parse(check.stdout).missingBlobs.count, 0)
    })
  })
}
