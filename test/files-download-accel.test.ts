// Downloads handed to nginx (DOWNLOAD_ACCEL_REDIRECT, README "Downloads through nginx"): a real nginx, run
// with examples/nginx.conf, in front of a real Coffer on a real port. Every download is asked of Coffer alone
// (a second app on the same database and blobs, without the setting) and of nginx in front of Coffer, and
// both must answer alike: bytes, status, validators, safety headers, Content-Disposition. Coffer, asked
// directly, shows who sends the bytes: an empty answer with X-Accel-Redirect when nginx does.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFile, utimes } from 'node:fs/promises'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type App, buildApp } from '../src/app.ts'
import type { BlobStore } from '../src/platform/blob/blob-store.ts'
import { ConfigError, loadConfig } from '../src/platform/config.ts'
import {
  captureLogs,
  createAccount,
  createFile,
  ENGINES,
  startApp,
  type TestAccount,
} from './support/harness.ts'
import {
  ACCEL_PREFIX,
  EXAMPLE_CONFIG,
  FLEET_CONFIG,
  type Nginx,
  nginxMissing,
  startNginx,
} from './support/nginx.ts'
import { shareCounts, shareFile } from './support/shares.ts'
import { freePort, type ListeningContext, startListening } from './support/uploads.ts'

const MiB = 1024 * 1024
const CSP = "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'; sandbox"

/** The headers a download answer is judged by, in both modes. */
const COMPARED = [
  'content-type',
  'content-length',
  'content-range',
  'content-disposition',
  'etag',
  'last-modified',
  'cache-control',
  'x-content-type-options',
  'content-security-policy',
  'x-frame-options',
  'www-authenticate',
  'ratelimit-limit',
]

interface Answer {
  status: number
  headers: Headers
  body: Buffer
}

async function ask(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  const response = await fetch(url, { method, headers, redirect: 'manual' })
  return {
    status: response.status,
    headers: response.headers,
    body: Buffer.from(await response.arrayBuffer()),
  }
}

function judged(answer: Answer): Record<string, string | null> {
  return Object.fromEntries(COMPARED.map((name) => [name, answer.headers.get(name)]))
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

describe('DOWNLOAD_ACCEL_REDIRECT: the setting', () => {
  test('takes the path of a location, and refuses anything else at start', () => {
    assert.equal(loadConfig({}).downloadAccelRedirect, undefined)
    assert.equal(loadConfig({ DOWNLOAD_ACCEL_REDIRECT: '' }).downloadAccelRedirect, undefined)
    for (const good of ['/_coffer_blobs/', '/internal/blobs/', '/a.b/']) {
      assert.equal(loadConfig({ DOWNLOAD_ACCEL_REDIRECT: good }).downloadAccelRedirect, good)
    }
    for (const bad of [
      '_coffer_blobs/',
      '/_coffer_blobs',
      '/',
      '//',
      '/../',
      '/./',
      '/a b/',
      '@blobs',
      '/a?b/',
    ]) {
      assert.throws(
        () => loadConfig({ DOWNLOAD_ACCEL_REDIRECT: bad }),
        (error: Error) =>
          error instanceof ConfigError && /DOWNLOAD_ACCEL_REDIRECT must be the path/.test(error.message),
        bad,
      )
    }
  })

  test('the README shows examples/nginx.conf and nginx-fleet.conf, the configurations the tests run, as they are', async () => {
    const readme = await readFile(path.resolve(import.meta.dirname, '../README.md'), 'utf8')
    const shown = [...readme.matchAll(/\n```nginx\n([\s\S]*?)```\n/g)].map((block) => block[1])
    assert.deepEqual(shown, [await readFile(FLEET_CONFIG, 'utf8'), await readFile(EXAMPLE_CONFIG, 'utf8')])
  })

  test('needs the local-disk store: any other is refused when the app is built', async () => {
    const ctx = await startApp('sqlite')
    try {
      // Another store with the same behaviour, as an S3 driver would be: nginx cannot serve its blobs.
      const local = ctx.blobs
      const elsewhere: BlobStore = {
        put: (key, data) => local.put(key, data),
        get: (key, range) => local.get(key, range),
        stat: (key) => local.stat(key),
        delete: (key) => local.delete(key),
        list: (prefix) => local.list(prefix),
        inventory: () => local.inventory(),
        leftovers: () => local.leftovers(),
        removeLeftover: (id) => local.removeLeftover(id),
        createMultipart: (key) => local.createMultipart(key),
        writePart: (upload, n, data, length) => local.writePart(upload, n, data, length),
        listParts: (upload) => local.listParts(upload),
        completeMultipart: (upload, parts) => local.completeMultipart(upload, parts),
        abortMultipart: (upload) => local.abortMultipart(upload),
      }
      const config = { ...ctx.config, downloadAccelRedirect: ACCEL_PREFIX }
      await assert.rejects(
        buildApp({ config, db: ctx.db, blobs: elsewhere, logger: false }),
        (error: Error) =>
          error instanceof ConfigError &&
          /DOWNLOAD_ACCEL_REDIRECT needs blobs on the local disk/.test(error.message),
      )
      const unset = await buildApp({ config: ctx.config, db: ctx.db, blobs: elsewhere, logger: false })
      await unset.close()
    } finally {
      await ctx.stop()
    }
  })
})

for (const engine of ENGINES) {
  describe(`downloads through nginx with X-Accel-Redirect [${engine}]`, { skip: nginxMissing }, () => {
    const logs = captureLogs()
    let coffer: ListeningContext
    let alone: { app: App; base: string } | undefined
    let nginx: Nginx | undefined
    before(async () => {
      coffer = await startListening(engine, {
        env: { DOWNLOAD_ACCEL_REDIRECT: ACCEL_PREFIX, LOG_LEVEL: 'warn' },
        logger: logs.logger,
        // nginx sends files from its own disk: the setting is for the local store only.
        blobStore: 'local',
      })
      const app = await buildApp({
        config: { ...coffer.config, downloadAccelRedirect: undefined },
        db: coffer.db,
        blobs: coffer.blobs,
        logger: false,
      })
      const port = await freePort()
      await app.listen({ port, host: '127.0.0.1' })
      alone = { app, base: `http://127.0.0.1:${port}` }
      nginx = await startNginx({ upstream: new URL(coffer.base).host, dataDir: coffer.dataDir })
    })
    after(async () => {
      await nginx?.stop()
      alone?.app.server.closeAllConnections()
      await alone?.app.close()
      await coffer?.stop()
    })

    /** The same request of Coffer alone and of nginx in front of Coffer. */
    async function both(path: string, headers: Record<string, string> = {}, method = 'GET') {
      assert.ok(alone && nginx)
      return {
        alone: await ask(`${alone.base}${path}`, headers, method),
        behind: await ask(`${nginx.base}${path}`, headers, method),
      }
    }

    /** What Coffer itself answers in the X-Accel-Redirect mode: where nginx finds the bytes, if it sends them. */
    async function redirectOf(path: string, headers: Record<string, string> = {}, method = 'GET') {
      const answer = await ask(`${coffer.base}${path}`, headers, method)
      const target = answer.headers.get('x-accel-redirect')
      if (target !== null) assert.equal(answer.body.length, 0, 'no byte comes with the redirect')
      return target
    }

    /**
     * A file whose blob was written an hour before its row, as a long upload's may be: nginx's own validators
     * (the file's time) then differ from Coffer's, and must not show.
     */
    async function fileOf(
      account: TestAccount,
      content: Buffer,
      name = 'photo.png',
      contentType = 'image/png',
    ) {
      const file = await createFile(coffer, account.id, { name, contentType, content })
      const written = new Date(file.createdAt - 3_600_000)
      await utimes(path.join(coffer.dataDir, 'blobs', `${file.blobKey}.blob`), written, written)
      return { ...file, written, path: `/api/v1/files/${file.id}/download` }
    }

    test('the whole file: nginx sends the bytes, with the headers Coffer sends alone', async () => {
      const a = await createAccount(coffer.app)
      const content = randomBytes(3 * MiB + 17)
      const file = await fileOf(a, content, 'Résumé 日本.png')
      assert.equal(
        await redirectOf(file.path, bearer(a.token)),
        `${ACCEL_PREFIX}files/${a.id}/${file.id}.blob`,
      )
      const { alone, behind } = await both(file.path, bearer(a.token))
      for (const answer of [alone, behind]) {
        assert.equal(answer.status, 200)
        assert.ok(answer.body.equals(content), 'the bytes differ')
        assert.deepEqual(judged(answer), {
          'content-type': 'image/png',
          'content-length': String(content.length),
          'content-range': null,
          'content-disposition': `attachment; filename="R_sum_ __.png"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%E6%97%A5%E6%9C%AC.png`,
          etag: `"${file.sha256}"`,
          'last-modified': new Date(file.createdAt).toUTCString(),
          'cache-control': 'private, no-cache',
          'x-content-type-options': 'nosniff',
          'content-security-policy': CSP,
          'x-frame-options': 'SAMEORIGIN',
          'www-authenticate': null,
          'ratelimit-limit': '600',
        })
        // Once: nginx's own, not Coffer's as well.
        assert.equal(answer.headers.get('accept-ranges'), 'bytes')
        // Each app counts on its own, so only their form is the same.
        assert.match(answer.headers.get('ratelimit-remaining') ?? '', /^\d+$/)
        assert.match(answer.headers.get('ratelimit-reset') ?? '', /^\d+$/)
      }
      assert.match(behind.headers.get('server') ?? '', /^nginx/)
      assert.equal(behind.headers.get('x-accel-redirect'), null)

      // Sent as stored, never compressed on the way (Debian's nginx compresses text/html by default).
      const page = await fileOf(a, Buffer.from('<p>hello</p>'.repeat(100)), 'page.html', 'text/html')
      const html = await both(page.path, { ...bearer(a.token), 'accept-encoding': 'gzip' })
      assert.deepEqual(judged(html.behind), judged(html.alone))
      assert.equal(html.behind.headers.get('content-encoding'), null)
      assert.equal(html.behind.body.toString(), '<p>hello</p>'.repeat(100))

      // Shown inline: the type Coffer allows, never one nginx would pick from the file name.
      const svg = await fileOf(
        a,
        Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
        'a.svg',
        'image/svg+xml',
      )
      const inline = await both(`${svg.path}?disposition=inline`, bearer(a.token))
      assert.deepEqual(judged(inline.behind), judged(inline.alone))
      assert.equal(inline.behind.headers.get('content-type'), 'application/octet-stream')
      assert.match(inline.behind.headers.get('content-disposition') ?? '', /^inline; filename="a.svg"/)
      assert.equal(inline.behind.body.toString(), '<svg xmlns="http://www.w3.org/2000/svg"/>')
    })

    test('a range: nginx sends the one Coffer reads; a Range of another form Coffer answers itself', async () => {
      const a = await createAccount(coffer.app)
      const content = randomBytes(2 * MiB + 5)
      const file = await fileOf(a, content)
      const etag = `"${file.sha256}"`
      const lastModified = new Date(file.createdAt).toUTCString()
      const n = content.length
      // [request headers, status, first byte, last byte, who sends the bytes]
      const cases: [Record<string, string>, number, number, number, 'nginx' | 'coffer'][] = [
        [{ range: 'bytes=0-0' }, 206, 0, 0, 'nginx'],
        [{ range: 'bytes=100-199' }, 206, 100, 199, 'nginx'],
        [{ range: `bytes=${MiB}-` }, 206, MiB, n - 1, 'nginx'],
        [{ range: 'bytes=-10' }, 206, n - 10, n - 1, 'nginx'],
        [{ range: 'bytes=-100000000' }, 206, 0, n - 1, 'nginx'],
        [{ range: 'bytes=5-100000000' }, 206, 5, n - 1, 'nginx'],
        [{ range: 'BYTES=7-8' }, 206, 7, 8, 'nginx'],
        [{ range: 'bytes=2-4', 'if-range': etag }, 206, 2, 4, 'nginx'],
        [{ range: 'bytes=2-4', 'if-range': lastModified }, 206, 2, 4, 'nginx'],
        [{ range: 'bytes=2-4', 'if-range': '"other"' }, 200, 0, n - 1, 'coffer'],
        // The same date in forms other than Coffer's: no HTTP date, so no match, for Coffer and nginx alike.
        [{ range: 'bytes=2-4', 'if-range': new Date(file.createdAt).toISOString() }, 200, 0, n - 1, 'coffer'],
        [{ range: 'bytes=2-4', 'if-range': lastModified.replace(/^\w+, /, '') }, 200, 0, n - 1, 'coffer'],
        [{ range: 'bytes=2-4', 'if-range': `W/${etag}` }, 200, 0, n - 1, 'coffer'],
        [{ range: 'bytes=0-1,4-5' }, 200, 0, n - 1, 'coffer'],
        [{ range: 'Bytes = 1-2' }, 206, 1, 2, 'coffer'],
        [{ range: 'bytes=0-1,' }, 206, 0, 1, 'coffer'],
        [{ range: 'bytes=5-2' }, 200, 0, n - 1, 'coffer'],
        [{ range: 'items=0-1' }, 200, 0, n - 1, 'coffer'],
        [{ range: 'bytes=0-99999999999999999999' }, 206, 0, n - 1, 'coffer'],
      ]
      for (const [headers, status, first, last, sender] of cases) {
        const label = JSON.stringify(headers)
        const request = { ...bearer(a.token), ...headers }
        const target = await redirectOf(file.path, request)
        assert.equal(target === null ? 'coffer' : 'nginx', sender, label)
        const { alone, behind } = await both(file.path, request)
        for (const answer of [alone, behind]) {
          assert.equal(answer.status, status, label)
          assert.ok(answer.body.equals(content.subarray(first, last + 1)), `${label}: the bytes differ`)
          assert.equal(answer.headers.get('content-length'), String(last - first + 1), label)
          assert.equal(
            answer.headers.get('content-range'),
            status === 206 ? `bytes ${first}-${last}/${n}` : null,
            label,
          )
        }
        assert.deepEqual(judged(behind), judged(alone), label)
      }
      // Outside the file: Coffer's 416, whoever is in front.
      const { alone, behind } = await both(file.path, { ...bearer(a.token), range: `bytes=${n}-` })
      for (const answer of [alone, behind]) {
        assert.equal(answer.status, 416)
        assert.equal(JSON.parse(answer.body.toString()).error.code, 'range_not_satisfiable')
        assert.equal(answer.headers.get('content-range'), `bytes */${n}`)
        assert.equal(answer.headers.get('x-content-type-options'), 'nosniff')
      }
    })

    test('HEAD and 304 are answered by Coffer, alike in both modes', async () => {
      const a = await createAccount(coffer.app)
      const content = randomBytes(MiB)
      const file = await fileOf(a, content)
      const get = await both(file.path, bearer(a.token))
      for (const headers of [{}, { range: 'bytes=10-19' }] as Record<string, string>[]) {
        const request = { ...bearer(a.token), ...headers }
        assert.equal(await redirectOf(file.path, request, 'HEAD'), null)
        const { alone, behind } = await both(file.path, request, 'HEAD')
        for (const answer of [alone, behind]) {
          assert.equal(answer.status, 'range' in headers ? 206 : 200)
          assert.equal(answer.body.length, 0)
        }
        assert.deepEqual(judged(behind), judged(alone))
        if (!('range' in headers)) assert.deepEqual(judged(behind), judged(get.behind))
        else assert.equal(behind.headers.get('content-range'), `bytes 10-19/${content.length}`)
      }

      const etag = `"${file.sha256}"`
      for (const headers of [
        { 'if-none-match': etag },
        { 'if-none-match': `"other", W/${etag}` },
        { 'if-modified-since': new Date(file.createdAt).toUTCString() },
        { 'if-none-match': etag, range: 'bytes=0-9' },
      ] as Record<string, string>[]) {
        const request = { ...bearer(a.token), ...headers }
        assert.equal(await redirectOf(file.path, request), null)
        const { alone, behind } = await both(file.path, request)
        for (const answer of [alone, behind]) {
          assert.equal(answer.status, 304, JSON.stringify(headers))
          assert.equal(answer.body.length, 0)
          assert.equal(answer.headers.get('etag'), etag)
          assert.equal(answer.headers.get('x-content-type-options'), 'nosniff')
          assert.equal(answer.headers.get('content-security-policy'), CSP)
          assert.equal(answer.headers.get('cache-control'), 'private, no-cache')
        }
      }
      // A copy that is not current still gets the bytes, from nginx, even one dated exactly when the blob's
      // file was written (which nginx alone would answer with a 304).
      const stale = { ...bearer(a.token), 'if-modified-since': file.written.toUTCString() }
      assert.notEqual(await redirectOf(file.path, stale), null)
      const { alone, behind } = await both(file.path, stale)
      for (const answer of [alone, behind]) {
        assert.equal(answer.status, 200)
        assert.ok(answer.body.equals(content))
      }
      assert.deepEqual(judged(behind), judged(alone))
    })

    test("a blob missing from the disk is Coffer's logged 404, not nginx's", async () => {
      const a = await createAccount(coffer.app)
      const file = await fileOf(a, randomBytes(1000))
      await coffer.blobs.delete(file.blobKey)
      assert.equal(await redirectOf(file.path, bearer(a.token)), null)
      for (const method of ['GET', 'HEAD']) {
        const { alone, behind } = await both(file.path, bearer(a.token), method)
        for (const answer of [alone, behind]) {
          assert.equal(answer.status, 404, method)
          assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8')
        }
        if (method === 'GET') {
          const { error } = JSON.parse(behind.body.toString())
          assert.equal(error.code, 'not_found')
          assert.match(error.message, new RegExp(`contents of file ${file.id}`))
        }
      }
      // Logged by the X-Accel-Redirect app each time it was asked (3 GETs and 1 HEAD, directly and through nginx).
      const missing = logs.lines().filter((line) => line.fileId === file.id)
      assert.equal(missing.length, 3)
      assert.ok(missing.every((line) => line.level === 50 && /missing from the store/.test(line.msg)))
    })

    test('a wrong or missing credential is refused by Coffer before nginx sends anything', async () => {
      const a = await createAccount(coffer.app)
      const other = await createAccount(coffer.app)
      const content = randomBytes(100_000)
      const file = await fileOf(a, content)
      const refusals: [Record<string, string>, number, string][] = [
        [{}, 401, 'unauthorized'],
        [{ authorization: 'Bearer cof_not_a_key' }, 401, 'unauthorized'],
        [{ authorization: 'Basic dXNlcjpwYXNz' }, 401, 'unauthorized'],
        [bearer(await a.key(['folders:read'])), 403, 'insufficient_scope'],
        [bearer(other.token), 404, 'not_found'],
      ]
      for (const [headers, status, code] of refusals) {
        const label = `${status} ${headers.authorization ?? 'no credential'}`
        assert.equal(await redirectOf(file.path, headers), null, label)
        const { alone, behind } = await both(file.path, headers)
        for (const answer of [alone, behind]) {
          assert.equal(answer.status, status, label)
          assert.equal(JSON.parse(answer.body.toString()).error.code, code, label)
          assert.ok(answer.body.length < 1000, label)
        }
        assert.equal(behind.headers.get('www-authenticate'), alone.headers.get('www-authenticate'), label)
      }
      // The internal location answers no client, even one that knows where the blob is.
      assert.ok(nginx)
      const blobPath = `${ACCEL_PREFIX}files/${a.id}/${file.id}.blob`
      for (const headers of [{}, bearer(a.token)]) {
        const direct = await ask(`${nginx.base}${blobPath}`, headers)
        assert.notEqual(direct.status, 200)
        assert.ok(!direct.body.includes(content.subarray(0, 64)), 'nginx served the blob to a client')
      }
    })

    test('a share download through nginx is counted before nginx sends it', async () => {
      const a = await createAccount(coffer.app)
      const content = randomBytes(MiB + 3)
      const file = await fileOf(a, content, 'shared.bin', 'application/octet-stream')

      const open = await shareFile(coffer, a, file.id)
      const download = `${open.path}/download`
      const { alone, behind } = await both(download)
      for (const answer of [alone, behind]) {
        assert.equal(answer.status, 200)
        assert.ok(answer.body.equals(content), 'the bytes differ')
      }
      assert.deepEqual(
        { ...judged(behind), 'ratelimit-limit': null },
        { ...judged(alone), 'ratelimit-limit': null },
      )
      assert.equal(behind.headers.get('content-security-policy'), CSP)
      assert.equal((await shareCounts(coffer, a, open.shareId)).downloadCount, 2)

      // One download allowed: counted (and its pass given) before the bytes, refused once used.
      const limited = await fileOf(a, content, 'once.bin', 'application/octet-stream')
      const once = await shareFile(coffer, a, limited.id, { maxDownloads: 1 })
      assert.ok(nginx)
      const first = await ask(`${nginx.base}${once.path}/download`)
      assert.equal(first.status, 200)
      assert.ok(first.body.equals(content))
      assert.match(first.headers.get('set-cookie') ?? '', /^coffer_download_pass=/)
      assert.equal((await shareCounts(coffer, a, once.shareId)).downloadCount, 1)
      const second = await ask(`${nginx.base}${once.path}/download`)
      assert.equal(second.status, 410)
      assert.match(second.headers.get('content-type') ?? '', /^text\/html/)
      assert.ok(!second.body.includes(content.subarray(0, 64)))
      assert.equal((await shareCounts(coffer, a, once.shareId)).downloadCount, 1)
    })

    test('a limited link’s pass gives through nginx exactly the bytes it was charged, whatever If-Range says', async () => {
      assert.ok(nginx)
      const a = await createAccount(coffer.app)
      const content = randomBytes(200_000)
      const file = await fileOf(a, content, 'limited.bin', 'application/octet-stream')
      const once = await shareFile(coffer, a, file.id, { maxDownloads: 1 })
      const url = `${nginx.base}${once.path}/download`
      const first = await ask(url, { range: 'bytes=0-0' })
      assert.equal(first.status, 206)
      const pass = (first.headers.get('set-cookie') ?? '').split(';')[0] as string
      assert.match(pass, /^coffer_download_pass=/)
      const lastModified = first.headers.get('last-modified') as string
      const etag = first.headers.get('etag') as string
      // The last byte with If-Range: the right validators give it (one byte of the pass); dates in forms that
      // are no HTTP date (which nginx took as a mismatch, sending the whole file for a byte charged), an old
      // date and another tag do not match, so they ask for the whole file: a second download, refused.
      const [, day, month, year, time] = /^\w+, (\d+) (\w+) (\d+) (\S+) GMT$/.exec(lastModified) ?? []
      const ifRanges: [string, number][] = [
        [new Date(lastModified).toISOString(), 410],
        [`${month} ${day} ${year} ${time} GMT`, 410],
        [`${day} ${month} ${year} ${time} GMT`, 410],
        [lastModified, 206],
        [etag, 206],
        ['Sunday, 06-Nov-94 08:49:37 GMT', 410],
        ['"another"', 410],
      ]
      let sent = 1
      for (const [ifRange, status] of ifRanges) {
        for (let i = 0; i < 3; i++) {
          const answer = await ask(url, { range: 'bytes=199999-199999', 'if-range': ifRange, cookie: pass })
          sent += answer.status === 206 ? answer.body.length : 0
          assert.equal(answer.status, status, ifRange)
          if (status === 206) assert.ok(answer.body.equals(content.subarray(199_999)), ifRange)
        }
      }
      assert.equal(sent, 7, 'one byte, then the last byte six times')
      assert.equal((await shareCounts(coffer, a, once.shareId)).downloadCount, 1)
    })
  })
}
