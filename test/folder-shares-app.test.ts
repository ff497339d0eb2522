// A folder's link in the owner's app over HTTP (issue 44, 2): the folder's page (/folders/{id}) says the folder
// is private and offers Share folder; sharing it makes the API's folder link and brings the browser back to the
// page's Share panel, which shows the link's full public address, its state, views, downloads and chart, and the
// form of its settings; a refused setting is the form again with its field marked (never a 500); the link is
// turned off and on again (the same address); another account can neither see nor change it (404 pages); every
// form refuses a missing CSRF token; and deleting the folder says its link goes with it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { ALL, call, createFile, describeEachEngine, type TestContext } from './support/harness.ts'
import { newOwner, WebClient } from './support/web-client.ts'

interface Owner {
  id: string
  /** An API key of the owner with every scope, to check what the pages did through the API. */
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

/** The public id of a link, from its public address (the API gives the address only). */
const publicIdOf = (share: { publicUrl: string }) =>
  new URL(share.publicUrl).pathname.split('/').pop() as string

/** The Share panel of a page, as HTML. */
const panelOf = (html: string) => /<section class="card share-panel"[\s\S]*?<\/section>/.exec(html)?.[0] ?? ''

/** The views and downloads the panel shows. */
const statsOf = (html: string) => {
  const stats = /<dl class="stats">([\s\S]*?)<\/dl>/.exec(html)?.[1] ?? ''
  const value = (name: string) => new RegExp(`<dt>${name}</dt><dd>([^<]*)</dd>`).exec(stats)?.[1]
  return { views: value('Views'), downloads: value('Downloads') }
}

/** The totals row of the panel's chart table. */
const chartTotals = (html: string) =>
  /<tfoot><tr><th scope="row">Total<\/th><td>([^<]*)<\/td><td>([^<]*)<\/td>/.exec(html)?.slice(1, 3)

async function folderWithFiles(ctx: TestContext, o: Owner, name = 'Holiday photos') {
  const folder = (await api(ctx.app, o, 'POST', '/folders', { name })).body.data
  const files = await Promise.all(
    ['a.txt', 'b.txt'].map((file) => createFile(ctx, o.id, { name: file, folderId: folder.id })),
  )
  return { folder, files }
}

describeEachEngine('a folder link in the files app over HTTP', (ctx) => {
  test('Share folder makes the link; the panel shows its address, state and settings; settings, off and on again', async () => {
    const o = await owner(ctx())
    const { folder } = await folderWithFiles(ctx(), o)
    const page = `/folders/${folder.id}`
    const private_ = await o.web.get(page)
    assert.equal(private_.statusCode, 200)
    assert.match(textOf(panelOf(private_.body)), /This folder is private\./)
    assert.match(private_.body, new RegExp(`action="/folders/${folder.id}/share"`))
    assert.equal((await api(ctx().app, o, 'GET', '/folder-shares')).body.data.length, 0)

    const made = await o.web.post(`/folders/${folder.id}/share`, {}, page)
    assert.equal(made.statusCode, 303, made.body)
    assert.equal(made.headers.location, `${page}?done=folder-share-on#share`)
    const [share] = (await api(ctx().app, o, 'GET', '/folder-shares')).body.data
    assert.equal(share.folderId, folder.id)
    assert.equal(share.isActive, true)
    const shared = await o.web.get(made.headers.location as string)
    assert.match(textOf(shared.body), /The folder’s share link works\. Copy it below/)
    const panel = panelOf(shared.body)
    assert.ok(panel.includes(`value="${share.publicUrl}"`), 'the full public address')
    assert.match(share.publicUrl, /\/sf\/[A-Za-z0-9_-]+$/)
    assert.match(
      textOf(panel),
      /Share Active Anyone with the link can see the files in this folder as they are now/,
    )
    assert.match(textOf(panel), /Never expires No password No download limit/)
    assert.match(panel, new RegExp(`action="/folder-shares/${share.id}/settings"`))
    assert.match(panel, new RegExp(`action="/folder-shares/${share.id}/disable"`))
    assert.match(textOf(shared.body), /Folder share link: Shared/, 'the folder’s actions link to the panel')
    // Sharing again answers the same link.
    await o.web.post(`/folders/${folder.id}/share`, {}, page)
    assert.equal((await api(ctx().app, o, 'GET', '/folder-shares')).body.data.length, 1)

    const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10)
    const saved = await o.web.post(
      `/folder-shares/${share.id}/settings`,
      { expires: day, password: 'open sesame', maxDownloads: '5' },
      page,
    )
    assert.equal(saved.statusCode, 303, saved.body)
    assert.equal(saved.headers.location, `${page}?done=share-saved#share`)
    const after = (await api(ctx().app, o, 'GET', `/folder-shares/${share.id}`)).body.data
    assert.equal(after.expiresAt, new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString())
    assert.equal(after.hasPassword, true)
    assert.equal(after.maxDownloads, 5)
    const withSettings = await o.web.get(saved.headers.location as string)
    assert.match(textOf(withSettings.body), /Share settings saved\./)
    assert.match(textOf(panelOf(withSettings.body)), /Asks for a password 0 of 5 downloads used/)
    assert.ok(!withSettings.body.includes('open sesame'), 'the password is never shown')

    const off = await o.web.post(`/folder-shares/${share.id}/disable`, {}, page)
    assert.equal(off.headers.location, `${page}?done=folder-share-off#share`)
    assert.equal((await api(ctx().app, o, 'GET', `/folder-shares/${share.id}`)).body.data.isActive, false)
    // A link turned off is gone (folder-share-pages.routes.ts), as a file link is.
    assert.equal((await ctx().app.inject({ method: 'GET', url: `/sf/${publicIdOf(share)}` })).statusCode, 410)
    const offPage = await o.web.get(off.headers.location as string)
    assert.match(textOf(offPage.body), /The folder’s share link is off/)
    assert.match(textOf(panelOf(offPage.body)), /Turned off Nobody can open it until you turn it on again/)
    assert.match(textOf(offPage.body), /Folder share link: Link off/)
    assert.match(panelOf(offPage.body), /Turn the link on again/)

    const on = await o.web.post(`/folders/${folder.id}/share`, {}, page)
    assert.equal(on.headers.location, `${page}?done=folder-share-on#share`)
    const again = (await api(ctx().app, o, 'GET', `/folder-shares/${share.id}`)).body.data
    assert.equal(again.isActive, true)
    assert.equal(again.publicUrl, share.publicUrl, 'the same address again')
    assert.equal(again.expiresAt, null, 'turned on again without an expiry, as a file link is')
  })

  test('a refused setting is the form again with its field marked, never a 500, and changes nothing', async () => {
    const o = await owner(ctx())
    const { folder } = await folderWithFiles(ctx(), o)
    const page = `/folders/${folder.id}`
    const share = (
      await api(ctx().app, o, 'POST', '/folder-shares', { folderId: folder.id, maxDownloads: 3 })
    ).body.data
    for (const [form, field] of [
      [{ expires: '2020-01-01' }, 'expires'],
      [{ expires: 'tomorrow' }, 'expires'],
      [{ maxDownloads: '0' }, 'maxDownloads'],
      [{ maxDownloads: 'ten' }, 'maxDownloads'],
      [{ maxDownloads: '1e99' }, 'maxDownloads'],
      [{ password: 'abc' }, 'password'],
    ] as const) {
      const refused = await o.web.post(`/folder-shares/${share.id}/settings`, form, page)
      assert.equal(refused.statusCode, 400, JSON.stringify(form))
      assert.match(refused.headers['content-type'] as string, /^text\/html/)
      assert.match(
        refused.body,
        new RegExp(`id="field-${field}"[^>]*aria-invalid="true"`),
        JSON.stringify(form),
      )
      assert.match(textOf(refused.body), /Share settings of “Holiday photos”/)
      assert.match(refused.body, new RegExp(`<a href="${page}">← Back to Holiday photos</a>`))
    }
    const all = await o.web.post(
      `/folder-shares/${share.id}/settings`,
      { expires: '2020-01-01', password: 'abc', maxDownloads: '0' },
      page,
    )
    assert.equal(all.statusCode, 400)
    for (const field of ['expires', 'password', 'maxDownloads']) {
      assert.match(all.body, new RegExp(`id="field-${field}"[^>]*aria-invalid="true"`), field)
    }
    assert.match(textOf(all.body), /Choose today or a later day\./)
    assert.ok(!all.body.includes('value="abc"'), 'a refused password is not written back')
    // A field the form does not have is refused as a whole.
    const unknown = await o.web.post(`/folder-shares/${share.id}/settings`, { isActive: 'false' }, page)
    assert.equal(unknown.statusCode, 400)
    const unchanged = (await api(ctx().app, o, 'GET', `/folder-shares/${share.id}`)).body.data
    assert.deepEqual(
      [unchanged.maxDownloads, unchanged.hasPassword, unchanged.expiresAt, unchanged.isActive],
      [3, false, null, true],
    )
    // Its own page of settings, as the form is shown again.
    const settings = await o.web.get(`/folder-shares/${share.id}/settings`)
    assert.equal(settings.statusCode, 200)
    assert.ok(settings.body.includes(`value="${share.publicUrl}"`))
    assert.match(settings.body, /id="field-maxDownloads" name="maxDownloads" type="number" value="3"/)
  })

  test('the panel counts the views and downloads of /sf/{publicId}, with its chart', async () => {
    const o = await owner(ctx())
    const { folder, files } = await folderWithFiles(ctx(), o)
    const share = (await api(ctx().app, o, 'POST', '/folder-shares', { folderId: folder.id })).body.data
    const publicPath = new URL(share.publicUrl).pathname
    assert.equal(publicPath, `/sf/${publicIdOf(share)}`)
    const before = await o.web.get(`/folders/${folder.id}`)
    assert.deepEqual(statsOf(before.body), { views: '0', downloads: '0' })
    assert.deepEqual(chartTotals(panelOf(before.body)), ['0', '0'])

    for (let i = 0; i < 3; i++) {
      const visit = await ctx().app.inject({ method: 'GET', url: publicPath })
      assert.equal(visit.statusCode, 200)
      assert.ok(visit.body.includes('a.txt'))
    }
    const one = await ctx().app.inject({
      method: 'GET',
      url: `${publicPath}/files/${files[0]?.id}/download`,
    })
    assert.equal(one.statusCode, 200)
    const zip = await ctx().app.inject({ method: 'GET', url: `${publicPath}/zip` })
    assert.equal(zip.statusCode, 200)

    const after = await o.web.get(`/folders/${folder.id}`)
    assert.deepEqual(statsOf(after.body), { views: '3', downloads: '2' })
    assert.deepEqual(chartTotals(panelOf(after.body)), ['3', '2'])
    assert.match(panelOf(after.body), /<h3 class="chart-title">Last 30 days<\/h3>/)
    // The owner's own visits to the folder's page count nothing.
    assert.equal((await api(ctx().app, o, 'GET', `/folder-shares/${share.id}`)).body.data.viewCount, 3)
  })

  test('another account’s folder and folder link are 404 pages that show nothing of them', async () => {
    const a = await owner(ctx())
    const b = await owner(ctx())
    const { folder } = await folderWithFiles(ctx(), b, 'Secret folder')
    const share = (await api(ctx().app, b, 'POST', '/folder-shares', { folderId: folder.id })).body.data
    const token = await a.web.csrfToken('/')
    for (const path of [`/folders/${folder.id}`, `/folder-shares/${share.id}/settings`]) {
      const res = await a.web.get(path)
      assert.equal(res.statusCode, 404, path)
      assert.match(res.headers['content-type'] as string, /^text\/html/, path)
      assert.ok(!res.body.includes('Secret'), `${path} shows nothing of it`)
    }
    const posts: [string, Record<string, string>][] = [
      [`/folders/${folder.id}/share`, {}],
      [`/folder-shares/${share.id}/settings`, { maxDownloads: '1' }],
      [`/folder-shares/${share.id}/settings`, { maxDownloads: '0' }],
      [`/folder-shares/${share.id}/disable`, {}],
    ]
    for (const [path, form] of posts) {
      const res = await a.web.post(path, { ...form, _csrf: token })
      assert.equal(res.statusCode, 404, path)
      assert.ok(!res.body.includes('Secret'), `${path} shows nothing of it`)
    }
    const still = (await api(ctx().app, b, 'GET', `/folder-shares/${share.id}`)).body.data
    assert.deepEqual([still.isActive, still.maxDownloads], [true, null])
    assert.equal((await api(ctx().app, a, 'GET', '/folder-shares')).body.data.length, 0)

    // A folder link's id is not a file link's, nor the reverse: each kind's routes know only their own.
    const file = await createFile(ctx(), b.id, { name: 'secret.txt' })
    const fileShare = (await api(ctx().app, b, 'POST', '/shares', { fileId: file.id })).body.data
    const bToken = await b.web.csrfToken('/')
    for (const path of [`/shares/${share.id}/disable`, `/folder-shares/${fileShare.id}/disable`]) {
      assert.equal((await b.web.post(path, { _csrf: bToken })).statusCode, 404, path)
    }
    assert.equal((await b.web.get(`/shares/${share.id}/settings`)).statusCode, 404)
    assert.equal((await b.web.get(`/folder-shares/${fileShare.id}/settings`)).statusCode, 404)
  })

  test('every folder link form refuses a missing or wrong CSRF token, and signed out sends to sign in', async () => {
    const o = await owner(ctx())
    const { folder } = await folderWithFiles(ctx(), o)
    const share = (await api(ctx().app, o, 'POST', '/folder-shares', { folderId: folder.id })).body.data
    const forms: [string, Record<string, string>][] = [
      [`/folders/${folder.id}/share`, {}],
      [`/folder-shares/${share.id}/settings`, { maxDownloads: '1' }],
      [`/folder-shares/${share.id}/disable`, {}],
    ]
    for (const [path, form] of forms) {
      for (const token of [undefined, 'forged-token']) {
        const body = new URLSearchParams(form)
        if (token) body.append('_csrf', token)
        const res = await o.web.send('POST', path, body.toString(), {
          accept: 'text/html',
          'content-type': 'application/x-www-form-urlencoded',
        })
        assert.equal(res.statusCode, 403, `${path} with ${token ?? 'no token'}`)
        assert.match(textOf(res.body), /This form has expired .* reload the page/)
      }
      const anonymous = await new WebClient(ctx().app).send(
        'POST',
        path,
        new URLSearchParams(form).toString(),
        {
          accept: 'text/html',
          'content-type': 'application/x-www-form-urlencoded',
        },
      )
      assert.equal(anonymous.statusCode, 303, path)
      assert.equal(anonymous.headers.location, '/account/sign-in')
    }
    const signedOut = await new WebClient(ctx().app).get(`/folder-shares/${share.id}/settings`)
    assert.equal(signedOut.statusCode, 303)
    const still = (await api(ctx().app, o, 'GET', `/folder-shares/${share.id}`)).body.data
    assert.deepEqual([still.isActive, still.maxDownloads], [true, null])
  })

  test('deleting a shared folder says its link goes with it', async () => {
    const o = await owner(ctx())
    const { folder } = await folderWithFiles(ctx(), o)
    const plain = await o.web.get(`/folders/${folder.id}/delete`)
    assert.doesNotMatch(textOf(plain.body), /own share link/)
    const share = (await api(ctx().app, o, 'POST', '/folder-shares', { folderId: folder.id })).body.data
    await ctx().app.inject({ method: 'GET', url: `/sf/${publicIdOf(share)}` })
    const ask = await o.web.get(`/folders/${folder.id}/delete`)
    assert.match(
      textOf(ask.body),
      /its 2 files move to All files, and nothing else changes \(the files’ share links and file requests keep working\)\. The folder’s own share link is deleted with it and stops working for good \(1 view, 0 downloads so far\)\./,
    )
    const deleted = await o.web.post(`/folders/${folder.id}/delete`, {}, `/folders/${folder.id}/delete`)
    assert.equal(deleted.statusCode, 303)
    assert.equal((await ctx().app.inject({ method: 'GET', url: `/sf/${publicIdOf(share)}` })).statusCode, 404)
  })
})
