// Downloads the object store sends (DOWNLOAD_REDIRECT=presigned, BLOB_STORE=s3): Coffer authenticates,
// authorizes and counts, then answers with a redirect to a presigned GET of the object, valid for a minute, which
// the store answers with the Content-Type and Content-Disposition Coffer would have sent; a Range goes to the
// store as the client sent it; but a link with a download limit never gets a redirect, which could be followed
// again for more than was counted. On both engines, against Ceph's gateway (issues 24 and 41).
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../src/platform/config.ts'
import { downloadHandoff, PRESIGNED_DOWNLOAD_SECONDS } from '../src/resources/files/download.ts'
import { createAccount, createFile, ENGINES, type TestAccount } from './support/harness.ts'
import { s3Missing } from './support/s3.ts'
import { shareCounts, shareFile } from './support/shares.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

for (const engine of ENGINES) {
  describe(`downloads sent by the object store [${engine}]`, { skip: s3Missing }, () => {
    let coffer: ListeningContext
    let a: TestAccount
    before(async () => {
      coffer = await startListening(engine, { blobStore: 's3', env: { DOWNLOAD_REDIRECT: 'presigned' } })
      a = await createAccount(coffer.app)
    })
    after(async () => coffer?.stop())

    const ask = (url: string, headers: Record<string, string> = {}, method = 'GET') =>
      fetch(url, { method, headers, redirect: 'manual' })

    test("the owner's download: a redirect to the object, which comes with Coffer's headers", async () => {
      const content = randomBytes(2 * 1024 * 1024 + 5)
      const file = await createFile(coffer, a.id, {
        name: 'Résumé 日本.pdf',
        contentType: 'application/pdf',
        content,
      })
      const answer = await ask(`${coffer.base}/api/v1/files/${file.id}/download`, bearer(a.token))
      assert.equal(answer.status, 302)
      assert.equal((await answer.arrayBuffer()).byteLength, 0)
      const location = new URL(answer.headers.get('location') ?? '')
      assert.equal(location.origin, coffer.bucket?.env.AWS_ENDPOINT_URL_S3)
      assert.equal(location.searchParams.get('X-Amz-Expires'), String(PRESIGNED_DOWNLOAD_SECONDS))
      assert.ok(location.searchParams.get('X-Amz-Signature'))
      // No credential and no capability of Coffer's in the address.
      assert.ok(!location.href.includes(a.token))

      const bytes = await fetch(location)
      assert.equal(bytes.status, 200)
      assert.ok(Buffer.from(await bytes.arrayBuffer()).equals(content))
      assert.equal(bytes.headers.get('content-type'), 'application/pdf')
      assert.equal(
        bytes.headers.get('content-disposition'),
        `attachment; filename="R_sum_ __.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%E6%97%A5%E6%9C%AC.pdf`,
      )

      // A plain Range is the store's to answer; HEAD and a validator are Coffer's own.
      const ranged = await fetch(location, { headers: { range: 'bytes=10-19' } })
      assert.equal(ranged.status, 206)
      assert.ok(Buffer.from(await ranged.arrayBuffer()).equals(content.subarray(10, 20)))
      const head = await ask(`${coffer.base}/api/v1/files/${file.id}/download`, bearer(a.token), 'HEAD')
      assert.equal(head.status, 200)
      assert.equal(head.headers.get('content-length'), String(content.length))
      const etag = head.headers.get('etag') ?? ''
      const unchanged = await ask(`${coffer.base}/api/v1/files/${file.id}/download`, {
        ...bearer(a.token),
        'if-none-match': etag,
      })
      assert.equal(unchanged.status, 304)
    })

    test('another account gets its 404 from Coffer, and a missing object is Coffer’s 404 too', async () => {
      const file = await createFile(coffer, a.id, { content: 'mine' })
      const b = await createAccount(coffer.app)
      const other = await ask(`${coffer.base}/api/v1/files/${file.id}/download`, bearer(b.token))
      assert.equal(other.status, 404)
      assert.equal(other.headers.get('location'), null)
      await coffer.blobs.delete(file.blobKey)
      const lost = await ask(`${coffer.base}/api/v1/files/${file.id}/download`, bearer(a.token))
      assert.equal(lost.status, 404)
      assert.equal(lost.headers.get('location'), null)
    })

    test('a share download is counted before the redirect; a link with a download limit is never redirected', async () => {
      const content = randomBytes(200_000)
      const file = await createFile(coffer, a.id, {
        name: 'shared.bin',
        contentType: 'application/octet-stream',
        content,
      })
      const open = await shareFile(coffer, a, file.id)
      const redirected = await ask(`${coffer.base}${open.path}/download`)
      assert.equal(redirected.status, 302)
      assert.equal((await shareCounts(coffer, a, open.shareId)).downloadCount, 1)
      const bytes = await fetch(redirected.headers.get('location') ?? '')
      assert.ok(Buffer.from(await bytes.arrayBuffer()).equals(content))

      // A presigned URL could be followed again for as long as it lasts, for more than was counted: a limited
      // link's bytes come from Coffer, exactly as many as its pass was charged.
      const limited = await createFile(coffer, a.id, {
        name: 'once.bin',
        contentType: 'application/octet-stream',
        content,
      })
      const once = await shareFile(coffer, a, limited.id, { maxDownloads: 1 })
      const first = await ask(`${coffer.base}${once.path}/download`, { range: 'bytes=0-0' })
      assert.equal(first.status, 206)
      assert.equal(first.headers.get('location'), null)
      assert.ok(Buffer.from(await first.arrayBuffer()).equals(content.subarray(0, 1)))
      const pass = (first.headers.get('set-cookie') ?? '').split(';')[0] as string
      for (let i = 0; i < 10; i++) {
        const byte = await ask(`${coffer.base}${once.path}/download`, {
          range: 'bytes=199999-199999',
          cookie: pass,
        })
        assert.equal(byte.status, 206)
        assert.equal(byte.headers.get('location'), null)
        assert.ok(Buffer.from(await byte.arrayBuffer()).equals(content.subarray(199_999)))
      }
      const whole = await ask(`${coffer.base}${once.path}/download`, { cookie: pass })
      assert.equal(whole.status, 410)
      assert.equal(whole.headers.get('location'), null)
      assert.equal((await shareCounts(coffer, a, once.shareId)).downloadCount, 1)
    })
  })
}

test('DOWNLOAD_REDIRECT=presigned needs an object store, and excludes DOWNLOAD_ACCEL_REDIRECT', () => {
  assert.throws(() => loadConfig({ DOWNLOAD_REDIRECT: 'always' }), /DOWNLOAD_REDIRECT must be presigned/)
  assert.throws(
    () => loadConfig({ DOWNLOAD_REDIRECT: 'presigned', DOWNLOAD_ACCEL_REDIRECT: '/_coffer_blobs/' }),
    /not both/,
  )
  const config = loadConfig({ DOWNLOAD_REDIRECT: 'presigned' })
  assert.throws(
    () => downloadHandoff(config, {} as never),
    (error: Error) => error instanceof ConfigError && /needs BLOB_STORE=s3/.test(error.message),
  )
})
