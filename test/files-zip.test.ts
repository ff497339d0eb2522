// "Download as one zip": a selection of the owner's files (POST /files/zip) or a whole folder
// (GET /folders/{id}/zip), streamed as it is built (src/resources/files/zip/zip-stream.ts, zip.service.ts). Each archive
// is unpacked by two independent readers, Info-ZIP's unzip and Python's zipfile, and must give back the same
// bytes under safe, unique names, whether the file's CRC-32 was stored by upload processing or is computed as
// its bytes pass. Also: the CRC that processing stores; a folder larger than one page of rows (no
// Content-Length, read as the archive goes); another account's ids; CSRF; signed out; a blob missing before
// and after the first byte; and ZIP64 (over 65,535 entries, entries and offsets past 4 GiB) on the writer
// itself.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { crc32 } from 'node:zlib'
import { FilesRepository } from '../src/resources/files/files.repository.ts'
import { FilesZipService } from '../src/resources/files/zip/zip.service.ts'
import { EntryNames, safeEntryName } from '../src/resources/files/zip/zip-names.ts'
import { type ZipEntry, ZipStream, zipLength } from '../src/resources/files/zip/zip-stream.ts'
import { FoldersRepository } from '../src/resources/folders/folders.repository.ts'
import { createFolder, insertFiles } from './support/files-helpers.ts'
import { captureLogs, createAccount, createFile, ENGINES, type TestAccount } from './support/harness.ts'
import {
  digestsSettled,
  type ListeningContext,
  prepareUploads,
  startListening,
  uploadWithGrant,
  waitForUpload,
} from './support/uploads.ts'
import { newOwner, WebClient } from './support/web-client.ts'

const run = promisify(execFile)
const MiB = 1024 * 1024
const ZEROS = Buffer.alloc(MiB)
/** Any page of the app with a form: where the tests take a CSRF token bound to the session. */
const FORM_PAGE = '/account/keys'
const UNZIP = '/usr/bin/unzip'
const unzipMissing = existsSync(UNZIP) ? false : 'Info-ZIP unzip is absent (apt-get install -y unzip)'

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex')

/** What Python's zipfile reads in an archive: every entry's name, CRC, size, flags, date and bytes' digest. */
interface PythonEntry {
  name: string
  crc: number
  size: number
  flags: number
  date: number[]
  sha256: string
}

const PYTHON_READER = `
import hashlib, json, sys, zipfile
# Reading an entry to its end checks its CRC (zipfile raises BadZipFile on a mismatch).
hashing = sys.argv[2] == "hash"
with zipfile.ZipFile(sys.argv[1]) as z:
    entries = []
    for info in z.infolist():
        digest = hashlib.sha256()
        with z.open(info) as f:
            if not hashing and info.file_size > (16 << 20):
                # Opening checks the local header the records point to; the bytes' CRC is not read for this.
                assert len(f.read(1024)) == 1024
                entries.append({"name": info.filename, "crc": info.CRC, "size": info.file_size,
                                "flags": info.flag_bits, "date": list(info.date_time), "sha256": ""})
                continue
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                if hashing:
                    digest.update(chunk)
        entries.append({"name": info.filename, "crc": info.CRC, "size": info.file_size,
                        "flags": info.flag_bits, "date": list(info.date_time), "sha256": digest.hexdigest()})
    print(json.dumps(entries))
`

/**
 * `hash`: the SHA-256 of each entry's bytes too (read, and their CRC checked, either way); without it, an entry
 * over 16 MiB is only opened (zipfile checks its local header) and its first KiB read.
 */
async function readWithPython(zipPath: string, hash = true): Promise<PythonEntry[]> {
  const { stdout } = await run('python3', ['-c', PYTHON_READER, zipPath, hash ? 'hash' : 'crc'], {
    maxBuffer: 256 * MiB,
  })
  return JSON.parse(stdout) as PythonEntry[]
}

/** Unpacks with Info-ZIP's unzip into a new folder; returns every path found under it, with its bytes. */
async function unpackWithUnzip(zipPath: string): Promise<Map<string, Buffer>> {
  const { stdout } = await run(UNZIP, ['-t', zipPath], { env: { ...process.env, LC_ALL: 'C.UTF-8' } })
  assert.match(stdout, /No errors detected/)
  const parent = await mkdtemp(path.join(tmpdir(), 'coffer-unzip-'))
  const into = path.join(parent, 'out')
  await mkdir(into)
  try {
    await run(UNZIP, ['-q', zipPath, '-d', into], { env: { ...process.env, LC_ALL: 'C.UTF-8' } })
    // Nothing may land beside the folder it unpacks into.
    assert.deepEqual(await readdir(parent), ['out'])
    const found = new Map<string, Buffer>()
    for (const entry of await readdir(into, { recursive: true, withFileTypes: true })) {
      const full = path.join(entry.parentPath, entry.name)
      assert.ok(entry.isFile(), `${full} is a plain file`)
      found.set(path.relative(into, full), await readFile(full))
    }
    return found
  } finally {
    await rm(parent, { recursive: true, force: true })
  }
}

/** Writes a zip download's body to a temporary file; `use` gets its path. */
async function withZipFile<T>(body: Buffer, use: (zipPath: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'coffer-zip-'))
  const zipPath = path.join(dir, 'download.zip')
  try {
    await writeFile(zipPath, body)
    return await use(zipPath)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Both readers agree that the archive holds exactly `expected` (name → bytes), in this order. */
async function assertUnpacksTo(body: Buffer, expected: [string, Buffer][]): Promise<PythonEntry[]> {
  return withZipFile(body, async (zipPath) => {
    const entries = await readWithPython(zipPath)
    assert.deepEqual(
      entries.map((e) => [e.name, e.size, e.sha256]),
      expected.map(([name, bytes]) => [name, bytes.length, sha256(bytes)]),
    )
    for (const [i, e] of entries.entries()) {
      assert.equal(e.crc, crc32(expected[i]?.[1] as Buffer), `${e.name}: CRC`)
      assert.equal(e.flags & 0x0800, 0x0800, `${e.name}: the UTF-8 flag`)
    }
    const unpacked = await unpackWithUnzip(zipPath)
    assert.deepEqual(
      [...unpacked].map(([name, bytes]) => [name, sha256(bytes)]).sort(),
      expected.map(([name, bytes]) => [name, sha256(bytes)]).sort(),
    )
    return entries
  })
}

/** A file uploaded through the real path: prepared with the API, bytes sent by @vercel/blob, processed. */
async function upload(c: ListeningContext, token: string, name: string, content: Buffer, folderId?: string) {
  const [grant] = await prepareUploads(
    c.base,
    token,
    [{ name, type: 'application/octet-stream', size: content.length }],
    folderId,
  )
  assert.ok(grant)
  await uploadWithGrant(grant, content)
  const status = await waitForUpload(grant, token)
  assert.equal(status.status, 'complete', JSON.stringify(status))
  return status.status === 'complete' ? status.result.id : ''
}

async function storedCrc(c: ListeningContext, fileId: string): Promise<number | null> {
  await digestsSettled(c, fileId)
  const row = await c.db.kysely
    .selectFrom('files')
    .select('crc32')
    .where('id', '=', fileId)
    .executeTakeFirstOrThrow()
  return row.crc32 === null ? null : Number(row.crc32)
}

/** A signed-in owner of the app, with an API key for what the tests make through the API. */
async function owner(c: ListeningContext): Promise<TestAccount & { web: WebClient }> {
  const { id, email } = await newOwner(c.app)
  const web = await WebClient.signedIn(c.app, email)
  const { secret } = await c.app.services.apiKeys.create({
    accountId: id,
    name: 'test',
    scopes: ['files:read', 'files:write', 'folders:read', 'folders:write'],
  })
  return { id, email, token: secret, key: async () => secret, web }
}

const postZip = (web: WebClient, fileIds: string[], extra: Record<string, string> = {}) =>
  web.post('/files/zip', { fileIds, ...extra }, FORM_PAGE)

for (const engine of ENGINES) {
  describe(`zip downloads [${engine}]`, { skip: unzipMissing }, () => {
    let c: ListeningContext
    const logs = captureLogs('info')
    before(async () => {
      c = await startListening(engine, { logger: logs.logger, env: { LOG_LEVEL: 'info' } })
      // Where the @vercel/blob client sends the bytes of an upload.
      process.env.VERCEL_BLOB_API_URL = `${c.base}/blob`
    })
    after(async () => {
      await c?.stop()
    })

    test('upload processing stores the CRC-32 of the bytes, in one part and in several', async () => {
      const o = await owner(c)
      for (const content of [randomBytes(100_000), randomBytes(6 * MiB + 123)]) {
        const id = await upload(c, o.token, 'bytes.bin', content)
        assert.equal(await storedCrc(c, id), crc32(content), `${content.length} bytes`)
      }
    })

    test('a selection unpacks to the same bytes, with and without stored CRCs, names made safe and unique', async () => {
      const o = await owner(c)
      const other = await owner(c)
      const big = randomBytes(3 * MiB + 17)
      const uploaded = await upload(c, o.token, 'Report.pdf', big)
      const withoutCrc = async (name: string, content: Buffer | string) =>
        (await createFile(c, o.id, { name, content })).id
      const files: [string, string, Buffer][] = [
        // [file id, name inside the zip, bytes]
        [uploaded, 'Report.pdf', big],
        [await withoutCrc('report.pdf', 'second report'), 'report (2).pdf', Buffer.from('second report')],
        [await withoutCrc('REPORT.pdf', 'third report'), 'REPORT (3).pdf', Buffer.from('third report')],
        [await withoutCrc('report (2).pdf', 'fourth'), 'report (2) (2).pdf', Buffer.from('fourth')],
        [await withoutCrc('../../evil.txt', 'up'), '.._.._evil.txt', Buffer.from('up')],
        [await withoutCrc('/etc/passwd', 'root'), '_etc_passwd', Buffer.from('root')],
        [await withoutCrc('C:\\Windows\\win.ini', 'ini'), 'C__Windows_win.ini', Buffer.from('ini')],
        [await withoutCrc('..', 'dots'), '_', Buffer.from('dots')],
        [
          await withoutCrc('tab\tbell\u0007del\u007fnel\u0085.txt', 'ctl'),
          'tab_bell_del_nel_.txt',
          Buffer.from('ctl'),
        ],
        [await withoutCrc('שלום עולם 🎉.txt', 'utf-8'), 'שלום עולם 🎉.txt', Buffer.from('utf-8')],
        [await withoutCrc('empty.txt', ''), 'empty.txt', Buffer.alloc(0)],
      ]
      assert.equal(await storedCrc(c, uploaded), crc32(big))
      assert.equal(await storedCrc(c, files[1]?.[0] as string), null, 'a file made before CRCs were stored')
      const foreign = (await createFile(c, other.id, { name: 'not yours.txt' })).id
      const ids = [...files.map(([id]) => id), foreign, 'fil_absent', uploaded]

      const res = await postZip(o.web, ids)
      assert.equal(res.statusCode, 200, res.body.slice(0, 300))
      assert.equal(res.headers['content-type'], 'application/zip')
      assert.equal(
        res.headers['content-disposition'],
        `attachment; filename="Coffer files (11).zip"; filename*=UTF-8''Coffer%20files%20%2811%29.zip`,
      )
      assert.equal(res.headers['cache-control'], 'no-store')
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(Number(res.headers['content-length']), res.rawPayload.length, 'Content-Length is exact')
      const entries = await assertUnpacksTo(
        res.rawPayload,
        files.map(([, name, bytes]) => [name, bytes]),
      )
      // The date is the file's creation, in UTC (DOS time has 2-second steps).
      const created = new Date((await c.app.services.files.get(o.id, uploaded)).createdAt)
      const [year, month, day, hours, minutes, seconds] = entries[0]?.date ?? []
      assert.deepEqual(
        [year, month, day, hours, minutes, seconds],
        [
          created.getUTCFullYear(),
          created.getUTCMonth() + 1,
          created.getUTCDate(),
          created.getUTCHours(),
          created.getUTCMinutes(),
          created.getUTCSeconds() & ~1,
        ],
      )
      // The stored CRC went into the header; the others were computed and sent after their bytes.
      assert.equal((entries[0]?.flags ?? 0) & 0x0008, 0, 'no data descriptor where the CRC was known')
      assert.equal((entries[1]?.flags ?? 0) & 0x0008, 0x0008, 'a data descriptor where it was not')
    })

    test('a folder unpacks to its files, named after the folder', async () => {
      const o = await owner(c)
      const folder = await createFolder(c.app, o, 'Holiday "2026" / photos')
      const a = randomBytes(2 * MiB)
      await upload(c, o.token, 'a.jpg', a, folder.id)
      await createFile(c, o.id, { name: 'b.txt', content: 'b', folderId: folder.id })
      await createFile(c, o.id, { name: 'elsewhere.txt', content: 'not in the folder' })
      const res = await o.web.get(`/folders/${folder.id}/zip`)
      assert.equal(res.statusCode, 200, res.body.slice(0, 300))
      assert.equal(
        res.headers['content-disposition'],
        `attachment; filename="Holiday \\"2026\\" / photos.zip"; filename*=UTF-8''Holiday%20%222026%22%20%2F%20photos.zip`,
      )
      assert.equal(Number(res.headers['content-length']), res.rawPayload.length)
      // Newest first, as the folder's list shows them.
      await assertUnpacksTo(res.rawPayload, [
        ['b.txt', Buffer.from('b')],
        ['a.jpg', a],
      ])
      const empty = await createFolder(c.app, o, 'Empty')
      const none = await o.web.get(`/folders/${empty.id}/zip`)
      assert.equal(none.statusCode, 200)
      assert.equal(none.rawPayload.length, 22, 'an empty archive: its end record alone')
    })

    test('a folder larger than a page of rows is read while it is sent, without Content-Length', async () => {
      const o = await owner(c)
      const folder = await createFolder(c.app, o, 'Many')
      const count = 1_003
      await insertFiles(c, o.id, [1, count], ['n', '.txt'], folder.id)
      // insertFiles gives each row one byte under the key `k/<account>/<n>`: the blobs, put in the store.
      await Promise.all(
        Array.from({ length: count }, (_, i) =>
          c.blobs.put(`k/${o.id}/${i + 1}`, Buffer.from(String((i + 1) % 10))),
        ),
      )
      const response = await fetch(`${c.base}/folders/${folder.id}/zip`, { headers: cookieHeader(o.web) })
      assert.equal(response.status, 200)
      assert.equal(response.headers.get('content-length'), null)
      assert.equal(response.headers.get('transfer-encoding'), 'chunked')
      const body = Buffer.from(await response.arrayBuffer())
      await withZipFile(body, async (zipPath) => {
        const entries = await readWithPython(zipPath)
        assert.equal(entries.length, count)
        assert.deepEqual(
          entries.map((e) => [e.name, e.sha256]),
          Array.from({ length: count }, (_, i) => {
            const n = count - i
            return [`n${n}.txt`, sha256(Buffer.from(String(n % 10)))]
          }),
        )
      })
    })

    test('a slow client over a real socket gets the exact bytes of blobs that share their buffers', async () => {
      // Each blob's bytes go from two buffers, shared from one blob to the next, straight into the socket, and
      // each blob's first read starts while the last one's bytes are written; a buffer read again before the
      // socket took its bytes would send another blob's bytes.
      const o = await owner(c)
      // More than the socket's buffers hold, so that writes wait in the process for a reader that is slow; blobs
      // of one read (up to 1 MiB) after one another, each read ahead into the buffer the last one did not use.
      const contents = [
        randomBytes(9 * MiB + 5),
        randomBytes(1),
        randomBytes(7 * MiB),
        randomBytes(700_000),
        randomBytes(MiB),
        randomBytes(MiB - 1),
        randomBytes(123_456),
        randomBytes(5 * MiB + 1),
      ]
      const files = []
      for (const [i, content] of contents.entries()) {
        const file = await createFile(c, o.id, { name: `part ${i}.bin`, content })
        await c.db.kysely
          .updateTable('files')
          .set({ crc32: crc32(content) })
          .where('id', '=', file.id)
          .execute()
        files.push(file)
      }
      const token = await o.web.csrfToken(FORM_PAGE)
      const response = await fetch(`${c.base}/files/zip`, {
        method: 'POST',
        headers: { ...cookieHeader(o.web), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams([...files.map((file) => ['fileIds', file.id]), ['_csrf', token]]),
      })
      assert.equal(response.status, 200)
      const chunks: Buffer[] = []
      for await (const chunk of response.body as ReadableStream<Uint8Array>) {
        chunks.push(Buffer.from(chunk))
        await new Promise((resolve) => setTimeout(resolve, 2))
      }
      await assertUnpacksTo(
        Buffer.concat(chunks),
        contents.map((content, i) => [`part ${i}.bin`, content]),
      )
    })

    test('a client that goes away in the middle leaves no blob open', async () => {
      const o = await owner(c)
      const files = []
      for (let i = 0; i < 6; i++) {
        files.push(await createFile(c, o.id, { name: `f${i}.bin`, content: randomBytes(4 * MiB) }))
      }
      const openFiles = async () => (await readdir('/proc/self/fd')).length
      const before = await openFiles()
      const token = await o.web.csrfToken(FORM_PAGE)
      const abort = new AbortController()
      const response = await fetch(`${c.base}/files/zip`, {
        method: 'POST',
        headers: { ...cookieHeader(o.web), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams([...files.map((file) => ['fileIds', file.id]), ['_csrf', token]]),
        signal: abort.signal,
      })
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      await reader.read()
      abort.abort()
      await reader.read().catch(() => undefined)
      // The blobs opened ahead and the one being sent are closed once the server sees the socket close.
      const deadline = Date.now() + 5000
      while ((await openFiles()) > before && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      assert.ok((await openFiles()) <= before, `${await openFiles()} descriptors open, ${before} before`)
    })

    test("another account's files and folder answer 404 pages", async () => {
      const o = await owner(c)
      const other = await owner(c)
      const theirs = await createFile(c, other.id, { name: 'theirs.txt' })
      const theirFolder = await createFolder(c.app, other, 'Theirs')
      for (const res of [
        await postZip(o.web, [theirs.id]),
        await postZip(o.web, ['fil_absent']),
        await o.web.get(`/folders/${theirFolder.id}/zip`),
        await o.web.get('/folders/fol_absent/zip'),
      ]) {
        assert.equal(res.statusCode, 404)
        assert.match(String(res.headers['content-type']), /^text\/html/)
        assert.doesNotMatch(res.body, /theirs|Theirs/)
      }
    })

    test('a selection of nothing, or of too many, is a page that says so', async () => {
      const o = await owner(c)
      const none = await postZip(o.web, [], { action: 'zip' })
      assert.equal(none.statusCode, 400)
      assert.match(none.body, /No files selected/)
      const tooMany = await postZip(
        o.web,
        Array.from({ length: 1001 }, (_, i) => `fil_${i}`),
      )
      assert.equal(tooMany.statusCode, 400)
      assert.match(tooMany.body, /Too many files selected/)
      assert.match(tooMany.body, /at most 1,000/)
    })

    test('the POST refuses a missing or forged CSRF token; signed out, both lead to sign-in', async () => {
      const o = await owner(c)
      const file = await createFile(c, o.id, { name: 'x.txt' })
      for (const token of [{ _csrf: 'forged' }, {}] as Record<string, string>[]) {
        const body = new URLSearchParams({ fileIds: file.id, ...token }).toString()
        const res = await o.web.send('POST', '/files/zip', body, {
          accept: 'text/html',
          'content-type': 'application/x-www-form-urlencoded',
        })
        assert.equal(res.statusCode, 403)
        assert.match(String(res.headers['content-type']), /^text\/html/)
      }
      const stranger = new WebClient(c.app)
      const folder = await createFolder(c.app, o, 'Signed out')
      const get = await stranger.get(`/folders/${folder.id}/zip`)
      assert.equal(get.statusCode, 303)
      assert.equal(
        get.headers.location,
        `/account/sign-in?return_to=${encodeURIComponent(`/folders/${folder.id}/zip`)}`,
      )
      const post = await stranger.send('POST', '/files/zip', `fileIds=${file.id}`, {
        accept: 'text/html',
        'content-type': 'application/x-www-form-urlencoded',
      })
      assert.equal(post.statusCode, 303)
      assert.equal(post.headers.location, '/account/sign-in')
      // A script that asks for JSON is refused with a 401; curl, asking for anything, is sent to sign in.
      const script = await c.app.inject({
        method: 'GET',
        url: `/folders/${folder.id}/zip`,
        headers: { accept: 'application/json' },
      })
      assert.equal(script.statusCode, 401)
      const curl = await c.app.inject({
        method: 'GET',
        url: `/folders/${folder.id}/zip`,
        headers: { accept: '*/*' },
      })
      assert.equal(curl.statusCode, 303)
    })

    test('a blob missing after the first byte cuts the response and is logged; before it, a 404 page', async () => {
      const o = await owner(c)
      const first = await createFile(c, o.id, { name: 'first.bin', content: randomBytes(4 * MiB) })
      const lost = await createFile(c, o.id, { name: 'lost.bin', content: 'gone' })
      await c.blobs.delete(lost.blobKey)
      const token = await o.web.csrfToken(FORM_PAGE)
      const response = await fetch(`${c.base}/files/zip`, {
        method: 'POST',
        headers: { ...cookieHeader(o.web), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams([
          ['fileIds', first.id],
          ['fileIds', lost.id],
          ['_csrf', token],
        ]),
      })
      assert.equal(response.status, 200)
      const promised = Number(response.headers.get('content-length'))
      let received = 0
      await assert.rejects(async () => {
        for await (const chunk of response.body as ReadableStream<Uint8Array>) received += chunk.length
      }, 'the download fails rather than end as if complete')
      assert.ok(received < promised, `${received} of ${promised} bytes`)
      await waitFor(() => logs.text().includes(lost.id))
      const line = logs.lines().find((l) => l.fileId === lost.id)
      assert.equal(line?.msg, 'the blob of a file is missing from the store (zip)')
      assert.equal(line?.level, 50)

      const missingFirst = await postZip(o.web, [lost.id, first.id])
      assert.equal(missingFirst.statusCode, 404)
      assert.match(String(missingFirst.headers['content-type']), /^text\/html/)
      assert.equal(missingFirst.headers['content-disposition'], undefined)
    })
  })
}

function cookieHeader(web: WebClient): Record<string, string> {
  return { cookie: [...web.cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
}

async function waitFor(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    assert.ok(Date.now() < deadline, 'timed out')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('zip names', () => {
  test('are one plain file name each, at most 255 bytes, keeping the extension', () => {
    assert.equal(safeEntryName('a/b\\c:d*e?f"g<h>i|j.txt'), 'a_b_c_d_e_f_g_h_i_j.txt')
    assert.equal(safeEntryName('.'), '_')
    assert.equal(safeEntryName('   '), 'file')
    assert.equal(safeEntryName('\ud800lone.txt'), '\ufffdlone.txt')
    assert.equal(safeEntryName('.profile'), '.profile')
    const long = safeEntryName(`${'é'.repeat(300)}.pdf`)
    assert.ok(Buffer.byteLength(long) <= 255)
    assert.ok(long.endsWith('é.pdf'))
  })

  test('usable on Windows and read as they are: no device name, trailing dot or space, or invisible character', () => {
    for (const [name, safe] of [
      ['CON.txt', '_CON.txt'],
      ['nul', '_nul'],
      ['aux.tar.gz', '_aux.tar.gz'],
      ['Com1.log', '_Com1.log'],
      ['lpt\u00B9', '_lpt\u00B9'],
      ['console.txt', 'console.txt'],
      ['report. . ', 'report'],
      ['notes.txt...', 'notes.txt'],
      ['...', 'file'],
      ['gnp\u202E.exe', 'gnp.exe'],
      ['in\u200Bvisi\u00ADble\u2060.pdf', 'invisible.pdf'],
      ['line\u2028break.txt', 'linebreak.txt'],
      ['cafe\u0301.txt', 'caf\u00E9.txt'],
    ] as const) {
      assert.equal(safeEntryName(name), safe, JSON.stringify(name))
    }
  })

  test('repeat with a number, regardless of case and normalization, in linear time', () => {
    const names = new EntryNames()
    assert.deepEqual(
      ['a.txt', 'A.TXT', 'a (2).txt', 'a.txt', 'b'].map((n) => names.name(n)),
      ['a.txt', 'A (2).TXT', 'a (2) (2).txt', 'a (3).txt', 'b'],
    )
    // NFC and NFD spellings of one name are one file on macOS: the second is numbered, in NFC.
    const accents = new EntryNames()
    assert.deepEqual(
      ['Caf\u00E9.txt', 'Cafe\u0301.txt', 'CAF\u00C9.TXT'].map((n) => accents.name(n)),
      ['Caf\u00E9.txt', 'Caf\u00E9 (2).txt', 'CAF\u00C9 (3).TXT'],
    )
    const many = new EntryNames()
    const started = performance.now()
    for (let i = 0; i < 20_000; i++) many.name('same.pdf')
    assert.equal(many.name('same.pdf'), 'same (20001).pdf')
    assert.ok(performance.now() - started < 2000)
  })
})

/** An entry of `size` zero bytes, which the writer gets in 1 MiB pieces. */
function zeros(
  name: string,
  size: number,
  crc: number | null,
  modifiedAt = Date.UTC(2026, 0, 2, 3, 4, 6),
): ZipEntry {
  return {
    name,
    size,
    crc32: crc,
    modifiedAt,
    open: async () => {
      let left = size
      return new Readable({
        read() {
          if (left === 0) return void this.push(null)
          const n = Math.min(left, ZEROS.length)
          left -= n
          this.push(ZEROS.subarray(0, n))
        },
      })
    },
  }
}

function allZeros(chunk: Buffer): boolean {
  for (let at = 0; at < chunk.length; at += ZEROS.length) {
    const piece = chunk.subarray(at, at + ZEROS.length)
    if (!piece.equals(ZEROS.subarray(0, piece.length))) return false
  }
  return true
}

/**
 * A file the archive is written into, sparsely: runs of zeros become holes, so that an archive of several
 * GiB costs no disk and reads back fast.
 */
async function sparseZip(stream: ZipStream, zipPath: string): Promise<number> {
  const handle = await open(zipPath, 'w')
  let position = 0
  try {
    await pipeline(
      stream,
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          const at = position
          position += chunk.length
          if (allZeros(chunk)) return done()
          handle.write(chunk, 0, chunk.length, at).then(() => done(), done)
        },
      }),
    )
    await handle.truncate(position)
  } finally {
    await handle.close()
  }
  return position
}

describe('the zip writer', { skip: unzipMissing }, () => {
  test('writes ZIP64 records past 65,535 entries', async () => {
    const count = 65_600
    const entries = Array.from({ length: count }, (_, i) =>
      zeros(`e${i}`, i % 3, i % 2 ? crc32(Buffer.alloc(i % 3)) : null),
    )
    const stream = new ZipStream(Readable.from(entries))
    const chunks: Buffer[] = []
    for await (const chunk of stream) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks)
    assert.equal(body.length, zipLength(entries))
    await withZipFile(body, async (zipPath) => {
      const found = await readWithPython(zipPath)
      assert.equal(found.length, count)
      assert.deepEqual(found.at(-1), {
        name: `e${count - 1}`,
        crc: crc32(Buffer.alloc((count - 1) % 3)),
        size: (count - 1) % 3,
        flags: 0x0800 | ((count - 1) % 2 ? 0 : 0x0008),
        date: [2026, 1, 2, 3, 4, 6],
        sha256: sha256(Buffer.alloc((count - 1) % 3)),
      })
      const { stdout } = await run(UNZIP, ['-tq', zipPath])
      assert.match(stdout, /No errors detected/)
    })
  })

  test('writes ZIP64 sizes and offsets past 4 GiB, with the CRC known and computed', async () => {
    const big = 4 * 1024 ** 3 + 10
    // zlib.crc32 of `big` and `big + 1` zero bytes, taken once: computing them here would take seconds.
    const KNOWN_CRC = 1804055020
    const COMPUTED_CRC = 2077607535
    const entries = [
      zeros('known.bin', big, KNOWN_CRC),
      zeros('after.bin', 100, null),
      zeros('computed.bin', big + 1, null),
      {
        ...zeros('last.txt', 5, crc32(Buffer.from('hello'))),
        open: async () => Readable.from([Buffer.from('hello')]),
      },
    ]
    const dir = await mkdtemp(path.join(tmpdir(), 'coffer-zip64-'))
    try {
      const zipPath = path.join(dir, 'big.zip')
      const length = await sparseZip(new ZipStream(Readable.from(entries)), zipPath)
      assert.equal(length, zipLength(entries))
      const found = await readWithPython(zipPath, false)
      assert.deepEqual(
        found.map((e) => [e.name, e.size, e.crc]),
        [
          ['known.bin', big, KNOWN_CRC],
          ['after.bin', 100, crc32(Buffer.alloc(100))],
          ['computed.bin', big + 1, COMPUTED_CRC],
          ['last.txt', 5, crc32(Buffer.from('hello'))],
        ],
      )
      // Info-ZIP reads the records too. Neither reader goes through the 8 GiB of zeros (minutes here): the CRC
      // the writer computes is checked on the smaller entries of the other tests; here, where records put bytes.
      const { stdout } = await run(UNZIP, ['-Zl', zipPath])
      assert.match(stdout, /^-rw-r--r-- .* 4294967306 .* known\.bin$/m)
      assert.match(stdout, /^-rw-r--r-- .* 4294967307 .* computed\.bin$/m)
      assert.match(stdout, /4 files, 8589934718 bytes uncompressed/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  test('a folder read in pages of rows gives each file once, in the folder order', async () => {
    // The service with a small page, through the repositories of a running app's database.
    const ctx = await startListening('sqlite')
    try {
      const account = await createAccount(ctx.app)
      const folder = await createFolder(ctx.app, account, 'Paged')
      const contents = new Map<string, Buffer>()
      for (let i = 0; i < 7; i++) {
        const file = await createFile(ctx, account.id, {
          name: 'same.txt',
          content: `file ${i}`,
          folderId: folder.id,
        })
        contents.set(file.id, file.content)
      }
      // The folder's order: newest first, then by id.
      const order = await ctx.db.kysely
        .selectFrom('files')
        .select('id')
        .where('folder_id', '=', folder.id)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute()
      const service = new FilesZipService({
        files: new FilesRepository(ctx.db),
        folders: new FoldersRepository(ctx.db),
        blobs: ctx.blobs,
        folderPage: 3,
      })
      const archive = await service.ofFolder(account.id, folder.id, { error: () => {} })
      assert.equal(archive.length, undefined)
      const chunks: Buffer[] = []
      for await (const chunk of archive.stream) chunks.push(chunk as Buffer)
      await assertUnpacksTo(
        Buffer.concat(chunks),
        order.map(({ id }, i) => [i === 0 ? 'same.txt' : `same (${i + 1}).txt`, contents.get(id) as Buffer]),
      )
    } finally {
      await ctx.stop()
    }
  })
})
