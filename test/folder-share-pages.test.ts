// The public pages of a folder link (issue 44, 2), over HTTP: the folder's files as they are now (newest first,
// paged), each file's page, bytes (as the API's, ranges too) and preview, Download all as one zip whose entries
// are the folder's files, what counts as a view or a download, the download limit (its passes scoped to one
// file), the password, the expiry, and what another account's or another folder's file ids get: nothing.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { test } from 'node:test'
import { crc32 } from 'node:zlib'
import type { App } from '../src/app.ts'
import { previewKeyOf } from '../src/platform/blob/blob-keys.ts'
import { PAGE_CSP } from '../src/platform/web/web.ts'
import { createFolder, newestFirst } from './support/files-helpers.ts'
import {
  call,
  createAccount,
  createFile,
  describeEachEngine,
  type TestAccount,
  type TestContext,
} from './support/harness.ts'

type Injected = Awaited<ReturnType<App['inject']>>

const inject = (
  app: App,
  method: 'GET' | 'POST' | 'HEAD',
  url: string,
  options: {
    cookie?: string
    form?: Record<string, string>
    headers?: Record<string, string>
    ip?: string
  } = {},
): Promise<Injected> =>
  app.inject({
    method,
    url,
    remoteAddress: options.ip ?? '127.0.0.1',
    headers: {
      ...options.headers,
      ...(options.cookie ? { cookie: options.cookie } : {}),
      ...(options.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    payload: options.form ? new URLSearchParams(options.form).toString() : undefined,
  })

/** A folder named `name` with `files` in it (oldest first), and its link with `extra` settings. */
async function sharedFolder(
  c: TestContext,
  a: TestAccount,
  name: string,
  files: { name: string; content?: Buffer | string; contentType?: string }[],
  extra: Record<string, unknown> = {},
) {
  const folder = await createFolder(c.app, a, name)
  const made = []
  for (const file of files) made.push(await createFile(c, a.id, { ...file, folderId: folder.id }))
  const res = await call(c.app, 'POST', '/api/v1/folder-shares', {
    token: a.token,
    body: { folderId: folder.id, ...extra },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  const page = new URL(res.body.data.publicUrl).pathname
  const fileUrls = (fileId: string) => {
    const base = `${page}/files/${fileId}`
    return { page: base, download: `${base}/download`, preview: `${base}/preview` }
  }
  return { folder, files: made, id: res.body.data.id as string, page, zip: `${page}/zip`, file: fileUrls }
}

async function counts(c: TestContext, a: TestAccount, shareId: string) {
  const res = await call(c.app, 'GET', `/api/v1/folder-shares/${shareId}`, { token: a.token })
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return { views: res.body.data.viewCount as number, downloads: res.body.data.downloadCount as number }
}

const patchLink = (c: TestContext, a: TestAccount, shareId: string, body: unknown) =>
  call(c.app, 'PATCH', `/api/v1/folder-shares/${shareId}`, { token: a.token, body })

const unescapeHtml = (text: string) =>
  text.replace(/&#(\d+);/g, (_, code) => String.fromCharCode(Number(code))).replaceAll('&amp;', '&')

/** The ids of the files a folder page lists, in its order, and its More files cursor. */
function listed(body: string, page: string): { ids: string[]; next: string | null } {
  const ids = [...body.matchAll(/<a class="file-link" href="([^"]+)">/g)].map((match) => {
    const href = unescapeHtml(match[1] as string)
    assert.ok(href.startsWith(`${page}/files/`), href)
    return decodeURIComponent(href.slice(`${page}/files/`.length))
  })
  const more = /<a class="button" href="([^"]+)">More files<\/a>/.exec(body)?.[1]
  const next = more ? new URL(unescapeHtml(more), 'http://x').searchParams.get('cursor') : null
  return { ids, next }
}

/** A zip's entries, read from its central directory: name and bytes of each, in order. */
function readZip(zip: Buffer): [string, Buffer][] {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]))
  assert.ok(end >= 0, 'an end of central directory record')
  const count = zip.readUInt16LE(end + 10)
  let at = zip.readUInt32LE(end + 16)
  const entries: [string, Buffer][] = []
  for (let i = 0; i < count; i++) {
    assert.equal(zip.readUInt32LE(at), 0x02014b50, 'a central directory header')
    const method = zip.readUInt16LE(at + 10)
    const size = zip.readUInt32LE(at + 24)
    const nameLength = zip.readUInt16LE(at + 28)
    const extraLength = zip.readUInt16LE(at + 30)
    const commentLength = zip.readUInt16LE(at + 32)
    const offset = zip.readUInt32LE(at + 42)
    const name = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8')
    assert.equal(method, 0, `${name} is stored`)
    assert.equal(zip.readUInt32LE(offset), 0x04034b50, `${name}: a local header`)
    const start = offset + 30 + zip.readUInt16LE(offset + 26) + zip.readUInt16LE(offset + 28)
    const bytes = zip.subarray(start, start + size)
    assert.equal(zip.readUInt32LE(at + 16), crc32(bytes), `${name}: its CRC-32`)
    entries.push([name, bytes])
    at += 46 + nameLength + extraLength + commentLength
  }
  return entries
}

/** The name=value of a Set-Cookie header, asserting its path. */
function cookieOf(setCookie: unknown, path: string): string {
  const header = String(Array.isArray(setCookie) ? setCookie[0] : setCookie)
  assert.match(header, /; HttpOnly/i)
  assert.match(header, new RegExp(`; Path=${path.replaceAll('/', '\\/')}(;|$)`), header)
  return header.split(';')[0] as string
}

function assertShowsNothing(res: Injected, what: string, secrets: string[]) {
  for (const secret of secrets) assert.ok(!res.body.includes(secret), `${what} shows ${secret}`)
}

describeEachEngine('folder share pages', (ctx) => {
  test('the page lists the files in the folder as they are now, newest first, 50 a page', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const link = await sharedFolder(
      c,
      a,
      'Team <docs> & "more"',
      Array.from({ length: 3 }, (_, i) => ({ name: `first ${i}.txt` })),
    )
    const elsewhere = await createFile(c, a.id, { name: 'not in the folder.txt' })
    const first = await inject(c.app, 'GET', link.page)
    assert.equal(first.statusCode, 200)
    assert.equal(first.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(first.headers['content-security-policy'], PAGE_CSP)
    assert.equal(first.headers['cache-control'], 'no-store')
    assert.ok(first.body.includes('<h1 id="folder-name">Team &#60;docs&#62; &#38; &#34;more&#34;</h1>'))
    assert.ok(!first.body.includes('<docs>'))
    assert.deepEqual(listed(first.body, link.page), {
      ids: newestFirst(link.files).map((f) => f.id),
      next: null,
    })
    assert.ok(!first.body.includes(elsewhere.name))
    assert.ok(first.body.includes(`href="${link.zip}"`), 'Download all')
    for (const file of link.files) assert.ok(first.body.includes(`href="${link.file(file.id).download}"`))

    // A file added later appears; one moved out, one trashed disappear; a renamed one shows its new name.
    const [oldest, middle, newest] = link.files as [
      (typeof link.files)[0],
      (typeof link.files)[0],
      (typeof link.files)[0],
    ]
    const added = await createFile(c, a.id, { name: 'added later.txt', folderId: link.folder.id })
    const movedIn = await call(c.app, 'PATCH', `/api/v1/files/${elsewhere.id}`, {
      token: a.token,
      body: { folderId: link.folder.id },
    })
    assert.equal(movedIn.status, 200, JSON.stringify(movedIn.body))
    const movedOut = await call(c.app, 'PATCH', `/api/v1/files/${middle.id}`, {
      token: a.token,
      body: { folderId: null },
    })
    assert.equal(movedOut.status, 200)
    assert.equal((await call(c.app, 'DELETE', `/api/v1/files/${newest.id}`, { token: a.token })).status, 200)
    await call(c.app, 'PATCH', `/api/v1/files/${oldest.id}`, {
      token: a.token,
      body: { name: 'renamed.txt' },
    })
    const now = await inject(c.app, 'GET', link.page)
    assert.deepEqual(
      listed(now.body, link.page).ids,
      newestFirst([added, elsewhere, oldest]).map((f) => f.id),
    )
    assert.ok(now.body.includes('renamed.txt') && now.body.includes('added later.txt'))
    assert.ok(!now.body.includes(middle.name) && !now.body.includes(newest.name))
    // A file restored from the trash is back.
    await call(c.app, 'POST', `/api/v1/trash/${newest.id}/restore`, { token: a.token })
    assert.deepEqual(
      listed((await inject(c.app, 'GET', link.page)).body, link.page).ids,
      newestFirst([added, elsewhere, oldest, newest]).map((f) => f.id),
    )

    // 53 files: 50 on the first page, 3 on the next, none twice, the More files link between them.
    const many = await sharedFolder(
      c,
      a,
      'Many',
      Array.from({ length: 53 }, (_, i) => ({ name: `many ${i}.txt` })),
    )
    const pageOne = listed((await inject(c.app, 'GET', many.page)).body, many.page)
    assert.equal(pageOne.ids.length, 50)
    assert.ok(pageOne.next)
    const second = await inject(c.app, 'GET', `${many.page}?cursor=${encodeURIComponent(pageOne.next)}`)
    assert.equal(second.statusCode, 200)
    const pageTwo = listed(second.body, many.page)
    assert.equal(pageTwo.next, null)
    assert.match(second.body, /First page<\/a>/)
    assert.deepEqual(
      [...pageOne.ids, ...pageTwo.ids],
      newestFirst(many.files).map((f) => f.id),
    )
    // An empty folder says so; a cursor that is not one is no page of files.
    const empty = await sharedFolder(c, a, 'Empty', [])
    const emptyPage = await inject(c.app, 'GET', empty.page)
    assert.equal(emptyPage.statusCode, 200)
    assert.match(emptyPage.body, /This folder is empty for now/)
    assert.ok(!emptyPage.body.includes(`href="${empty.zip}"`))
    const views = async () => (await counts(c, a, many.id)).views
    const before = await views()
    for (const query of ['?cursor=nonsense', '?cursor=a&cursor=b']) {
      const bad = await inject(c.app, 'GET', `${many.page}${query}`)
      assert.equal(bad.statusCode, 400, `${query}: ${bad.statusCode}`)
    }
    assert.equal(await views(), before, 'a page that is none counts no view')
  })

  test("each file's page, its bytes (as the API's: whole, ranges, HEAD) and its preview", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const bytes = randomBytes(100_000)
    const link = await sharedFolder(c, a, 'Data', [
      { name: 'data.bin', content: bytes, contentType: 'application/octet-stream' },
      { name: 'notes.txt', content: 'some <notes> to read', contentType: 'text/plain' },
      { name: 'photo.png', content: randomBytes(2000), contentType: 'image/png' },
    ])
    const [data, notes, photo] = link.files as [
      (typeof link.files)[0],
      (typeof link.files)[0],
      (typeof link.files)[0],
    ]
    // The photo's preview, as processing would have stored it.
    const webp = randomBytes(777)
    await c.blobs.put(previewKeyOf(a.id, photo.id), Readable.from([webp]))
    await c.db.kysely
      .insertInto('file_previews')
      .values({
        file_id: photo.id,
        blob_key: previewKeyOf(a.id, photo.id),
        content_type: 'image/webp',
        width: 40,
        height: 30,
        size: webp.length,
        created_at: Date.now(),
      })
      .execute()

    const page = await inject(c.app, 'GET', link.file(notes.id).page)
    assert.equal(page.statusCode, 200)
    assert.equal(page.headers['content-security-policy'], PAGE_CSP)
    assert.match(page.body, /<h1 id="file-name">notes\.txt<\/h1>/)
    assert.ok(page.body.includes('some &#60;notes&#62; to read'), 'the text shown, escaped')
    assert.ok(page.body.includes(`href="${link.page}">← All files in Data</a>`))
    assert.ok(page.body.includes(`href="${link.file(notes.id).download}"`))

    const whole = await inject(c.app, 'GET', link.file(data.id).download)
    assert.equal(whole.statusCode, 200)
    assert.ok(whole.rawPayload.equals(bytes), 'byte-identical')
    assert.equal(whole.headers['content-length'], String(bytes.length))
    assert.match(String(whole.headers['content-disposition']), /^attachment; filename="data\.bin"/)
    const viaApi = await c.app.inject({
      method: 'GET',
      url: `/api/v1/files/${data.id}/download`,
      headers: { authorization: `Bearer ${a.token}` },
    })
    assert.equal(whole.headers.etag, viaApi.headers.etag)
    assert.equal(whole.headers['content-type'], viaApi.headers['content-type'])
    for (const [range, from, to] of [
      ['bytes=0-99', 0, 99],
      ['bytes=500-', 500, bytes.length - 1],
      ['bytes=-10', bytes.length - 10, bytes.length - 1],
    ] as const) {
      const part = await inject(c.app, 'GET', link.file(data.id).download, { headers: { range } })
      assert.equal(part.statusCode, 206, range)
      assert.equal(part.headers['content-range'], `bytes ${from}-${to}/${bytes.length}`)
      assert.ok(part.rawPayload.equals(bytes.subarray(from, to + 1)), range)
    }
    const head = await inject(c.app, 'HEAD', link.file(data.id).download)
    assert.equal(head.statusCode, 200)
    assert.equal(head.headers['content-length'], String(bytes.length))
    assert.equal(head.rawPayload.length, 0)
    const inline = await inject(c.app, 'GET', `${link.file(notes.id).download}?disposition=inline`)
    assert.match(String(inline.headers['content-disposition']), /^inline/)
    assert.equal(inline.body, 'some <notes> to read')

    const preview = await inject(c.app, 'GET', link.file(photo.id).preview)
    assert.equal(preview.statusCode, 200)
    assert.equal(preview.headers['content-type'], 'image/webp')
    assert.ok(preview.rawPayload.equals(webp))
    assert.equal((await inject(c.app, 'HEAD', link.file(photo.id).preview)).statusCode, 200)
    assert.equal((await inject(c.app, 'GET', link.file(data.id).preview)).statusCode, 404, 'no preview')
    // The list shows the preview as the photo's thumbnail.
    assert.ok((await inject(c.app, 'GET', link.page)).body.includes(`src="${link.file(photo.id).preview}"`))
    assert.deepEqual(await counts(c, a, link.id), { views: 1, downloads: 3 })
  })

  test("Download all is one zip of the folder's files as they are now", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const link = await sharedFolder(c, a, 'Zipped', [
      { name: 'a.txt', content: 'first file' },
      { name: 'b.bin', content: randomBytes(70_000) },
      { name: 'same.txt', content: 'one' },
      { name: 'same.txt', content: 'two' },
    ])
    await createFile(c, a.id, { name: 'outside.txt', content: 'not in it' })
    const gone = await createFile(c, a.id, { name: 'trashed.txt', folderId: link.folder.id })
    await call(c.app, 'DELETE', `/api/v1/files/${gone.id}`, { token: a.token })
    const res = await inject(c.app, 'GET', link.zip)
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'application/zip')
    assert.match(String(res.headers['content-disposition']), /Zipped\.zip/)
    const entries = readZip(res.rawPayload)
    assert.equal(entries.length, 4)
    const byContent = (x: Buffer, y: Buffer) => Buffer.compare(x, y)
    assert.deepEqual(
      entries.map(([, bytes]) => bytes).sort(byContent),
      link.files.map((file) => file.content).sort(byContent),
    )
    const names = entries.map(([name]) => name)
    assert.deepEqual(names.filter((name) => !name.startsWith('same')).sort(), ['a.txt', 'b.bin'])
    assert.equal(new Set(names).size, 4, 'two files of one name get two names')
    // HEAD is not offered: it would build the archive for nothing.
    assert.notEqual((await inject(c.app, 'HEAD', link.zip)).statusCode, 200)
    // An empty folder's zip is an empty archive.
    const empty = await sharedFolder(c, a, 'Nothing', [])
    const nothing = await inject(c.app, 'GET', empty.zip)
    assert.equal(nothing.statusCode, 200)
    assert.deepEqual(readZip(nothing.rawPayload), [])
  })

  test('counts: one view per first page (not later pages, HEAD, prefetch, file pages), one download per download from byte 0 and per zip', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const link = await sharedFolder(c, a, 'Counted', [{ name: 'count.txt', content: '0123456789abcdef' }])
    const [file] = link.files as [(typeof link.files)[0]]
    const expect = async (views: number, downloads: number, what: string) =>
      assert.deepEqual(await counts(c, a, link.id), { views, downloads }, what)
    await expect(0, 0, 'new')
    assert.equal((await inject(c.app, 'GET', link.page)).statusCode, 200)
    await expect(1, 0, 'the first page')
    assert.equal((await inject(c.app, 'HEAD', link.page)).statusCode, 200)
    const prefetches: Record<string, string>[] = [
      { 'sec-purpose': 'prefetch' },
      { 'sec-purpose': 'prefetch;prerender' },
      { purpose: 'prefetch' },
    ]
    for (const headers of prefetches) {
      assert.equal((await inject(c.app, 'GET', link.page, { headers })).statusCode, 200)
    }
    assert.equal((await inject(c.app, 'GET', link.file(file.id).page)).statusCode, 200)
    assert.equal((await inject(c.app, 'HEAD', link.file(file.id).page)).statusCode, 200)
    await expect(1, 0, 'HEAD, prefetches and file pages')
    // A later page of the list: made with 51 files so that there is one.
    for (let i = 0; i < 50; i++) await createFile(c, a.id, { folderId: link.folder.id })
    const { next } = listed((await inject(c.app, 'GET', link.page)).body, link.page)
    assert.ok(next)
    await expect(2, 0, 'the first page again')
    assert.equal(
      (await inject(c.app, 'GET', `${link.page}?cursor=${encodeURIComponent(next)}`)).statusCode,
      200,
    )
    await expect(2, 0, 'a later page')

    const download = link.file(file.id).download
    assert.equal((await inject(c.app, 'GET', download)).body, '0123456789abcdef')
    await expect(2, 1, 'a whole download')
    const start = await inject(c.app, 'GET', download, { headers: { range: 'bytes=0-3' } })
    assert.equal(start.statusCode, 206)
    await expect(2, 2, 'a range from byte 0')
    assert.equal((await inject(c.app, 'GET', download, { headers: { range: 'bytes=4-' } })).statusCode, 206)
    assert.equal((await inject(c.app, 'HEAD', download)).statusCode, 200)
    assert.equal(
      (await inject(c.app, 'GET', download, { headers: { 'if-none-match': String(start.headers.etag) } }))
        .statusCode,
      304,
    )
    assert.equal((await inject(c.app, 'GET', download, { headers: { range: 'bytes=99-' } })).statusCode, 416)
    assert.equal((await inject(c.app, 'GET', link.file(file.id).preview)).statusCode, 404)
    await expect(2, 2, 'later ranges, HEAD, 304, 416 and previews')
    assert.equal((await inject(c.app, 'GET', link.zip)).statusCode, 200)
    await expect(2, 3, 'a zip')
    // The day's counts hold the same.
    const daily = await call(c.app, 'GET', `/api/v1/analytics/daily?shareId=${link.id}`, { token: a.token })
    assert.equal(daily.status, 200, JSON.stringify(daily.body))
    assert.deepEqual(daily.body.data.days.at(-1), { date: daily.body.data.to, views: 2, downloads: 3 })
    const totals = await call(c.app, 'GET', `/api/v1/analytics?shareId=${link.id}`, { token: a.token })
    assert.deepEqual([totals.body.data.views, totals.body.data.downloads], [2, 3])
  })

  test('a download limit: file downloads and zips count against it, then 410; a pass goes on with its own file only', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const contentA = 'the bytes of file A, all of them'
    const contentB = 'the bytes of file B, all of them too'
    const link = await sharedFolder(
      c,
      a,
      'Limited',
      [
        { name: 'A.txt', content: contentA },
        { name: 'B.txt', content: contentB },
      ],
      { maxDownloads: 3 },
    )
    const [fileA, fileB] = link.files as [(typeof link.files)[0], (typeof link.files)[0]]
    const A = link.file(fileA.id)
    const B = link.file(fileB.id)

    // A range that skips byte 0 needs a pass.
    assert.equal((await inject(c.app, 'GET', A.download, { headers: { range: 'bytes=4-' } })).statusCode, 403)
    const startA = await inject(c.app, 'GET', A.download, { headers: { range: 'bytes=0-3' } })
    assert.equal(startA.statusCode, 206)
    const passA = cookieOf(startA.headers['set-cookie'], A.download)
    // A's pass opens no range of B.
    const crossed = await inject(c.app, 'GET', B.download, { headers: { range: 'bytes=4-' }, cookie: passA })
    assert.equal(crossed.statusCode, 403)
    assert.ok(!crossed.body.includes(contentB.slice(4)))
    assert.equal((await inject(c.app, 'GET', B.download)).body, contentB)
    assert.equal((await inject(c.app, 'GET', link.zip)).statusCode, 200)
    assert.deepEqual(await counts(c, a, link.id), { views: 0, downloads: 3 })

    // All taken: every further download, zip and the page are 410s that show nothing.
    for (const url of [A.download, B.download, link.zip, link.page, A.page]) {
      const refused = await inject(c.app, 'GET', url)
      assert.equal(refused.statusCode, 410, url)
      assertShowsNothing(refused, url, ['Limited', 'A.txt', 'B.txt', contentA, contentB])
    }
    assert.match((await inject(c.app, 'GET', link.zip)).body, /downloaded as many times as its owner allowed/)
    // The last download allowed goes on in ranges with its pass; B's ranges do not, with A's pass.
    const restA = await inject(c.app, 'GET', A.download, { headers: { range: 'bytes=4-' }, cookie: passA })
    assert.equal(restA.statusCode, 206)
    assert.equal(restA.body, contentA.slice(4))
    const crossedAfter = await inject(c.app, 'GET', B.download, {
      headers: { range: 'bytes=4-' },
      cookie: passA,
    })
    assert.ok(
      crossedAfter.statusCode === 403 || crossedAfter.statusCode === 410,
      String(crossedAfter.statusCode),
    )
    assert.ok(!crossedAfter.body.includes(contentB.slice(4)))
    // The pass holds one download's bytes: the rest given once, no more.
    assert.equal(
      (await inject(c.app, 'GET', A.download, { headers: { range: 'bytes=4-' }, cookie: passA })).statusCode,
      403,
    )
    assert.deepEqual(await counts(c, a, link.id), { views: 0, downloads: 3 })

    // Concurrent downloads and zips never pass the limit.
    await patchLink(c, a, link.id, { maxDownloads: 10 })
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        inject(c.app, 'GET', i % 3 === 0 ? link.zip : i % 3 === 1 ? A.download : B.download),
      ),
    )
    assert.equal(answers.filter((answer) => answer.statusCode === 200).length, 7)
    assert.equal(answers.filter((answer) => answer.statusCode === 410).length, 17)
    assert.deepEqual(await counts(c, a, link.id), { views: 0, downloads: 10 })
    // Raising the limit opens the link again; removing it, for good.
    await patchLink(c, a, link.id, { maxDownloads: null })
    assert.equal((await inject(c.app, 'GET', link.page)).statusCode, 200)
    assert.equal((await inject(c.app, 'GET', B.download, { headers: { range: 'bytes=4-' } })).statusCode, 206)
  })

  test('a password: the pages show the form and nothing of the folder; its parts are 403s; the right password opens all', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const link = await sharedFolder(
      c,
      a,
      'Secret plans',
      [
        { name: 'plan one.txt', content: 'the first plan' },
        { name: 'plan two.txt', content: 'the second plan' },
      ],
      { password: 'correct horse' },
    )
    const [one] = link.files as [(typeof link.files)[0]]
    const F = link.file(one.id)
    const secrets = [
      'Secret plans',
      'plan one',
      'plan two',
      'the first plan',
      one.id,
      (link.files[1] as { id: string }).id,
    ]
    const lockedOut = async (cookie?: string) => {
      for (const url of [link.page, `${link.page}?cursor=abc`, F.page]) {
        const form = await inject(c.app, 'GET', url, { cookie })
        assert.equal(form.statusCode, 200, url)
        assert.match(form.body, /This link is protected/)
        assert.match(form.body, new RegExp(`<form method="post" action="${link.page}"`))
        assertShowsNothing(form, url, secrets)
      }
      for (const url of [F.download, F.preview, link.zip]) {
        const refused = await inject(c.app, 'GET', url, { cookie })
        assert.equal(refused.statusCode, 403, url)
        assertShowsNothing(refused, url, secrets)
      }
      const head = await inject(c.app, 'HEAD', F.download, { cookie })
      assert.equal(head.statusCode, 403)
    }
    await lockedOut()

    const wrong = await inject(c.app, 'POST', link.page, { form: { password: 'wrong horse' } })
    assert.equal(wrong.statusCode, 403)
    assert.match(wrong.body, /That is not the password of this link/)
    assert.equal(wrong.headers['set-cookie'], undefined)
    assertShowsNothing(wrong, 'a wrong password', secrets)
    assert.deepEqual(await counts(c, a, link.id), { views: 0, downloads: 0 })

    const right = await inject(c.app, 'POST', link.page, { form: { password: 'correct horse' } })
    assert.equal(right.statusCode, 303)
    assert.equal(right.headers.location, link.page)
    const cookie = cookieOf(right.headers['set-cookie'], link.page)
    const opened = await inject(c.app, 'GET', link.page, { cookie })
    assert.equal(opened.statusCode, 200)
    assert.ok(opened.body.includes('Secret plans') && opened.body.includes('plan one.txt'))
    assert.match(
      (await inject(c.app, 'GET', F.page, { cookie })).body,
      /<h1 id="file-name">plan one\.txt<\/h1>/,
    )
    assert.equal((await inject(c.app, 'GET', F.download, { cookie })).body, 'the first plan')
    assert.equal(
      (await inject(c.app, 'GET', F.preview, { cookie })).statusCode,
      404,
      'a text file has no preview',
    )
    const zip = await inject(c.app, 'GET', link.zip, { cookie })
    assert.equal(zip.statusCode, 200)
    assert.equal(readZip(zip.rawPayload).length, 2)
    assert.deepEqual(await counts(c, a, link.id), { views: 1, downloads: 2 })

    // The pass is this link's: another protected folder link with the same password asks again.
    const other = await sharedFolder(c, a, 'Other', [{ name: 'x.txt' }], { password: 'correct horse' })
    assert.match((await inject(c.app, 'GET', other.page, { cookie })).body, /This link is protected/)
    assert.equal((await inject(c.app, 'GET', other.zip, { cookie })).statusCode, 403)
    // A new password ends the old passes; the new one opens again; none removes the form.
    await patchLink(c, a, link.id, { password: 'new password' })
    await lockedOut(cookie)
    assert.equal(
      (await inject(c.app, 'POST', link.page, { form: { password: 'correct horse' } })).statusCode,
      403,
    )
    const renewed = await inject(c.app, 'POST', link.page, { form: { password: 'new password' } })
    assert.equal(renewed.statusCode, 303)
    const newCookie = cookieOf(renewed.headers['set-cookie'], link.page)
    assert.equal((await inject(c.app, 'GET', link.zip, { cookie: newCookie })).statusCode, 200)
    await patchLink(c, a, link.id, { password: null })
    assert.ok((await inject(c.app, 'GET', link.page)).body.includes('plan one.txt'))
    const unprotected = await inject(c.app, 'POST', link.page, { form: { password: 'anything' } })
    assert.equal(unprotected.statusCode, 303)
  })

  test("a folder link's password guesses are limited as a file link's: ten, then 429 from any address", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const link = await sharedFolder(c, a, 'Guarded', [{ name: 'guarded.txt' }], { password: 'correct horse' })
    for (let i = 0; i < 10; i++) {
      const guess = await inject(c.app, 'POST', link.page, {
        form: { password: `guess ${i}` },
        ip: '10.44.0.1',
      })
      assert.equal(guess.statusCode, 403, `guess ${i}`)
    }
    for (const ip of ['10.44.0.1', '10.44.0.2']) {
      const limited = await inject(c.app, 'POST', link.page, { form: { password: 'correct horse' }, ip })
      assert.equal(limited.statusCode, 429, ip)
      assert.ok(Number(limited.headers['retry-after']) >= 1)
      assert.equal(limited.headers['set-cookie'], undefined)
      assertShowsNothing(limited, 'a throttled guess', ['Guarded', 'guarded.txt'])
    }
  })

  test('expiry: after expiresAt every address under the link is a 410 showing nothing', async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const link = await sharedFolder(c, a, 'Soon gone', [{ name: 'brief.txt', content: 'brief bytes' }])
    const [file] = link.files as [(typeof link.files)[0]]
    const F = link.file(file.id)
    const all: ['GET' | 'HEAD' | 'POST', string][] = [
      ['GET', link.page],
      ['HEAD', link.page],
      ['GET', `${link.page}?cursor=abc`],
      ['GET', F.page],
      ['GET', F.download],
      ['HEAD', F.download],
      ['GET', F.preview],
      ['GET', link.zip],
    ]
    const set = await patchLink(c, a, link.id, { expiresAt: new Date(Date.now() + 1500).toISOString() })
    assert.equal(set.status, 200, JSON.stringify(set.body))
    assert.equal((await inject(c.app, 'GET', link.page)).statusCode, 200)
    const startRange = await inject(c.app, 'GET', F.download, { headers: { range: 'bytes=0-1' } })
    assert.equal(startRange.statusCode, 206)
    await new Promise((resolve) => setTimeout(resolve, Date.parse(set.body.data.expiresAt) - Date.now() + 50))
    for (const [method, url] of all) {
      const res = await inject(c.app, method, url)
      assert.equal(res.statusCode, 410, `${method} ${url}`)
      assertShowsNothing(res, url, ['Soon gone', 'brief', file.id])
    }
    const form = await inject(c.app, 'POST', link.page, { form: { password: 'anything' } })
    assert.equal(form.statusCode, 410)
    assert.deepEqual(await counts(c, a, link.id), { views: 1, downloads: 1 })
    assert.equal(
      (await call(c.app, 'GET', `/api/v1/folder-shares/${link.id}`, { token: a.token })).body.data.state,
      'expired',
    )

    // A protected link that expires: 410, not its form; a disabled one too.
    const locked = await sharedFolder(c, a, 'Locked and gone', [{ name: 'x.txt' }], {
      password: 'correct horse',
    })
    const pass = cookieOf(
      (await inject(c.app, 'POST', locked.page, { form: { password: 'correct horse' } })).headers[
        'set-cookie'
      ],
      locked.page,
    )
    await c.db.kysely
      .updateTable('shares')
      .set({ expires_at: Date.now() - 1000 })
      .where('id', '=', locked.id)
      .execute()
    for (const url of [
      locked.page,
      locked.zip,
      locked.file((locked.files[0] as { id: string }).id).download,
    ]) {
      for (const cookie of [undefined, pass]) {
        const res = await inject(c.app, 'GET', url, { cookie })
        assert.equal(res.statusCode, 410, url)
        assertShowsNothing(res, url, ['Locked and gone', 'x.txt'])
      }
    }
    await call(c.app, 'PATCH', `/api/v1/folder-shares/${locked.id}`, {
      token: a.token,
      body: { expiresAt: null, isActive: false },
    })
    for (const url of [locked.page, locked.zip])
      assert.equal((await inject(c.app, 'GET', url)).statusCode, 410)
  })

  test("isolation: another account's file, a file of another folder, and ids that are none are 404s that show nothing", async () => {
    const c = ctx()
    const a = await createAccount(c.app)
    const b = await createAccount(c.app)
    const link = await sharedFolder(c, a, 'Mine', [{ name: 'mine.txt', content: 'my bytes' }])
    const otherFolder = await createFolder(c.app, a, 'Not shared')
    const sibling = await createFile(c, a.id, {
      name: 'sibling secret.txt',
      content: 'sibling bytes',
      folderId: otherFolder.id,
    })
    const atRoot = await createFile(c, a.id, { name: 'root secret.txt', content: 'root bytes' })
    const theirs = await createFile(c, b.id, { name: 'their secret.txt', content: 'their bytes' })
    const theirLink = await sharedFolder(c, b, 'Theirs', [{ name: 'shared by b.txt', content: 'b bytes' }])
    const bFile = theirLink.files[0] as { id: string; name: string }
    const cases: [string, string[]][] = [
      [sibling.id, ['sibling secret', 'sibling bytes']],
      [atRoot.id, ['root secret', 'root bytes']],
      [theirs.id, ['their secret', 'their bytes']],
      [bFile.id, ['shared by b', 'b bytes']],
      ['fil_nosuchfile', []],
      ['x'.repeat(300), []],
    ]
    for (const [fileId, secrets] of cases) {
      const F = link.file(fileId)
      for (const [method, url] of [
        ['GET', F.page],
        ['GET', F.download],
        ['HEAD', F.download],
        ['GET', F.preview],
      ] as const) {
        const res = await inject(c.app, method, url)
        assert.equal(res.statusCode, 404, `${method} ${url}`)
        assertShowsNothing(res, url, [...secrets, 'Mine', 'mine.txt', 'Not shared'])
      }
    }
    // A's file under B's link is B's link's 404 too.
    const mine = link.files[0] as { id: string }
    assert.equal((await inject(c.app, 'GET', theirLink.file(mine.id).download)).statusCode, 404)
    // A moved-out or trashed file is a 404 under the link, though its bytes were fetched from it before.
    assert.equal((await inject(c.app, 'GET', link.file(mine.id).download)).body, 'my bytes')
    await call(c.app, 'PATCH', `/api/v1/files/${mine.id}`, {
      token: a.token,
      body: { folderId: otherFolder.id },
    })
    for (const url of [link.file(mine.id).page, link.file(mine.id).download]) {
      assert.equal((await inject(c.app, 'GET', url)).statusCode, 404, url)
    }
    await call(c.app, 'PATCH', `/api/v1/files/${mine.id}`, {
      token: a.token,
      body: { folderId: link.folder.id },
    })
    assert.equal((await inject(c.app, 'GET', link.file(mine.id).download)).statusCode, 200)
    await call(c.app, 'DELETE', `/api/v1/files/${mine.id}`, { token: a.token })
    for (const url of [link.file(mine.id).page, link.file(mine.id).download, link.file(mine.id).preview]) {
      assert.equal((await inject(c.app, 'GET', url)).statusCode, 404, url)
    }
    // Unknown links, and public ids that are none, are 404s everywhere.
    for (const publicId of ['nosuchlink', 'a'.repeat(32), 'x'.repeat(200)]) {
      for (const url of [
        `/sf/${publicId}`,
        `/sf/${publicId}/zip`,
        `/sf/${publicId}/files/${mine.id}/download`,
      ]) {
        assert.equal((await inject(c.app, 'GET', url)).statusCode, 404, url)
      }
    }
    assert.deepEqual(await counts(c, a, link.id), { views: 0, downloads: 2 })
  })
})
