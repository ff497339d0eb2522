import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { blobKeyOf } from '../src/platform/blob/blob-keys.ts'
import { newId } from '../src/platform/ids.ts'
import {
  assertError,
  call,
  createAccount,
  createFile,
  describeEachEngine,
  type TestAccount,
  type TestContext,
} from './support/harness.ts'

const CSP = "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'; sandbox"
const SAFETY = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': CSP,
  'x-frame-options': 'SAMEORIGIN',
  'cache-control': 'private, no-cache',
}

const logs: string[] = []
const logStream = { write: (line: string) => void logs.push(line) }

/** Response headers without those every response carries. */
function headersOf(res: { headers: LightMyRequestResponse['headers'] }) {
  const {
    date: _date,
    connection: _connection,
    'keep-alive': _keepAlive,
    'ratelimit-limit': _limit,
    'ratelimit-remaining': _remaining,
    'ratelimit-reset': _reset,
    ...rest
  } = res.headers
  return rest
}

function download(
  c: TestContext,
  account: TestAccount,
  fileId: string,
  headers: Record<string, string> = {},
  query = '',
) {
  return call(c.app, 'GET', `/api/v1/files/${fileId}/download${query}`, { token: account.token, headers })
}

function head(c: TestContext, account: TestAccount, fileId: string, headers: Record<string, string> = {}) {
  return c.app.inject({
    method: 'HEAD',
    url: `/api/v1/files/${fileId}/download`,
    headers: { authorization: `Bearer ${account.token}`, ...headers },
  })
}

describeEachEngine(
  'file downloads',
  (ctx) => {
    test('GET streams the exact bytes with every download header', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      for (const content of [randomBytes(200_000), randomBytes(3 * 1024 * 1024 + 17)]) {
        const file = await createFile(c, a.id, { name: 'photo.png', contentType: 'image/png', content })
        const res = await download(c, a, file.id)
        assert.equal(res.status, 200)
        assert.ok(res.raw.rawPayload.equals(content), 'the bytes differ')
        assert.deepEqual(headersOf(res), {
          ...SAFETY,
          'content-type': 'image/png',
          'content-length': String(content.length),
          'content-disposition': `attachment; filename="photo.png"; filename*=UTF-8''photo.png`,
          etag: `"${file.sha256}"`,
          'last-modified': new Date(file.createdAt).toUTCString(),
          'accept-ranges': 'bytes',
        })
      }
    })

    test('HEAD answers the headers of GET without a body', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id, { name: 'notes.txt', content: '0123456789' })
      const got = await download(c, a, file.id)
      const res = await head(c, a, file.id)
      assert.equal(res.statusCode, 200)
      assert.equal(res.rawPayload.length, 0)
      assert.deepEqual(headersOf(res), headersOf(got))
      assert.equal(res.headers['content-length'], '10')

      const partial = await head(c, a, file.id, { range: 'bytes=2-5' })
      assert.equal(partial.statusCode, 206)
      assert.equal(partial.rawPayload.length, 0)
      assert.equal(partial.headers['content-range'], 'bytes 2-5/10')
      assert.equal(partial.headers['content-length'], '4')
      const current = await head(c, a, file.id, { 'if-none-match': String(got.headers.etag) })
      assert.equal(current.statusCode, 304)
    })

    test('a single byte range is a 206 with exact bytes; others get the whole file', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const content = 'abcdefghijklmnopqrstuvwxyz0123456789'
      const file = await createFile(c, a.id, { content })
      for (const [range, contentRange, body] of [
        ['bytes=0-0', 'bytes 0-0/36', 'a'],
        ['bytes=10-19', 'bytes 10-19/36', 'klmnopqrst'],
        ['bytes=30-', 'bytes 30-35/36', '456789'],
        ['bytes=-4', 'bytes 32-35/36', '6789'],
        ['bytes=-100', 'bytes 0-35/36', content],
        ['bytes=5-1000', 'bytes 5-35/36', content.slice(5)],
        ['bytes=35-35', 'bytes 35-35/36', '9'],
        ['Bytes = 1-2', 'bytes 1-2/36', 'bc'],
        ['bytes=0-1,', 'bytes 0-1/36', 'ab'],
      ]) {
        const res = await download(c, a, file.id, { range: range as string })
        assert.equal(res.status, 206, range)
        assert.equal(res.body, body, range)
        assert.equal(res.headers['content-range'], contentRange, range)
        assert.equal(res.headers['content-length'], String(Buffer.byteLength(body as string)), range)
        assert.equal(res.headers['content-type'], 'text/plain', range)
        assert.equal(res.headers['x-content-type-options'], 'nosniff', range)
      }
      for (const range of ['bytes=0-1,4-5', 'bytes=5-2', 'items=0-1', 'bytes=x-y', 'bytes=-', 'bytes=']) {
        const res = await download(c, a, file.id, { range })
        assert.equal(res.status, 200, range)
        assert.equal(res.body, content, range)
        assert.equal(res.headers['content-range'], undefined, range)
      }
      for (const range of ['bytes=36-', 'bytes=36-40', 'bytes=100-200', 'bytes=-0']) {
        const res = await download(c, a, file.id, { range })
        assert.match(assertError(res, 416, 'range_not_satisfiable'), /36 bytes/, range)
        assert.equal(res.headers['content-range'], 'bytes */36', range)
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', range)
        assert.equal(res.headers['x-content-type-options'], 'nosniff', range)
        assert.equal(res.headers['content-disposition'], undefined, range)
      }
    })

    test('conditional requests: If-None-Match, If-Modified-Since and If-Range', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id, { content: '0123456789' })
      const etag = `"${file.sha256}"`
      const lastModified = new Date(file.createdAt).toUTCString()
      const earlier = new Date(file.createdAt - 60_000).toUTCString()

      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await download(c, a, file.id, { 'if-none-match': ifNoneMatch })
        assert.equal(res.status, 304, ifNoneMatch)
        assert.equal(res.body, '')
        assert.deepEqual(headersOf(res), {
          ...SAFETY,
          etag,
          'last-modified': lastModified,
          'accept-ranges': 'bytes',
        })
      }
      const stale: Record<string, string>[] = [
        { 'if-none-match': '"other"' },
        { 'if-modified-since': earlier },
        // If-None-Match decides alone when present.
        { 'if-none-match': '"other"', 'if-modified-since': lastModified },
      ]
      for (const headers of stale) {
        const res = await download(c, a, file.id, headers)
        assert.equal(res.status, 200, JSON.stringify(headers))
        assert.equal(res.body, '0123456789')
      }
      assert.equal((await download(c, a, file.id, { 'if-modified-since': lastModified })).status, 304)

      for (const [ifRange, status, body] of [
        [etag, 206, '234'],
        [lastModified, 206, '234'],
        ['"other"', 200, '0123456789'],
        [`W/${etag}`, 200, '0123456789'],
        [earlier, 200, '0123456789'],
      ] as const) {
        const res = await download(c, a, file.id, { range: 'bytes=2-4', 'if-range': ifRange })
        assert.equal(res.status, status, ifRange)
        assert.equal(res.body, body, ifRange)
      }
    })

    test('Content-Disposition carries an ASCII fallback and the exact name in RFC 8187 form', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      for (const [name, fallback, encoded] of [
        ['Résumé 日本.pdf', 'R_sum_ __.pdf', 'R%C3%A9sum%C3%A9%20%E6%97%A5%E6%9C%AC.pdf'],
        ['say "hi" \\ back.txt', 'say \\"hi\\" \\\\ back.txt', 'say%20%22hi%22%20%5C%20back.txt'],
        ["it's (1) 100%*;x.txt", "it's (1) 100%*;x.txt", 'it%27s%20%281%29%20100%25%2A%3Bx.txt'],
        ['😀\u0007.txt', '__.txt', '%F0%9F%98%80%07.txt'],
      ]) {
        const file = await createFile(c, a.id, { name })
        for (const disposition of ['attachment', 'inline']) {
          const res = await download(c, a, file.id, {}, `?disposition=${disposition}`)
          assert.equal(res.status, 200)
          const header = `${disposition}; filename="${fallback}"; filename*=UTF-8''${encoded}`
          assert.equal(res.headers['content-disposition'], header, name)
          assert.equal(decodeURIComponent(header.split("UTF-8''")[1] as string), name)
        }
      }
    })

    test('inline serves the stored type only when it is safe to render', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const octet = 'application/octet-stream'
      for (const [stored, attachment, inline] of [
        ['image/png', 'image/png', 'image/png'],
        ['IMAGE/JPEG', 'IMAGE/JPEG', 'IMAGE/JPEG'],
        ['application/pdf', 'application/pdf', 'application/pdf'],
        ['text/plain; charset=utf-8', 'text/plain; charset=utf-8', 'text/plain; charset=utf-8'],
        ['video/mp4', 'video/mp4', 'video/mp4'],
        ['audio/mpeg', 'audio/mpeg', 'audio/mpeg'],
        ['image/svg+xml', 'image/svg+xml', octet],
        ['text/html; charset=utf-8', 'text/html; charset=utf-8', octet],
        ['application/javascript', 'application/javascript', octet],
        ['application/xhtml+xml', 'application/xhtml+xml', octet],
        ['not a type', octet, octet],
        ['text/plain\r\nset-cookie: a=b', octet, octet],
        ['text/plain; name="é"', octet, octet],
      ]) {
        const file = await createFile(c, a.id, { contentType: stored as string })
        const res = await download(c, a, file.id)
        assert.equal(res.status, 200, stored)
        assert.equal(res.headers['content-type'], attachment, stored)
        assert.equal(res.headers['set-cookie'], undefined)
        const shown = await download(c, a, file.id, {}, '?disposition=inline')
        assert.equal(shown.status, 200, stored)
        assert.equal(shown.headers['content-type'], inline, stored)
        assert.equal(shown.headers['content-security-policy'], CSP)
        assert.equal(shown.headers['x-content-type-options'], 'nosniff')
      }
      const file = await createFile(c, a.id)
      assert.match(
        assertError(await download(c, a, file.id, {}, '?disposition=bogus'), 400, 'invalid_request'),
        /disposition.*attachment, inline/,
      )
      assertError(await download(c, a, file.id, {}, '?disposition='), 400, 'invalid_request')
      assertError(await download(c, a, file.id, {}, '?download=1'), 400, 'invalid_request')
    })

    test('an empty file downloads empty; no byte range can be satisfied', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id, { content: '' })
      const res = await download(c, a, file.id)
      assert.equal(res.status, 200)
      assert.equal(res.body, '')
      assert.equal(res.headers['content-length'], '0')
      const suffix = await download(c, a, file.id, { range: 'bytes=-5' })
      assert.equal(suffix.status, 200)
      assert.equal(suffix.body, '')
      const ranged = await download(c, a, file.id, { range: 'bytes=0-' })
      assertError(ranged, 416, 'range_not_satisfiable')
      assert.equal(ranged.headers['content-range'], 'bytes */0')
    })

    test('a file without a checksum is tagged by its id', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const id = newId('fil')
      const blobKey = blobKeyOf(a.id, id)
      await c.blobs.put(blobKey, Readable.from([Buffer.from('unchecked')]))
      await c.app.services.files.create({
        id,
        accountId: a.id,
        folderId: null,
        name: 'unchecked.txt',
        contentType: 'text/plain',
        size: 9,
        blobKey,
        sha256: null,
      })
      const res = await download(c, a, id)
      assert.equal(res.body, 'unchecked')
      assert.equal(res.headers.etag, `"${id}"`)
      assert.equal((await download(c, a, id, { 'if-none-match': `"${id}"` })).status, 304)
    })

    test('bytes missing from storage are a logged 404, never a 500', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const file = await createFile(c, a.id)
      await c.blobs.delete(file.blobKey)
      const res = await download(c, a, file.id)
      assert.match(assertError(res, 404, 'not_found'), new RegExp(`contents of file ${file.id}`))
      assert.equal(res.headers['content-disposition'], undefined)
      // HEAD answers as GET would.
      const head = await c.app.inject({
        method: 'HEAD',
        url: `/api/v1/files/${file.id}/download`,
        headers: { authorization: `Bearer ${a.token}` },
      })
      assert.equal(head.statusCode, 404)
      const logged = logs.filter((line) => line.includes(file.id))
      assert.equal(logged.length, 2)
      assert.match(logged[0] as string, /missing from the store/)
      assert.equal(JSON.parse(logged[0] as string).level, 50)
      assert.ok(!logs.some((line) => line.includes(a.token)), 'a credential reached the log')
    })

    test('a blob that cannot be deleted is logged and stays recorded; the sweep removes it later', async () => {
      const c = ctx()
      const a = await createAccount(c.app)
      const stuck = await createFile(c, a.id)
      const other = await createFile(c, a.id)
      const original = c.blobs.delete.bind(c.blobs)
      c.blobs.delete = async (key: string) => {
        if (key === stuck.blobKey) throw new Error('disk says no')
        return original(key)
      }
      try {
        // Deleted, then deleted for good from the trash: one alone, then the rest with the trash emptied.
        const one = await call(c.app, 'DELETE', `/api/v1/files/${stuck.id}`, { token: a.token })
        assert.deepEqual(one.body, { data: { id: stuck.id } })
        const forGood = await call(c.app, 'DELETE', `/api/v1/trash/${stuck.id}`, { token: a.token })
        assert.deepEqual(forGood.body, { data: { id: stuck.id } })
        const more = await call(c.app, 'DELETE', '/api/v1/files', {
          token: a.token,
          body: { fileIds: [other.id] },
        })
        assert.deepEqual(more.body, { data: { deletedIds: [other.id] } })
        const emptied = await call(c.app, 'DELETE', '/api/v1/trash', { token: a.token })
        assert.deepEqual(emptied.body, { data: { deletedCount: 1 } })
      } finally {
        c.blobs.delete = original
      }
      assertError(await call(c.app, 'GET', `/api/v1/files/${stuck.id}`, { token: a.token }), 404, 'not_found')
      assert.deepEqual(await c.blobs.stat(stuck.blobKey), { size: stuck.content.length })
      assert.equal(await c.blobs.stat(other.blobKey), undefined)
      const logged = logs.filter((line) => line.includes(stuck.blobKey))
      assert.equal(logged.length, 1)
      assert.match(logged[0] as string, /the sweep will retry/)
      assert.match(logged[0] as string, /disk says no/)
      const recorded = await c.db.kysely.selectFrom('blob_deletions').select('key').execute()
      assert.deepEqual(
        recorded.map((row) => row.key),
        [stuck.blobKey],
      )

      // The disk works again: the next sweep removes the blob and forgets it.
      assert.equal(await c.app.jobs.blobDeletions.sweep(), 1)
      assert.equal(await c.blobs.stat(stuck.blobKey), undefined)
      assert.deepEqual(await c.db.kysely.selectFrom('blob_deletions').select('key').execute(), [])
    })
  },
  { env: { LOG_LEVEL: 'warn' }, logger: { stream: logStream } },
)
