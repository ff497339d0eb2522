// The owner's trash in the web app over HTTP (issue 44, 1): a delete from the files pages moves the files to the
// trash and its notice offers an Undo that restores them; the Trash page lists them deleted last first, paged,
// with the trash's size, when each was deleted and when it goes for good; Restore, Delete forever and Empty
// trash (after a confirmation) do what the API's trash does; every form refuses a missing CSRF token; another
// account's files are neither shown nor touched. With TRASH_RETENTION_DAYS=0 the pages say deletes are final.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { insertFiles } from './support/files-helpers.ts'
import { ALL, call, createFile, describeEachEngine, type TestContext } from './support/harness.ts'
import { newOwner, WebClient } from './support/web-client.ts'

interface Owner {
  id: string
  token: string
  web: WebClient
}

async function owner(ctx: TestContext): Promise<Owner> {
  const { id, email } = await newOwner(ctx.app)
  const { secret } = await ctx.app.services.apiKeys.create({ accountId: id, name: 'check', scopes: ALL })
  return { id, token: secret, web: await WebClient.signedIn(ctx.app, email) }
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

/** The ids of the trash page's rows, in order. */
const trashRows = (html: string) =>
  [...html.matchAll(/<li class="item trash-item" data-file-id="([^"]+)"/g)].map((m) => m[1])

/** The ids the notice's Undo form would restore. */
const undoIds = (html: string) => {
  const form = /<div class="inline-notice notice-undo"[\s\S]*?<\/form>/.exec(html)?.[0] ?? ''
  return [...form.matchAll(/name="fileIds" value="([^"]+)"/g)].map((m) => m[1])
}

const trashIds = async (app: App, o: Owner) =>
  (await api(app, o, 'GET', '/trash?limit=100')).body.data.map((file: { id: string }) => file.id)

describeEachEngine('the trash in the files app over HTTP', (ctx) => {
  test('signed out, the trash pages send the browser to sign in; its forms are not acted on', async () => {
    const anonymous = new WebClient(ctx().app)
    for (const path of ['/trash', '/trash/empty']) {
      const res = await anonymous.get(path)
      assert.equal(res.statusCode, 303, path)
      assert.equal(res.headers.location, `/account/sign-in?return_to=${encodeURIComponent(path)}`)
    }
    for (const path of ['/trash/restore', '/trash/empty', '/trash/fil_x/delete']) {
      const res = await anonymous.send('POST', path, 'fileIds=fil_x', {
        accept: 'text/html',
        'content-type': 'application/x-www-form-urlencoded',
      })
      assert.equal(res.statusCode, 303, path)
      assert.equal(res.headers.location, '/account/sign-in')
    }
  })

  test('a bulk delete moves the files to the trash; its notice’s Undo puts them back, in their folder', async () => {
    const o = await owner(ctx())
    const folder = (await api(ctx().app, o, 'POST', '/folders', { name: 'Work' })).body.data
    const files = await Promise.all(
      ['a.txt', 'b.txt', 'c.txt'].map((name) => createFile(ctx(), o.id, { name, folderId: folder.id })),
    )
    const ids = files.map((file) => file.id)
    const home = await o.web.get(`/folders/${folder.id}`)
    assert.ok(home.body.includes('<a href="/trash">'), 'the sidebar links to the trash')
    const ask = await o.web.post(
      '/files/bulk',
      { action: 'delete', fileIds: ids, return_to: `/folders/${folder.id}` },
      '/',
    )
    assert.match(
      textOf(ask.body),
      /Delete 3 files\? They move to the trash, where they can be restored for 30 days; after that they are deleted for good, with their bytes\./,
    )
    const confirmed = await o.web.post(
      '/files/bulk',
      { action: 'confirm-delete', fileIds: ids, return_to: `/folders/${folder.id}` },
      '/',
    )
    assert.equal(confirmed.statusCode, 303)
    const back = confirmed.headers.location as string
    assert.equal(back, `/folders/${folder.id}?done=trashed&n=3&undo=${ids.join('%2C')}`)
    const notice = await o.web.get(back)
    assert.match(textOf(notice.body), /3 files moved to the trash\. Undo Open the trash/)
    assert.deepEqual(undoIds(notice.body), ids)
    assert.equal((await api(ctx().app, o, 'GET', `/folders/${folder.id}`)).body.data.fileCount, 0)
    assert.deepEqual((await trashIds(ctx().app, o)).sort(), [...ids].sort())
    // The Undo's form comes back to the folder, without the Undo in its address.
    const returnTo = /name="return_to" value="([^"]+)"/.exec(notice.body.split('notice-undo')[1] ?? '')?.[1]
    assert.equal(textOf(returnTo ?? '').trim(), `/folders/${folder.id}?done=trashed&n=3`)
    const undone = await o.web.post(
      '/trash/restore',
      { fileIds: ids, return_to: textOf(returnTo ?? '').trim() },
      back,
    )
    assert.equal(undone.statusCode, 303)
    assert.equal(undone.headers.location, `/folders/${folder.id}?done=restored&n=3`)
    const restoredPage = await o.web.get(undone.headers.location as string)
    assert.match(textOf(restoredPage.body), /3 files restored\./)
    assert.deepEqual(undoIds(restoredPage.body), [], 'no Undo once restored')
    for (const id of ids) {
      const file = await api(ctx().app, o, 'GET', `/files/${id}`)
      assert.equal(file.status, 200)
      assert.equal(file.body.data.folderId, folder.id)
    }
    assert.equal((await api(ctx().app, o, 'GET', `/folders/${folder.id}`)).body.data.fileCount, 3)
    assert.deepEqual(await trashIds(ctx().app, o), [])
    // A second click on Undo restores nothing, and says so.
    const again = await o.web.post(
      '/trash/restore',
      { fileIds: ids, return_to: textOf(returnTo ?? '').trim() },
      back,
    )
    assert.equal(again.headers.location, `/folders/${folder.id}?done=nothing-restored&n=0`)
    assert.match(textOf((await o.web.get(again.headers.location as string)).body), /Nothing to restore/)
  })

  test('a delete from a file’s page says where it goes, and its Undo brings back the file with its link', async () => {
    const o = await owner(ctx())
    const file = await createFile(ctx(), o.id, { name: 'report.pdf' })
    const share = (await api(ctx().app, o, 'POST', '/shares', { fileId: file.id })).body.data
    const ask = await o.web.get(`/files/${file.id}/delete`)
    assert.match(
      textOf(ask.body),
      /It moves to the trash, where it can be restored for 30 days; after that it is deleted for good, with its bytes\. Its share link stops working until it is restored \(0 views, 0 downloads so far\)\./,
    )
    const deleted = await o.web.post(`/files/${file.id}/delete`, {}, `/files/${file.id}/delete`)
    assert.equal(deleted.headers.location, `/?done=trashed&n=1&undo=${file.id}`)
    const notice = await o.web.get(deleted.headers.location as string)
    assert.match(textOf(notice.body), /1 file moved to the trash\./)
    assert.deepEqual(undoIds(notice.body), [file.id])
    assert.equal(
      (await ctx().app.inject({ method: 'GET', url: new URL(share.publicUrl).pathname })).statusCode,
      404,
    )
    const undone = await o.web.post('/trash/restore', { fileIds: [file.id], return_to: '/' }, '/')
    assert.equal(undone.headers.location, '/?done=restored&n=1')
    assert.equal(
      (await api(ctx().app, o, 'GET', `/files/${file.id}`)).body.data.share.publicUrl,
      share.publicUrl,
    )
    assert.equal(
      (await ctx().app.inject({ method: 'GET', url: new URL(share.publicUrl).pathname })).statusCode,
      200,
    )
    // An Undo in an address that is not a delete's notice offers nothing; a malformed one is a 400 page.
    assert.deepEqual(undoIds((await o.web.get(`/?done=moved&n=1&undo=${file.id}`)).body), [])
    assert.equal((await o.web.get('/?done=trashed&n=1&undo=not%20an%20id')).statusCode, 400)
  })

  test('the Trash page: deleted last first, its size, when each goes for good; Restore, Delete forever, Empty', async () => {
    const o = await owner(ctx())
    const folder = (await api(ctx().app, o, 'POST', '/folders', { name: 'Old stuff' })).body.data
    const first = await createFile(ctx(), o.id, { name: 'first.txt', content: 'x'.repeat(1500) })
    const second = await createFile(ctx(), o.id, { name: '<b>second</b>.txt', folderId: folder.id })
    const kept = await createFile(ctx(), o.id, { name: 'kept.txt' })
    const empty = await o.web.get('/trash')
    assert.equal(empty.statusCode, 200)
    assert.match(textOf(empty.body), /The trash is empty Files you delete wait here for 30 days/)
    assert.ok(!empty.body.includes('href="/trash/empty"'), 'nothing to empty')
    assert.equal((await o.web.get('/trash/empty')).headers.location, '/trash', 'nothing to confirm')

    const log = ctx().app.log
    await ctx().app.services.files.delete(o.id, first.id, log)
    await new Promise((resolve) => setTimeout(resolve, 5))
    await ctx().app.services.files.delete(o.id, second.id, log)
    const page = await o.web.get('/trash')
    assert.deepEqual(trashRows(page.body), [second.id, first.id], 'deleted last first')
    const text = textOf(page.body)
    const bytes = 1500 + second.size
    assert.match(text, new RegExp(`Trash 2 files ?, ${(bytes / 1000).toFixed(1)} kB`))
    assert.match(text, /Deleted files stay here for 30 days, then are deleted for good\./)
    assert.ok(text.includes('<b>second</b>.txt'), 'the name is text')
    assert.ok(!page.body.includes('<b>second'), 'never markup')
    assert.match(text, /from Old stuff/)
    assert.match(text, /from All files/)
    const purge = new Date(Date.now() + 30 * 86_400_000)
    const month = purge.toLocaleString('en', { month: 'short', timeZone: 'UTC' })
    assert.match(
      text,
      new RegExp(
        `Deleted for good ${month} ${purge.getUTCDate()}, ${purge.getUTCFullYear()} \\(in 30 days\\)`,
      ),
    )
    assert.ok(!trashRows(page.body).includes(kept.id))

    // Restore one: back in its folder.
    const restored = await o.web.post(
      '/trash/restore',
      { fileIds: [second.id], return_to: '/trash' },
      '/trash',
    )
    assert.equal(restored.headers.location, '/trash?done=restored&n=1')
    const after = await o.web.get(restored.headers.location as string)
    assert.match(textOf(after.body), /File restored: it is back in its folder\./)
    assert.deepEqual(trashRows(after.body), [first.id])
    assert.equal((await api(ctx().app, o, 'GET', `/files/${second.id}`)).body.data.folderId, folder.id)

    // Delete one forever: asked first (the row's link, a GET that changes nothing), then gone from the trash and
    // the API's.
    assert.match((await o.web.get('/trash')).body, new RegExp(`href="/trash/${first.id}/delete"`))
    const ask = await o.web.get(`/trash/${first.id}/delete`)
    assert.equal(ask.statusCode, 200)
    assert.match(textOf(ask.body), /Delete forever\?/)
    assert.match(textOf(ask.body), /This cannot be undone\./)
    assert.ok(ask.body.includes(`action="/trash/${first.id}/delete"`))
    assert.deepEqual(await trashIds(ctx().app, o), [first.id])
    const forever = await o.web.post(
      `/trash/${first.id}/delete`,
      { return_to: '/trash' },
      `/trash/${first.id}/delete`,
    )
    assert.equal(forever.headers.location, '/trash?done=deleted-forever&n=1')
    assert.match(textOf((await o.web.get('/trash?done=deleted-forever&n=1')).body), /File deleted for good\./)
    assert.deepEqual(await trashIds(ctx().app, o), [])
    assert.equal((await api(ctx().app, o, 'POST', `/trash/${first.id}/restore`)).status, 404)
    const twice = await o.web.post(`/trash/${first.id}/delete`, {}, '/trash')
    assert.equal(twice.statusCode, 404, 'a file the trash does not hold is a 404 page')
    assert.equal((await o.web.get(`/trash/${first.id}/delete`)).statusCode, 404)

    // Empty: asked first (a GET changes nothing), then every file goes for good.
    await ctx().app.services.files.deleteMany(o.id, [second.id, kept.id], log)
    const confirm = await o.web.get('/trash/empty')
    assert.equal(confirm.statusCode, 200)
    assert.match(
      textOf(confirm.body),
      /Empty the trash\? The 2 files in the trash \(.+\) are deleted for good, with their bytes and share links\. This cannot be undone\./,
    )
    assert.equal((await trashIds(ctx().app, o)).length, 2, 'asking empties nothing')
    const emptied = await o.web.post('/trash/empty', {}, '/trash/empty')
    assert.equal(emptied.headers.location, '/trash?done=emptied&n=2')
    const done = await o.web.get(emptied.headers.location as string)
    assert.match(textOf(done.body), /Trash emptied: 2 files deleted for good\./)
    assert.match(textOf(done.body), /The trash is empty/)
    assert.deepEqual(await trashIds(ctx().app, o), [])
    assert.equal((await api(ctx().app, o, 'GET', `/files/${kept.id}`)).status, 404)
  })

  test('the trash is paged: 50 files, More, then the rest', async () => {
    const o = await owner(ctx())
    await insertFiles(ctx(), o.id, [1, 55], ['paged-', '.txt'])
    const ids = Array.from({ length: 55 }, (_, i) => `fil_${o.id}_${i + 1}`)
    await ctx().app.services.trash.discard(o.id, ids, ctx().app.log)
    const first = await o.web.get('/trash')
    assert.equal(trashRows(first.body).length, 50)
    assert.match(textOf(first.body), /55 files ?, 55 bytes/)
    const more = textOf(/href="([^"]+)" rel="next"/.exec(first.body)?.[1] ?? '').trim()
    assert.ok(more, 'a More link')
    const second = await o.web.get(more)
    const rest = trashRows(second.body)
    assert.equal(rest.length, 5)
    assert.equal(new Set([...trashRows(first.body), ...rest]).size, 55)
    assert.ok(!second.body.includes('rel="next"'), 'the last page has no More')
    assert.ok(second.body.includes('<a class="button" href="/trash">Deleted last</a>'), 'a way back')
    assert.equal(
      (await o.web.get('/trash?cursor=%25%25')).statusCode,
      400,
      'a malformed cursor is a 400 page',
    )
  })

  test('another account’s trash is neither shown nor touched', async () => {
    const a = await owner(ctx())
    const b = await owner(ctx())
    const file = await createFile(ctx(), b.id, { name: 'secret-name.txt' })
    await ctx().app.services.files.delete(b.id, file.id, ctx().app.log)
    const page = await a.web.get('/trash')
    assert.ok(!page.body.includes('secret'), 'not listed')
    const restore = await a.web.post('/trash/restore', { fileIds: [file.id], return_to: '/trash' }, '/trash')
    assert.equal(restore.headers.location, '/trash?done=nothing-restored&n=0')
    const forever = await a.web.post(`/trash/${file.id}/delete`, {}, '/trash')
    assert.equal(forever.statusCode, 404)
    assert.ok(!forever.body.includes('secret'))
    await a.web.post('/trash/empty', {}, '/trash')
    assert.deepEqual(await trashIds(ctx().app, b), [file.id], 'still in its owner’s trash')
    // A return_to elsewhere is not followed.
    const foreign = await b.web.post(
      '/trash/restore',
      { fileIds: [file.id], return_to: 'https://evil.example/' },
      '/trash',
    )
    assert.equal(foreign.headers.location, '/trash?done=restored&n=1')
  })

  test('a restore of too many ids or a malformed form is a 400 page; an unknown id or a foreign return_to is let go', async () => {
    const o = await owner(ctx())
    const file = await createFile(ctx(), o.id, { name: 'odd.txt' })
    await ctx().app.services.files.delete(o.id, file.id, ctx().app.log)
    const many = Array.from({ length: 101 }, (_, i) => `fil_${i}`)
    const tooMany = await o.web.post('/trash/restore', { fileIds: many }, '/trash')
    assert.equal(tooMany.statusCode, 400)
    assert.match(tooMany.headers['content-type'] as string, /^text\/html/)
    const unknownField = await o.web.post('/trash/restore', { fileIds: [file.id], colour: 'red' }, '/trash')
    assert.equal(unknownField.statusCode, 400)
    const odd = await o.web.post(
      '/trash/restore',
      { fileIds: ['<script>', 'x'.repeat(100), file.id], return_to: '//evil.example/' },
      '/trash',
    )
    assert.equal(odd.headers.location, '/trash?done=restored&n=1')
    const badId = await o.web.post(`/trash/${'x'.repeat(101)}/delete`, {}, '/trash')
    assert.equal(badId.statusCode, 400)
    assert.deepEqual(await trashIds(ctx().app, o), [])
  })

  test('every trash form refuses a missing or wrong CSRF token, and nothing changes', async () => {
    const o = await owner(ctx())
    const file = await createFile(ctx(), o.id, { name: 'keep.txt' })
    await ctx().app.services.files.delete(o.id, file.id, ctx().app.log)
    const forms: [string, Record<string, string | string[]>][] = [
      ['/trash/restore', { fileIds: [file.id], return_to: '/' }],
      [`/trash/${file.id}/delete`, {}],
      ['/trash/empty', {}],
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
    assert.deepEqual(await trashIds(ctx().app, o), [file.id], 'still in the trash')
  })
})

describeEachEngine(
  'with TRASH_RETENTION_DAYS=0, the files app says deletes are final',
  (ctx) => {
    test('the confirmations say deleted for good, the notice has no Undo, the Trash page says there is none', async () => {
      const o = await owner(ctx())
      const files = await Promise.all(['a.txt', 'b.txt'].map((name) => createFile(ctx(), o.id, { name })))
      const ids = files.map((file) => file.id)
      const home = await o.web.get('/')
      assert.ok(!home.body.includes('href="/trash"'), 'no link to a trash there is not')
      const ask = await o.web.post('/files/bulk', { action: 'delete', fileIds: ids }, '/')
      assert.match(textOf(ask.body), /Delete 2 files\? They are deleted for good, with their bytes\./)
      assert.ok(!textOf(ask.body).includes('trash'))
      const one = await o.web.get(`/files/${ids[0]}/delete`)
      assert.match(textOf(one.body), /It is deleted for good, with its bytes\./)
      const confirmed = await o.web.post('/files/bulk', { action: 'confirm-delete', fileIds: ids }, '/')
      assert.equal(confirmed.headers.location, '/?done=deleted&n=2')
      const notice = await o.web.get(confirmed.headers.location as string)
      assert.match(textOf(notice.body), /2 files deleted\./)
      assert.ok(!notice.body.includes('notice-undo'), 'nothing to undo')
      const trash = await o.web.get('/trash')
      assert.equal(trash.statusCode, 200)
      assert.match(
        textOf(trash.body),
        /Trash There is no trash on this server Deletes are final here: a deleted file is gone for good at once/,
      )
      assert.deepEqual(trashRows(trash.body), [])
      for (const id of ids) assert.equal((await api(ctx().app, o, 'GET', `/files/${id}`)).status, 404)
    })
  },
  { env: { TRASH_RETENTION_DAYS: '0' } },
)
