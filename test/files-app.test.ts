// The owner's files in the web app over HTTP, where a browser is not needed to see the rule: only a session
// opens a page (an API key in a header opens none), another account's ids are 404 pages that show nothing of
// them, every form refuses a missing CSRF token, a GET changes nothing, names stay text, and each action does
// what the API would: bulk moves and deletes, folders, renames, share links and their settings, uploads
// through the session's endpoints with the real @vercel/blob client.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { App } from '../src/app.ts'
import { insertFiles } from './support/files-helpers.ts'
import { ALL, call, createFile, describeEachEngine, ENGINES, type TestContext } from './support/harness.ts'
import { type ListeningContext, sha256, startListening, uploadWithGrant } from './support/uploads.ts'
import { newOwner, WebClient } from './support/web-client.ts'

interface Owner {
  id: string
  email: string
  /** An API key of the owner with every scope, to check what the pages did through the API. */
  token: string
  web: WebClient
}

async function owner(ctx: TestContext): Promise<Owner> {
  const { id, email } = await newOwner(ctx.app)
  const { secret } = await ctx.app.services.apiKeys.create({ accountId: id, name: 'check', scopes: ALL })
  return { id, email, token: secret, web: await WebClient.signedIn(ctx.app, email) }
}

const api = (app: App, o: Owner, method: string, url: string, body?: unknown) =>
  call(app, method, `/api/v1${url}`, { token: o.token, body })

/** The text of a page as a person reads it: without its tags, its character references decoded. */
const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#(\d+);/g, (_, code) => String.fromCodePoint(Number(code)))
    .replace(/&(lt|gt|quot|amp);/g, (_, name) => ({ lt: '<', gt: '>', quot: '"', amp: '&' })[name as 'lt'])
    .replace(/\s+/g, ' ')

describeEachEngine('the files app over HTTP', (ctx) => {
  test('signed out, a page sends the browser to sign in and back; a script gets 401; an API key opens nothing', async () => {
    const app = ctx().app
    const anonymous = new WebClient(app)
    for (const path of ['/', '/folders/fld_x', '/files/fil_x', '/folders', '/folders/new']) {
      const res = await anonymous.get(path)
      assert.equal(res.statusCode, 303, path)
      assert.equal(res.headers.location, `/account/sign-in?return_to=${encodeURIComponent(path)}`)
    }
    // curl and link checkers ask for any type: they are sent to sign in too, not shown an error.
    const curl = await app.inject({ method: 'GET', url: '/', headers: { accept: '*/*' } })
    assert.equal(curl.statusCode, 303)
    assert.equal(curl.headers.location, '/account/sign-in?return_to=%2F')
    const bare = await app.inject({ method: 'GET', url: '/folders' })
    assert.equal(bare.statusCode, 303)
    // A script asking for JSON, or posting, is told it is signed out.
    const json = await app.inject({ method: 'GET', url: '/', headers: { accept: 'application/json' } })
    assert.equal(json.statusCode, 401)
    const o = await owner(ctx())
    const withKey = await app.inject({
      method: 'GET',
      url: '/',
      headers: { accept: 'text/html', authorization: `Bearer ${o.token}` },
    })
    assert.equal(withKey.statusCode, 303, 'an API key is not a session')
    const script = await anonymous.send('POST', '/uploads', JSON.stringify({ files: [] }), {
      'content-type': 'application/json',
    })
    assert.equal(script.statusCode, 401)
    assert.equal(JSON.parse(script.body).error.code, 'unauthorized')
    // A form posted by a signed-out browser is not acted on: it goes to sign in.
    const form = await anonymous.send('POST', '/files/bulk', 'action=delete', {
      accept: 'text/html',
      'content-type': 'application/x-www-form-urlencoded',
    })
    assert.equal(form.statusCode, 303)
    assert.equal(form.headers.location, '/account/sign-in')
  })

  test('the home page lists the files newest first, 50 a page with More, each name a link; names stay text', async () => {
    const o = await owner(ctx())
    await insertFiles(ctx(), o.id, [1, 60], ['old-', '.txt'])
    const hostile = await createFile(ctx(), o.id, { name: '<img src=x onerror=alert(1)>.txt' })
    const first = await o.web.get('/')
    assert.equal(first.statusCode, 200)
    assert.match(first.headers['content-type'] as string, /^text\/html/)
    assert.match(first.headers['content-security-policy'] as string, /script-src 'self'/)
    const ids = [...first.body.matchAll(/<tr data-file-id="([^"]+)"/g)].map((m) => m[1])
    assert.equal(ids.length, 50)
    assert.equal(ids[0], hostile.id, 'newest first')
    assert.ok(textOf(first.body).includes('<img src=x onerror=alert(1)>.txt'), 'the name is shown as written')
    assert.ok(!first.body.includes('<img src=x'), 'and never as markup')
    assert.ok(first.body.includes(`href="/files/${hostile.id}"`))
    const link = (body: string, name: 'prev' | 'next') =>
      textOf(new RegExp(`href="([^"]+)" rel="${name}"`).exec(body)?.[1] ?? '').trim() || undefined
    const rowIds = (body: string) => [...body.matchAll(/<tr data-file-id="([^"]+)"/g)].map((m) => m[1])
    assert.equal(link(first.body, 'prev'), undefined, 'nothing before the first page')
    assert.match(textOf(first.body), /Files 1–50/)
    const more = link(first.body, 'next')
    assert.ok(more, 'a More link')
    const second = await o.web.get(more)
    const rest = rowIds(second.body)
    assert.equal(rest.length, 11)
    assert.equal(new Set([...ids, ...rest]).size, 61)
    assert.ok(!second.body.includes('data-more'), 'the last page has no More')
    // A way back, and where the page is.
    assert.match(textOf(second.body), /Files 51–61/)
    const previous = link(second.body, 'prev')
    assert.ok(previous, 'a Previous link')
    assert.match(previous, /from=1\b|^\/\?before=[^&]+$/, 'the page before starts at the first file')
    const back = await o.web.get(previous)
    assert.deepEqual(rowIds(back.body), ids, 'Previous is the first page again')
    assert.match(textOf(back.body), /Files 1–50/)
    assert.equal(link(back.body, 'prev'), undefined)

    // Ordered by a column's heading, kept in the address: by name, then the other way.
    const byName = await o.web.get('/?sort=name')
    const names = [...byName.body.matchAll(/class="file-link"[^>]*>([^<]+)</g)].map((m) => textOf(m[1] ?? ''))
    assert.deepEqual(names.slice(0, 3), ['<img src=x onerror=alert(1)>.txt', 'old-1.txt', 'old-10.txt'])
    assert.match(
      byName.body,
      /<th class="col-name" scope="col" aria-sort="ascending"><a class="sort-link" href="\/\?sort&#61;name-desc">Name/,
    )
    assert.match(byName.body, /<caption class="sr-only">Your files, by name, A to Z<\/caption>/)
    const nextByName = link(byName.body, 'next')
    assert.match(nextByName ?? '', /sort=name&cursor=/, 'the next page keeps the order')
    assert.equal(rowIds((await o.web.get(nextByName as string)).body).length, 11)
    const reversed = await o.web.get('/?sort=name-desc')
    assert.match(reversed.body, /aria-sort="descending"><a class="sort-link" href="\/\?sort&#61;name">Name/)
    // The date's heading goes back to the default order, newest first, whose address has no sort.
    assert.match(reversed.body, /<th class="col-date" scope="col"><a class="sort-link" href="\/">Added/)
    const bad = await o.web.get('/?sort=random')
    assert.equal(bad.statusCode, 400)
  })

  test('search is a GET with the API’s semantics, in a folder too; a bad query is a 400 page', async () => {
    const o = await owner(ctx())
    const folder = (await api(ctx().app, o, 'POST', '/folders', { name: 'Reports' })).body.data
    const inFolder = await createFile(ctx(), o.id, { name: 'Quarterly REPORT.pdf', folderId: folder.id })
    const atRoot = await createFile(ctx(), o.id, { name: 'report-draft.txt' })
    await createFile(ctx(), o.id, { name: 'holiday.jpg' })
    const all = await o.web.get('/?query=report')
    const found = [...all.body.matchAll(/<tr data-file-id="([^"]+)"/g)].map((m) => m[1])
    assert.deepEqual(found, [atRoot.id, inFolder.id])
    assert.match(textOf(all.body), /Files named like “report”/)
    const scoped = await o.web.get(`/folders/${folder.id}?query=report`)
    assert.deepEqual(
      [...scoped.body.matchAll(/<tr data-file-id="([^"]+)"/g)].map((m) => m[1]),
      [inFolder.id],
    )
    const none = await o.web.get('/?query=zzzz')
    assert.match(textOf(none.body), /No file is named like “zzzz”/)
    const tooLong = await o.web.get(`/?query=${'a'.repeat(201)}`)
    assert.equal(tooLong.statusCode, 400)
    assert.match(tooLong.headers['content-type'] as string, /^text\/html/)
  })

  test('another account’s file, folder and link are 404 pages that show nothing of them, on every route', async () => {
    const a = await owner(ctx())
    const b = await owner(ctx())
    const folder = (await api(ctx().app, b, 'POST', '/folders', { name: 'Secret folder' })).body.data
    const file = await createFile(ctx(), b.id, { name: 'secret-name.txt', folderId: folder.id })
    const share = (await api(ctx().app, b, 'POST', '/shares', { fileId: file.id })).body.data
    const token = await a.web.csrfToken('/')
    const gets = [
      `/files/${file.id}`,
      `/files/${file.id}/download`,
      `/files/${file.id}/preview`,
      `/files/${file.id}/delete`,
      `/folders/${folder.id}`,
      `/folders/${folder.id}/rename`,
      `/folders/${folder.id}/delete`,
      `/shares/${share.id}/settings`,
    ]
    for (const path of gets) {
      const res = await a.web.get(path)
      assert.equal(res.statusCode, 404, path)
      assert.match(res.headers['content-type'] as string, /^text\/html/, path)
      assert.ok(!res.body.includes('secret'), `${path} shows nothing of it`)
    }
    const posts: [string, Record<string, string>][] = [
      [`/files/${file.id}/rename`, { name: 'mine now' }],
      [`/files/${file.id}/move`, { folderId: '' }],
      [`/files/${file.id}/delete`, {}],
      [`/files/${file.id}/share`, {}],
      [`/folders/${folder.id}/rename`, { name: 'mine now' }],
      [`/folders/${folder.id}/delete`, {}],
      [`/shares/${share.id}/settings`, { maxDownloads: '1' }],
      [`/shares/${share.id}/disable`, {}],
    ]
    for (const [path, form] of posts) {
      const res = await a.web.post(path, { ...form, _csrf: token })
      assert.equal(res.statusCode, 404, path)
      assert.ok(!res.body.includes('secret'), `${path} shows nothing of it`)
    }
    // A selection that names them moves and deletes nothing.
    const mine = (await api(ctx().app, a, 'POST', '/folders', { name: 'Mine' })).body.data
    for (const action of ['move', 'confirm-delete']) {
      const res = await a.web.post('/files/bulk', {
        action,
        fileIds: [file.id],
        folderId: mine.id,
        _csrf: token,
      })
      assert.equal(res.statusCode, 303)
    }
    const moveInto = await a.web.post('/files/bulk', {
      action: 'move',
      fileIds: [file.id],
      folderId: folder.id,
      _csrf: token,
    })
    assert.equal(moveInto.statusCode, 404, 'into another account’s folder')
    const still = await api(ctx().app, b, 'GET', `/files/${file.id}`)
    assert.equal(still.body.data.name, 'secret-name.txt')
    assert.equal(still.body.data.folderId, folder.id)
    assert.equal(still.body.data.share.isActive, true)
    assert.equal((await api(ctx().app, b, 'GET', `/folders/${folder.id}`)).body.data.name, 'Secret folder')
    const rows = await a.web.send('GET', `/files/rows?ids=${file.id}`)
    assert.equal(rows.statusCode, 200)
    assert.equal(rows.body, '', 'no row of another account’s file')
  })

  test('every form refuses a missing or wrong CSRF token, and nothing changes', async () => {
    const o = await owner(ctx())
    const file = await createFile(ctx(), o.id, { name: 'keep.txt' })
    const folder = (await api(ctx().app, o, 'POST', '/folders', { name: 'Keep' })).body.data
    const share = (await api(ctx().app, o, 'POST', '/shares', { fileId: file.id })).body.data
    const forms: [string, Record<string, string | string[]>][] = [
      ['/files/bulk', { action: 'confirm-delete', fileIds: [file.id] }],
      [`/files/${file.id}/rename`, { name: 'changed' }],
      [`/files/${file.id}/move`, { folderId: folder.id }],
      [`/files/${file.id}/delete`, {}],
      [`/files/${file.id}/share`, {}],
      ['/folders', { name: 'New' }],
      [`/folders/${folder.id}/rename`, { name: 'changed' }],
      [`/folders/${folder.id}/delete`, {}],
      [`/shares/${share.id}/settings`, { maxDownloads: '1' }],
      [`/shares/${share.id}/disable`, {}],
    ]
    for (const [path, form] of forms) {
      for (const token of [undefined, 'forged-token']) {
        const body = new URLSearchParams()
        for (const [name, value] of Object.entries(form)) for (const v of [value].flat()) body.append(name, v)
        if (token) body.append('_csrf', token)
        const res = await o.web.send('POST', path, body.toString(), {
          accept: 'text/html',
          'content-type': 'application/x-www-form-urlencoded',
        })
        assert.equal(res.statusCode, 403, `${path} with ${token ?? 'no token'}`)
        assert.match(res.headers['content-type'] as string, /^text\/html/)
        assert.match(textOf(res.body), /This form has expired .* reload the page/)
      }
    }
    for (const path of ['/uploads', '/uploads/status', '/uploads/cancel']) {
      const res = await o.web.send('POST', path, JSON.stringify({ intentIds: ['upl_x'] }), {
        'content-type': 'application/json',
      })
      assert.equal(res.statusCode, 403, path)
      assert.equal(JSON.parse(res.body).error.code, 'form_expired')
    }
    const after = await api(ctx().app, o, 'GET', `/files/${file.id}`)
    assert.equal(after.body.data.name, 'keep.txt')
    assert.equal(after.body.data.folderId, null)
    assert.equal(after.body.data.share.isActive, true)
    assert.equal((await api(ctx().app, o, 'GET', '/folders')).body.data.length, 1)
  })

  test('a GET changes nothing: confirmation pages only ask', async () => {
    const o = await owner(ctx())
    const file = await createFile(ctx(), o.id, { name: 'asked.txt' })
    const folder = (await api(ctx().app, o, 'POST', '/folders', { name: 'Asked' })).body.data
    const fileConfirm = await o.web.get(`/files/${file.id}/delete`)
    assert.equal(fileConfirm.statusCode, 200)
    assert.match(textOf(fileConfirm.body), /Delete “asked\.txt”\?/)
    const folderConfirm = await o.web.get(`/folders/${folder.id}/delete`)
    assert.match(textOf(folderConfirm.body), /The folder is empty/)
    assert.equal((await api(ctx().app, o, 'GET', `/files/${file.id}`)).status, 200)
    assert.equal((await api(ctx().app, o, 'GET', `/folders/${folder.id}`)).status, 200)
  })

  test('selected files move in one go, with both folders’ counts; a delete asks first, naming how many', async () => {
    const o = await owner(ctx())
    const from = (await api(ctx().app, o, 'POST', '/folders', { name: 'From' })).body.data
    const to = (await api(ctx().app, o, 'POST', '/folders', { name: 'To' })).body.data
    const files = await Promise.all(
      ['a.txt', 'b.txt', 'c.txt'].map((name) => createFile(ctx(), o.id, { name, folderId: from.id })),
    )
    const ids = files.map((f) => f.id)
    const moved = await o.web.post(
      '/files/bulk',
      {
        action: 'move',
        fileIds: ids.slice(0, 2),
        folderId: to.id,
        return_to: `/folders/${from.id}`,
      },
      '/',
    )
    assert.equal(moved.statusCode, 303)
    assert.equal(moved.headers.location, `/folders/${from.id}?done=moved&n=2`)
    const notice = await o.web.get(moved.headers.location as string)
    assert.match(textOf(notice.body), /2 files moved\./)
    assert.equal((await api(ctx().app, o, 'GET', `/folders/${from.id}`)).body.data.fileCount, 1)
    assert.equal((await api(ctx().app, o, 'GET', `/folders/${to.id}`)).body.data.fileCount, 2)

    const ask = await o.web.post('/files/bulk', { action: 'delete', fileIds: ids }, '/')
    assert.equal(ask.statusCode, 200)
    assert.match(textOf(ask.body), /Delete 3 files\?/)
    for (const file of files) assert.ok(ask.body.includes(file.name))
    assert.equal((await api(ctx().app, o, 'GET', `/files/${ids[0]}`)).status, 200, 'asking deletes nothing')
    const confirmed = await o.web.post('/files/bulk', { action: 'confirm-delete', fileIds: ids }, '/')
    assert.equal(confirmed.statusCode, 303)
    // They went to the trash (the default keeps it 30 days), and the notice offers to undo that.
    assert.equal(confirmed.headers.location, `/?done=trashed&n=3&undo=${ids.join('%2C')}`)
    for (const id of ids) assert.equal((await api(ctx().app, o, 'GET', `/files/${id}`)).status, 404)
    assert.equal((await api(ctx().app, o, 'GET', `/folders/${to.id}`)).body.data.fileCount, 0)

    const nothing = await o.web.post('/files/bulk', { action: 'move', folderId: to.id }, '/')
    assert.equal(nothing.headers.location, '/?done=nothing-selected')
    const foreignReturn = await o.web.post(
      '/files/bulk',
      { action: 'move', return_to: 'https://evil.example/' },
      '/',
    )
    assert.equal(foreignReturn.headers.location, '/?done=nothing-selected', 'no open redirect')
  })

  test('renaming a file: a blank name is said to be empty, a long one too long', async () => {
    const o = await owner(ctx())
    const file = await createFile(ctx(), o.id, { name: 'draft.txt' })
    const blank = await o.web.post(`/files/${file.id}/rename`, { name: '   ' }, `/files/${file.id}`)
    assert.equal(blank.statusCode, 400)
    assert.match(textOf(blank.body), /Give the file a name: this one is empty\./)
    const long = await o.web.post(`/files/${file.id}/rename`, { name: 'x'.repeat(256) }, `/files/${file.id}`)
    assert.equal(long.statusCode, 400)
    assert.match(textOf(long.body), /Give the file a name of at most 255 characters\./)
    assert.equal((await ctx().app.services.files.get(o.id, file.id)).name, 'draft.txt')
  })

  test('folders: create, a duplicate or blank name refused beside the field, rename, delete moves the files to root', async () => {
    const o = await owner(ctx())
    const created = await o.web.post('/folders', { name: 'Projects' }, '/folders/new')
    assert.equal(created.statusCode, 303)
    const folderId = /^\/folders\/([^?]+)\?done=folder-created$/.exec(created.headers.location as string)?.[1]
    assert.ok(folderId)
    const duplicate = await o.web.post('/folders', { name: 'PROJECTS' }, '/folders/new')
    assert.equal(duplicate.statusCode, 409)
    assert.match(duplicate.body, /aria-invalid="true"/)
    assert.match(
      textOf(duplicate.body),
      /A folder named "Projects" already exists \(folder names ignore case\)\./,
      'the folder that has the name, as it is spelled',
    )
    const blank = await o.web.post('/folders', { name: '   ' }, '/folders/new')
    assert.equal(blank.statusCode, 400)
    assert.match(textOf(blank.body), /Give the folder a name/)
    const long = await o.web.post('/folders', { name: 'x'.repeat(81) }, '/folders/new')
    assert.equal(long.statusCode, 400)
    const unknown = await o.web.post('/folders', { name: 'ok', extra: 'field' }, '/folders/new')
    assert.equal(unknown.statusCode, 400)

    await o.web.post('/folders', { name: 'Archive' }, '/folders/new')
    const taken = await o.web.post(`/folders/${folderId}/rename`, { name: 'archive' })
    assert.equal(taken.statusCode, 409)
    assert.match(taken.body, /aria-invalid="true"/)
    assert.match(textOf(taken.body), /A folder named "Archive" already exists \(folder names ignore case\)\./)

    const renamed = await o.web.post(`/folders/${folderId}/rename`, { name: 'Work <b>2026</b>' })
    assert.equal(renamed.statusCode, 303)
    const view = await o.web.get(`/folders/${folderId}`)
    assert.ok(textOf(view.body).includes('Work <b>2026</b>'))
    assert.ok(!view.body.includes('<b>2026'))

    const file = await createFile(ctx(), o.id, { folderId })
    const deleted = await o.web.post(`/folders/${folderId}/delete`, {}, `/folders/${folderId}/delete`)
    assert.equal(deleted.statusCode, 303)
    assert.equal(deleted.headers.location, '/?done=folder-deleted')
    assert.equal((await api(ctx().app, o, 'GET', `/files/${file.id}`)).body.data.folderId, null)
    assert.equal((await o.web.get(`/folders/${folderId}`)).statusCode, 404)
  })

  test('a file’s page renames, moves and deletes it; a bad name is shown again beside its field', async () => {
    const o = await owner(ctx())
    const folder = (await api(ctx().app, o, 'POST', '/folders', { name: 'Target' })).body.data
    const file = await createFile(ctx(), o.id, { name: 'notes.txt', content: 'first line\nsecond line' })
    const page = await o.web.get(`/files/${file.id}`)
    assert.equal(page.statusCode, 200)
    assert.ok(page.body.includes('first line\nsecond line'), 'a text file shows its lines')
    const bad = await o.web.post(`/files/${file.id}/rename`, { name: ' ' }, `/files/${file.id}`)
    assert.equal(bad.statusCode, 400)
    assert.match(bad.body, /id="field-name"[^>]*aria-invalid="true"/)
    const renamed = await o.web.post(`/files/${file.id}/rename`, { name: 'renamed.txt' }, `/files/${file.id}`)
    assert.equal(renamed.headers.location, `/files/${file.id}?done=renamed`)
    const moved = await o.web.post(`/files/${file.id}/move`, { folderId: folder.id }, `/files/${file.id}`)
    assert.equal(moved.statusCode, 303)
    const now = (await api(ctx().app, o, 'GET', `/files/${file.id}`)).body.data
    assert.equal(now.name, 'renamed.txt')
    assert.equal(now.folderId, folder.id)
    const download = await o.web.get(`/files/${file.id}/download`)
    assert.equal(download.statusCode, 200)
    assert.equal(download.body, 'first line\nsecond line')
    assert.match(download.headers['content-disposition'] as string, /^attachment/)
    const deleted = await o.web.post(`/files/${file.id}/delete`, {}, `/files/${file.id}/delete`)
    assert.equal(deleted.headers.location, `/folders/${folder.id}?done=trashed&n=1&undo=${file.id}`)
    assert.equal((await api(ctx().app, o, 'GET', `/files/${file.id}`)).status, 404)
  })

  test('Share makes the link, its settings are the API’s, a refused setting is shown beside its field', async () => {
    const o = await owner(ctx())
    const file = await createFile(ctx(), o.id, { name: 'shared.txt' })
    const private_ = await o.web.get(`/files/${file.id}`)
    assert.match(textOf(private_.body), /This file is private/)
    const made = await o.web.post(`/files/${file.id}/share`, {}, `/files/${file.id}`)
    assert.equal(made.headers.location, `/files/${file.id}?done=share-on#share`)
    const share = (await api(ctx().app, o, 'GET', `/files/${file.id}`)).body.data.share
    assert.equal(share.isActive, true)
    const page = await o.web.get(`/files/${file.id}`)
    assert.ok(page.body.includes(`value="${share.publicUrl}"`), 'the full public address')

    const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10)
    const saved = await o.web.post(
      `/shares/${share.id}/settings`,
      { expires: day, password: 'open sesame', maxDownloads: '5' },
      `/files/${file.id}`,
    )
    assert.equal(saved.statusCode, 303, saved.body)
    const after = (await api(ctx().app, o, 'GET', `/shares/${share.id}`)).body.data
    // No zone known (a browser without scripts): the day is UTC's, and the page says so.
    assert.equal(after.expiresAt, new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString())
    assert.match(textOf((await o.web.get(`/files/${file.id}`)).body), /end of this day, UTC\./)
    assert.equal(after.hasPassword, true)
    assert.equal(after.maxDownloads, 5)
    const page2 = await o.web.get(`/files/${file.id}`)
    assert.ok(!page2.body.includes('open sesame'), 'the password is never shown')

    for (const [form, field] of [
      [{ expires: '2020-01-01' }, 'expires'],
      [{ expires: 'tomorrow' }, 'expires'],
      [{ maxDownloads: '0' }, 'maxDownloads'],
      [{ maxDownloads: 'ten' }, 'maxDownloads'],
      [{ password: 'abc' }, 'password'],
    ] as const) {
      const refused = await o.web.post(`/shares/${share.id}/settings`, form, `/files/${file.id}`)
      assert.equal(refused.statusCode, 400, JSON.stringify(form))
      assert.match(
        refused.body,
        new RegExp(`id="field-${field}"[^>]*aria-invalid="true"`),
        JSON.stringify(form),
      )
    }
    const unchanged = (await api(ctx().app, o, 'GET', `/shares/${share.id}`)).body.data
    assert.equal(unchanged.maxDownloads, 5, 'a refused form changes nothing')
    // Every problem at once: the day that has ended is said with the others, not on the next try.
    const all = await o.web.post(
      `/shares/${share.id}/settings`,
      { expires: '2020-01-01', password: 'abc', maxDownloads: '0' },
      `/files/${file.id}`,
    )
    assert.equal(all.statusCode, 400)
    for (const field of ['expires', 'password', 'maxDownloads']) {
      assert.match(all.body, new RegExp(`id="field-${field}"[^>]*aria-invalid="true"`), field)
    }
    assert.match(textOf(all.body), /Choose today or a later day\./)

    // In the reader's zone (the browser's, kept in a cookie by the page's script): "works until" a day means
    // until that day ends there, and the page shows the day chosen, in that zone, on the form and in the panel.
    o.web.cookies.set('coffer_tz', encodeURIComponent('America/Los_Angeles'))
    const zoned = await o.web.get(`/files/${file.id}`)
    assert.match(zoned.body, /<input type="hidden" name="timeZone" value="America\/Los_Angeles">/)
    assert.match(textOf(zoned.body), /end of this day, America\/Los_Angeles time\./)
    const inLosAngeles = await o.web.post(
      `/shares/${share.id}/settings`,
      { expires: day, timeZone: 'America/Los_Angeles', maxDownloads: '5' },
      `/files/${file.id}`,
    )
    assert.equal(inLosAngeles.statusCode, 303, inLosAngeles.body)
    const until = Date.parse((await api(ctx().app, o, 'GET', `/shares/${share.id}`)).body.data.expiresAt)
    // Swedish writes a date and time as ISO does: "2026-12-05 23:59:00".
    const inLa = (ms: number) => new Date(ms).toLocaleString('sv-SE', { timeZone: 'America/Los_Angeles' })
    assert.equal(inLa(until - 60_000), `${day} 23:59:00`, 'the last minute of the day in Los Angeles works')
    assert.match(inLa(until), / 00:00:00$/, 'the next day there does not')
    const shown = await o.web.get(`/files/${file.id}`)
    assert.match(shown.body, new RegExp(`id="field-expires" name="expires" type="date" value="${day}"`))
    const dayWords = new Date(`${day}T12:00:00Z`).toLocaleDateString('en-US', {
      timeZone: 'UTC',
      month: 'short',
      day: 'numeric',
      year: 'numeric',
    })
    assert.match(textOf(shown.body), new RegExp(`Works until ${dayWords}`))
    // Read in Tokyo, 17 hours ahead, the same instant ends the next day there.
    o.web.cookies.set('coffer_tz', encodeURIComponent('Asia/Tokyo'))
    const tokyo = await o.web.get(`/files/${file.id}`)
    const nextDay = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)
    assert.match(tokyo.body, new RegExp(`id="field-expires" name="expires" type="date" value="${nextDay}"`))
    // A zone this server does not know is UTC.
    o.web.cookies.set('coffer_tz', 'Nowhere%2FAtAll')
    assert.match(textOf((await o.web.get(`/files/${file.id}`)).body), /end of this day, UTC\./)
    o.web.cookies.delete('coffer_tz')

    const cleared = await o.web.post(
      `/shares/${share.id}/settings`,
      { removePassword: 'on' },
      `/files/${file.id}`,
    )
    assert.equal(cleared.statusCode, 303)
    const open = (await api(ctx().app, o, 'GET', `/shares/${share.id}`)).body.data
    assert.deepEqual([open.hasPassword, open.maxDownloads, open.expiresAt], [false, null, null])

    const off = await o.web.post(`/shares/${share.id}/disable`, {}, `/files/${file.id}`)
    assert.equal(off.headers.location, `/files/${file.id}?done=share-off#share`)
    assert.equal((await api(ctx().app, o, 'GET', `/shares/${share.id}`)).body.data.isActive, false)
    assert.equal((await ctx().app.inject({ method: 'GET', url: `/s/${share.publicId}` })).statusCode, 410)
    await o.web.post(`/files/${file.id}/share`, {}, `/files/${file.id}`)
    const on = (await api(ctx().app, o, 'GET', `/shares/${share.id}`)).body.data
    assert.equal(on.isActive, true)
    assert.equal(on.publicUrl, share.publicUrl, 'the same address again')
  })
})

for (const engine of ENGINES) {
  describe(`the files app's uploads [${engine}]`, () => {
    let ctx: ListeningContext

    before(async () => {
      ctx = await startListening(engine)
      process.env.VERCEL_BLOB_API_URL = `${ctx.base}/blob`
    })
    after(async () => {
      await ctx?.stop()
    })

    test('uploads through the session’s endpoints and the real @vercel/blob client; the rows are rendered', async () => {
      const o = await owner(ctx)
      const folder = (await api(ctx.app, o, 'POST', '/folders', { name: 'Inbox' })).body.data
      const csrf = await o.web.csrfToken('/')
      const json = (path: string, body: unknown) =>
        o.web.send('POST', path, JSON.stringify(body), {
          'content-type': 'application/json',
          'x-csrf-token': csrf,
        })
      const content = Buffer.from('bytes from the web app')
      const prepared = await json('/uploads', {
        folderId: folder.id,
        files: [{ name: 'from-web.txt', type: 'text/plain', size: content.length }],
      })
      assert.equal(prepared.statusCode, 201, prepared.body)
      const [grant] = JSON.parse(prepared.body).data.uploads
      const refused = await json('/uploads', { files: [{ name: 'x', type: 'text/plain', size: 0 }] })
      assert.equal(refused.statusCode, 400)
      assert.equal(JSON.parse(refused.body).error.code, 'invalid_request')

      // The @vercel/blob client sends the bytes to the blob endpoint, as the page's copy of it does.
      await uploadWithGrant(grant, content)
      let status: { status: string; result?: { id: string } } | undefined
      for (let i = 0; i < 200; i++) {
        const res = await json('/uploads/status', { intentIds: [grant.intentId] })
        status = JSON.parse(res.body).data[0]
        if (status?.status !== 'pending') break
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      assert.equal(status?.status, 'complete')
      const fileId = status?.result?.id as string
      const stored = (await api(ctx.app, o, 'GET', `/files/${fileId}`)).body.data
      assert.equal(stored.folderId, folder.id)
      const bytes = await ctx.app.inject({
        method: 'GET',
        url: `/api/v1/files/${fileId}/download`,
        headers: { authorization: `Bearer ${o.token}` },
      })
      assert.equal(sha256(bytes.rawPayload), sha256(content))
      const rows = await o.web.send('GET', `/files/rows?ids=${fileId}`)
      assert.match(rows.body, new RegExp(`<tr data-file-id="${fileId}"`))

      // Another account's upload is not found, and refuses the whole call.
      const other = await owner(ctx)
      const otherCsrf = await other.web.csrfToken('/')
      const peek = await other.web.send(
        'POST',
        '/uploads/status',
        JSON.stringify({ intentIds: [grant.intentId] }),
        {
          'content-type': 'application/json',
          'x-csrf-token': otherCsrf,
        },
      )
      assert.equal(peek.statusCode, 404)

      // A cancelled upload ends in error and stores nothing.
      const second = JSON.parse(
        (await json('/uploads', { files: [{ name: 'never.txt', type: 'text/plain', size: 10 }] })).body,
      ).data.uploads[0]
      const cancelled = await json('/uploads/cancel', { intentIds: [second.intentId] })
      assert.equal(cancelled.statusCode, 204)
      const after = JSON.parse((await json('/uploads/status', { intentIds: [second.intentId] })).body).data[0]
      assert.equal(after.status, 'error')
    })
  })
}
