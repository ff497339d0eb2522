// What becomes of an upload once its bytes are stored. Processing makes the file: a preview for an image, the
// type read from the bytes where it contradicts the declared one, an error and nothing kept for a file
// shorter than declared, root for a folder deleted meanwhile. Durability: an intent left in processing by a
// process that died is finished by another, an expired one ends in error, and a live lease is respected. Runs
// on SQLite and, with TEST_DATABASE_URL, on PostgreSQL.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import sharp from 'sharp'
import { hashSecret } from '../src/platform/auth/secrets.ts'
import { blobKeyOf, previewKeyOf } from '../src/platform/blob/blob-keys.ts'
import { BlobStoreUnavailableError, MultipartUploadNotFoundError } from '../src/platform/blob/blob-store.ts'
import { newId } from '../src/platform/ids.ts'
import { LEASE_MS } from '../src/resources/uploads/processing.job.ts'
import { call, createAccount, ENGINES, type TestAccount } from './support/harness.ts'
import { intentRow, MiB, stagedKeys, startUploadApp, uploadHelpers } from './support/upload-helpers.ts'
import {
  type Grant,
  getStatus,
  type ListeningContext,
  sha256,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'

for (const engine of ENGINES) {
  describe(`uploads [${engine}]`, () => {
    let ctx: ListeningContext | undefined
    const app = () => {
      assert.ok(ctx)
      return ctx
    }
    let account: TestAccount

    before(async () => {
      ctx = await startUploadApp(engine)
      account = await createAccount(ctx.app)
    })
    after(async () => {
      await ctx?.stop()
    })

    const { prepare, uploadFile } = uploadHelpers(app, () => account)

    describe('processing', () => {
      const previewRows = (fileId: string) =>
        app().db.kysely.selectFrom('file_previews').selectAll().where('file_id', '=', fileId).execute()

      test('an image gets a WebP preview of at most 512 px, recorded for its file', async () => {
        const png = await sharp({
          create: { width: 1200, height: 600, channels: 3, background: { r: 200, g: 30, b: 60 } },
        })
          .png()
          .toBuffer()
        const { status } = await uploadFile('red.png', 'image/png', png)
        assert.equal(status.status, 'complete')
        const fileId = (status as { result: { id: string } }).result.id
        const key = previewKeyOf(account.id, fileId)
        const [row] = await previewRows(fileId)
        assert.ok(row)
        const preview = Buffer.concat(await (await app().blobs.get(key)).toArray())
        const meta = await sharp(preview).metadata()
        assert.deepEqual(
          { format: meta.format, width: meta.width, height: meta.height },
          { format: 'webp', width: 512, height: 256 },
        )
        assert.deepEqual(
          { ...row, created_at: 0, size: Number(row.size) },
          {
            file_id: fileId,
            blob_key: key,
            content_type: 'image/webp',
            width: 512,
            height: 256,
            size: preview.length,
            created_at: 0,
          },
        )

        // Deleted, the file keeps its preview in the trash; deleted for good, the preview goes with it.
        for (const path of [`/api/v1/files/${fileId}`, `/api/v1/trash/${fileId}`]) {
          const deleted = await fetch(`${app().base}${path}`, {
            method: 'DELETE',
            headers: { authorization: `Bearer ${account.token}` },
          })
          assert.equal(deleted.status, 200, path)
          if (path.startsWith('/api/v1/files/')) assert.ok(await app().blobs.stat(key), 'kept in the trash')
        }
        assert.equal(await app().blobs.stat(key), undefined, 'the preview blob is gone')
        assert.equal(
          await app().blobs.stat(blobKeyOf(account.id, fileId)),
          undefined,
          'the file blob is gone',
        )
        assert.deepEqual(await previewRows(fileId), [])
      })

      test('a damaged image is kept without a preview', async () => {
        const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#000' } })
          .png()
          .toBuffer()
        const damaged = Buffer.concat([png.subarray(0, 40), Buffer.alloc(200, 0xff)])
        const { status } = await uploadFile('broken.png', 'image/png', damaged)
        assert.equal(status.status, 'complete')
        const fileId = (status as { result: { id: string } }).result.id
        assert.equal((await app().app.services.files.get(account.id, fileId)).contentType, 'image/png')
        assert.deepEqual(await previewRows(fileId), [])
        assert.equal(await app().blobs.stat(previewKeyOf(account.id, fileId)), undefined)
      })

      test('the type detected from the bytes replaces a declared type it contradicts', async () => {
        const pdf = Buffer.from('%PDF-1.7\n1 0 obj\n<<>>\nendobj\n')
        const cases: [string, string, Buffer, string][] = [
          ['page.png', 'image/png', Buffer.from('<html><script>alert(1)</script></html>'), 'text/plain'],
          ['doc.pdf', 'application/octet-stream', pdf, 'application/pdf'],
          [
            'notes.md',
            'text/markdown; charset=utf-8',
            Buffer.from('# Notes\n'),
            'text/markdown; charset=utf-8',
          ],
          ['data.bin', 'application/x-custom', randomBytes(64).fill(0, 0, 1), 'application/x-custom'],
          [
            'photo.jpg',
            'image/png',
            Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46]),
            'image/jpeg',
          ],
        ]
        for (const [name, declared, content, stored] of cases) {
          const { status } = await uploadFile(name, declared, content)
          assert.equal(status.status, 'complete', name)
          const file = await app().app.services.files.get(
            account.id,
            (status as { result: { id: string } }).result.id,
          )
          assert.equal(file.contentType, stored, name)
        }
      })

      test('fewer bytes than declared end in error and leave no file, blob or preview', async () => {
        const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } })
          .png()
          .toBuffer()
        const [grant] = await prepare([{ name: 'short.png', type: 'image/png', size: png.length + 5 }])
        assert.ok(grant)
        const result = await uploadWithGrant(grant, png)
        const fileId = result.etag.slice(1, -1)
        assert.deepEqual(await waitForUpload(grant, account.token), {
          status: 'error',
          error: `The uploaded file has ${png.length} bytes, but ${png.length + 5} were declared. Prepare the upload again with the right size.`,
        })
        assert.equal(await app().blobs.stat(blobKeyOf(account.id, fileId)), undefined)
        assert.equal(await app().blobs.stat(previewKeyOf(account.id, fileId)), undefined)
        const files = await app()
          .db.kysely.selectFrom('files')
          .select('id')
          .where('id', '=', fileId)
          .execute()
        assert.deepEqual(files, [])
        assert.deepEqual(await stagedKeys(app(), grant.intentId), [])
      })

      test('a file whose folder was deleted during the upload lands in root', async () => {
        const { app: fastify } = app()
        const folder = await call(fastify, 'POST', '/api/v1/folders', {
          token: account.token,
          body: { name: `Gone ${randomBytes(3).toString('hex')}` },
        })
        const [grant] = await prepare(
          [{ name: 'orphan.txt', type: 'text/plain', size: 5 }],
          folder.body.data.id,
        )
        assert.ok(grant)
        await call(fastify, 'DELETE', `/api/v1/folders/${folder.body.data.id}`, { token: account.token })
        await uploadWithGrant(grant, Buffer.from('hello'))
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete')
        const file = await fastify.services.files.get(
          account.id,
          (status as { result: { id: string } }).result.id,
        )
        assert.equal(file.folderId, null)
      })

      test('when upload() returns, the intent is already past uploading', async () => {
        const [grant] = await prepare([{ name: 'quick.txt', type: 'text/plain', size: 2 }])
        assert.ok(grant)
        await uploadWithGrant(grant, Buffer.from('hi'))
        const status = await getStatus(grant, account.token)
        assert.ok(
          status.status === 'complete' || (status.status === 'pending' && status.phase === 'processing'),
          JSON.stringify(status),
        )
      })
    })

    describe('durability', () => {
      test('a restart resumes intents left in processing and ends expired uploads in error', async () => {
        const context = app()
        const content = Buffer.from('left mid-processing')
        const fileId = newId('fil')
        const key = blobKeyOf(account.id, fileId)
        await context.blobs.put(key, Readable.from([content]))
        const now = Date.now()
        const base = {
          account_id: account.id,
          folder_id: null,
          content_type: 'text/plain',
          grant_hash: hashSecret(randomBytes(32).toString('hex')),
          error: null,
          stored_size: null,
          sha256: null,
          stored_at: null,
          created_at: now,
          updated_at: now,
        }
        const processing = newId('upl')
        const expired = newId('upl')
        await context.db.kysely
          .insertInto('upload_intents')
          .values([
            {
              ...base,
              id: processing,
              name: 'resumed.txt',
              size: content.length,
              pathname: `${processing}/resumed.txt`,
              expires_at: now + 60_000,
              state: 'processing',
              file_id: fileId,
              stored_size: content.length,
              sha256: sha256(content),
              stored_at: now,
              // The process that held it died: its lease ran out.
              lease_until: now - 1,
            },
            {
              ...base,
              id: expired,
              name: 'abandoned.bin',
              size: 10 * MiB,
              pathname: `${expired}/abandoned.bin`,
              expires_at: now - 1,
              state: 'uploading',
              file_id: null,
              lease_until: null,
            },
          ])
          .execute()
        // A multipart upload the abandoned upload had begun, with a part sent.
        const abandoned = await context.blobs.createMultipart(blobKeyOf(account.id, newId('fil')))
        await context.blobs.writePart(abandoned, 1, Buffer.from('abc'), 3)
        await context.db.kysely
          .insertInto('upload_blobs')
          .values({
            key: abandoned.key,
            intent_id: expired,
            upload_id: `mpu_${'0'.repeat(24)}`,
            store_upload_id: abandoned.uploadId,
            size: null,
            sha256: null,
            created_at: now,
          })
          .execute()

        // Another process (or this one restarted) on the same database and blobs.
        const { buildApp } = await import('../src/app.ts')
        const restarted = await buildApp({
          config: context.config,
          db: context.db,
          blobs: context.blobs,
          logger: false,
        })
        await restarted.ready()
        try {
          const deadline = Date.now() + 10_000
          while ((await intentRow(context, processing)).state === 'processing' && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
          const statusOf = (id: string) =>
            getStatus({ statusUrl: `${context.base}/api/v1/files/uploads/${id}` } as Grant, account.token)
          assert.deepEqual(await statusOf(processing), { status: 'complete', result: { id: fileId } })
          const file = await context.app.services.files.get(account.id, fileId)
          assert.equal(file.sha256, sha256(content))
          assert.equal(file.name, 'resumed.txt')
          assert.deepEqual(await statusOf(expired), {
            status: 'error',
            error: 'The upload grant expired before the file was stored.',
          })
          // The upload is gone from the store, and its record with it.
          await assert.rejects(
            () => context.blobs.writePart(abandoned, 2, Buffer.from('d'), 1),
            MultipartUploadNotFoundError,
          )
          assert.deepEqual(await stagedKeys(context, expired), [])
        } finally {
          await restarted.close()
        }
      })

      test('a dependency down during processing keeps the bytes; the upload completes once it is back', async () => {
        const context = app()
        const content = Buffer.from('processed after the outage')
        const [grant] = await prepare([{ name: 'outage.txt', type: 'text/plain', size: content.length }])
        assert.ok(grant)
        // A second process, whose blob store does not answer its reads (they fail as the S3 driver's do when
        // the store is down; its deletes still work, as they did in the outage of issue 40), takes the upload
        // as it is reported; this process does not process it meanwhile.
        let down = true
        const unreachable = new Proxy(context.blobs, {
          get(store, name, receiver) {
            const value = Reflect.get(store, name, receiver)
            if (typeof value !== 'function') return value
            return (...args: unknown[]) => {
              if (down && ['stat', 'get'].includes(String(name))) {
                return Promise.reject(
                  new BlobStoreUnavailableError('the object store is unavailable: ECONNREFUSED'),
                )
              }
              return value.apply(store, args)
            }
          },
        })
        const { buildApp } = await import('../src/app.ts')
        const other = await buildApp({
          config: context.config,
          db: context.db,
          blobs: unreachable,
          logger: false,
        })
        await other.ready()
        try {
          await context.app.jobs.uploadProcessor.stop()
          await uploadWithGrant(grant, content)
          const adopted = await intentRow(context, grant.intentId)
          assert.equal(adopted.state, 'processing')
          await other.jobs.uploadProcessor.kick(grant.intentId)
          const after = await intentRow(context, grant.intentId)
          assert.deepEqual([after.state, after.error], ['processing', null], 'not failed')
          const key = blobKeyOf(account.id, after.file_id as string)
          assert.equal((await context.blobs.stat(key))?.size, content.length, 'its bytes are kept')
        } finally {
          down = false
          await other.close()
          context.app.jobs.uploadProcessor.start(context.app.log)
        }
        // Its lease runs out, and the next sweep (any process's) finishes it.
        await context.db.kysely
          .updateTable('upload_intents')
          .set({ lease_until: Date.now() - 1 })
          .where('id', '=', grant.intentId)
          .execute()
        await context.app.jobs.uploadProcessor.sweep()
        const status = await waitForUpload(grant, account.token)
        assert.equal(status.status, 'complete', JSON.stringify(status))
        const fileId = (status as { result: { id: string } }).result.id
        const file = await context.app.services.files.get(account.id, fileId)
        assert.equal(file.sha256, sha256(content))
      })

      test('a lease held by a live process is respected', async () => {
        const context = app()
        const id = newId('upl')
        const now = Date.now()
        await context.db.kysely
          .insertInto('upload_intents')
          .values({
            id,
            account_id: account.id,
            folder_id: null,
            name: 'held.txt',
            content_type: 'text/plain',
            size: 1,
            pathname: `${id}/held.txt`,
            grant_hash: hashSecret('x'),
            expires_at: now + 60_000,
            state: 'processing',
            error: null,
            file_id: newId('fil'),
            stored_size: 1,
            sha256: sha256('x'),
            stored_at: now,
            lease_until: now + LEASE_MS,
            created_at: now,
            updated_at: now,
          })
          .execute()
        await context.app.jobs.uploadProcessor.kick(id)
        assert.equal((await intentRow(context, id)).state, 'processing')
      })
    })
  })
}
