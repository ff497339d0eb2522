// The owner's file request pages over HTTP, where a browser is not needed to see the rule: the list, the form
// of a new request and its limits (what the API then holds), editing, disabling, enabling, moving; every form
// refused without its CSRF token; another account's request answering 404 on every route and changing
// nothing; bad fields shown again with a 400 and the field marked; hostile titles, descriptions and what
// submitters typed rendered as text; a GET that changes nothing; paging of requests and of submissions.
// Submissions arrive as on the public page: prepared through the public API, bytes sent by the @vercel/blob
// client, processed. The same pages in Chromium are in requests-app-browser.test.ts.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { App } from '../src/app.ts'
import { ALL, call, ENGINES } from './support/harness.ts'
import { newFolder, publicIdOf, REQUESTS, tick } from './support/requests-helpers.ts'
import { submit } from './support/submissions.ts'
import { type ListeningContext, startListening } from './support/uploads.ts'
import { newOwner, WebClient } from './support/web-client.ts'

const HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)> "q" \'q\' &amp; שלום'

interface Owner {
  id: string
  email: string
  web: WebClient
  /** An API key of the owner, to see what the API holds. */
  token: string
}

async function owner(app: App): Promise<Owner> {
  const { id, email } = await newOwner(app)
  const web = await WebClient.signedIn(app, email)
  const { secret } = await app.services.apiKeys.create({ accountId: id, name: 'test', scopes: ALL })
  return { id, email, web, token: secret }
}

/** A complete new-request form; `fields` replace or add to it. */
function requestForm(fields: Record<string, string> = {}): Record<string, string> {
  return {
    title: 'Tax documents 2026',
    description: 'Payslips and receipts, please.',
    folderId: '',
    email: 'required',
    deadline: '',
    maxFiles: '',
    maxFileSize: '',
    allowedTypes: '',
    ...fields,
  }
}

/** Makes a request through the form; returns its id. */
async function createByForm(o: Owner, fields: Record<string, string> = {}): Promise<string> {
  const res = await o.web.post('/requests', requestForm(fields), '/requests/new')
  assert.equal(res.statusCode, 303, res.body)
  const match = /^\/requests\/(req_[A-Za-z0-9_]+)\?done=created$/.exec(String(res.headers.location))
  assert.ok(match?.[1], `redirected to the new request: ${res.headers.location}`)
  return match[1]
}

const apiRequest = async (app: App, o: Owner, id: string) =>
  (await call(app, 'GET', `${REQUESTS}/${id}`, { token: o.token })).body.data
const apiLimits = async (app: App, o: Owner, id: string) =>
  (await call(app, 'GET', `${REQUESTS}/${id}/limits`, { token: o.token })).body.data

/** The UTC day `days` from today, as a date input gives it. */
const dayFromNow = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)
const dayAfter = (day: string) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)

/** The error shown beside a field, and whether the field is marked invalid. */
function fieldError(body: string, name: string): string | undefined {
  const input = new RegExp(`<(?:input|select|textarea) id="field-${name}"[^>]*>`).exec(body)?.[0]
  assert.ok(input, `the form has the field ${name}`)
  if (!input.includes('aria-invalid="true"')) return undefined
  return new RegExp(`<p class="field-error" id="field-${name}-error">([^<]*)</p>`).exec(body)?.[1]
}

const textOf = (body: string) => body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ')

for (const engine of ENGINES) {
  describe(`file request pages of the app [${engine}]`, () => {
    let c: ListeningContext
    before(async () => {
      c = await startListening(engine)
    })
    after(async () => c?.stop())

    test('signed out, or with an API key only, no page opens', async () => {
      const o = await owner(c.app)
      const id = await createByForm(o)
      for (const url of ['/requests', '/requests/new', `/requests/${id}`, `/requests/${id}/edit`]) {
        const signedOut = await new WebClient(c.app).get(url)
        assert.equal(signedOut.statusCode, 303, url)
        assert.equal(signedOut.headers.location, `/account/sign-in?return_to=${encodeURIComponent(url)}`)
        const withKey = await c.app.inject({
          method: 'GET',
          url,
          headers: { authorization: `Bearer ${o.token}`, accept: 'text/html' },
        })
        assert.equal(withKey.statusCode, 303, `${url} with an API key`)
        assert.doesNotMatch(withKey.body, /Tax documents/)
      }
      const post = await new WebClient(c.app).send('POST', `/requests/${id}/disable`, '_csrf=x', {
        accept: 'text/html',
        'content-type': 'application/x-www-form-urlencoded',
      })
      assert.equal(post.statusCode, 303)
      assert.equal(post.headers.location, '/account/sign-in')
      assert.equal((await apiRequest(c.app, o, id)).isActive, true)
    })

    test('a new account sees what a file request is, and the way to make one', async () => {
      const o = await owner(c.app)
      const res = await o.web.get('/requests')
      assert.equal(res.statusCode, 200)
      assert.match(res.body, /No file requests yet/)
      assert.match(res.body, /A file request is a link you send/)
      assert.match(res.body, /<a class="button primary" href="\/requests\/new">/)
      assert.match(res.body, /<a href="\/requests" aria-current="page">File requests<\/a>/)
    })

    test('the form makes a request with its limits, as the API then holds it; the page shows it all', async () => {
      const o = await owner(c.app)
      const folder = await newFolder(c.app, o.token, 'Taxes')
      const form = await o.web.get('/requests/new')
      assert.equal(form.statusCode, 200)
      for (const label of ['Title', 'Description', 'Folder', 'Deadline', 'Maximum files', 'Allowed types']) {
        assert.match(form.body, new RegExp(`<label for="field-[A-Za-z]+">${label}[ <]`), label)
      }
      assert.match(form.body, new RegExp(`<option value="${folder.id}">Taxes</option>`))
      assert.match(form.body, /<option value="" selected>No folder<\/option>/)

      const day = dayFromNow(10)
      const id = await createByForm(o, {
        title: '  Tax documents 2026 ',
        folderId: folder.id,
        email: 'optional',
        deadline: day,
        maxFiles: '12',
        maxFileSize: '2.5',
        allowedTypes: '.PDF, image/*  .docx,,',
      })
      const r = await apiRequest(c.app, o, id)
      assert.equal(r.title, 'Tax documents 2026')
      assert.equal(r.description, 'Payslips and receipts, please.')
      assert.equal(r.folderId, folder.id)
      assert.equal(r.folder.requestCount, 1)
      assert.equal(r.collectEmail, true)
      assert.equal(r.emailRequired, false)
      assert.equal(r.isActive, true)
      // The end of the day chosen, UTC where the reader's zone is not known: the next day's first instant.
      assert.deepEqual(await apiLimits(c.app, o, id), {
        deadline: `${dayAfter(day)}T00:00:00.000Z`,
        maxFiles: 12,
        maxFileSize: 2_500_000,
        allowedTypes: ['.pdf', 'image/*', '.docx'],
      })

      const page = await o.web.get(`/requests/${id}?done=created`)
      assert.equal(page.statusCode, 200)
      const text = textOf(page.body)
      assert.match(page.body, /<p class="inline-notice" role="status">File request created\./)
      assert.match(text, /Tax documents 2026 Active/)
      assert.ok(page.body.includes(`data-copy="${r.publicUrl}"`), 'a Copy button with the public link')
      assert.ok(page.body.includes(`<a class="button small" href="${r.publicUrl}">Open`), 'an Open link')
      assert.match(text, /Files accepted 0 of 12/)
      assert.match(text, /Largest file 2\.5 MB/)
      assert.match(text, /Accepted types \.pdf, any image or \.docx/)
      assert.match(text, /Submitter’s email Asked, optional/)
      assert.match(page.body, new RegExp(`href="/folders/${folder.id}">Taxes</a>`))
      assert.match(text, /No files yet/)
      // A done code that is not one of the page's is no notice; free text never reaches the page.
      const made = await o.web.get(`/requests/${id}?done=${encodeURIComponent('<b>hacked</b>')}`)
      assert.equal(made.statusCode, 400)
      assert.doesNotMatch(made.body, /hacked/)

      const list = await o.web.get('/requests')
      assert.match(
        textOf(list.body),
        /Tax documents 2026 Active .*Taxes .*Created .*Until .*12 files at most/,
      )
      assert.match(
        list.body,
        /<span class="req-count-number">0<\/span> <span class="req-count-label">files received/,
      )
      assert.ok(list.body.includes(`data-copy="${r.publicUrl}"`))

      // The public page opens.
      const open = await fetch(r.publicUrl, { headers: { accept: 'text/html' } })
      assert.equal(open.status, 200)
      assert.match(await open.text(), /Tax documents 2026/)
    })

    test('bad fields: the form again with a 400 and the field marked; nothing is written', async () => {
      const o = await owner(c.app)
      const cases: [Record<string, string>, string, RegExp][] = [
        [{ title: '' }, 'title', /Fill this in/],
        [{ title: 'ab' }, 'title', /at least 3 characters/],
        [{ title: '   a   ' }, 'title', /at least 3 characters, not counting spaces/],
        [{ title: 'x'.repeat(101) }, 'title', /at most 100 characters/],
        [{ description: 'x'.repeat(501) }, 'description', /at most 500 characters/],
        [{ email: 'maybe' }, 'email', /Choose one of the options/],
        [{ deadline: '2026-02-30' }, 'deadline', /Enter a day/],
        [{ deadline: 'tomorrow' }, 'deadline', /Enter a day/],
        [{ deadline: dayFromNow(-1) }, 'deadline', /Choose today or a later day/],
        [{ maxFiles: '0' }, 'maxFiles', /whole number from 1 to 1,000,000/],
        [{ maxFiles: '2.5' }, 'maxFiles', /whole number/],
        [{ maxFiles: '1000001' }, 'maxFiles', /whole number from 1 to 1,000,000/],
        [{ maxFileSize: '0' }, 'maxFileSize', /size in megabytes/],
        [{ maxFileSize: 'big' }, 'maxFileSize', /size in megabytes/],
        [{ maxFileSize: '999999999' }, 'maxFileSize', /the largest file this server accepts/],
        [{ allowedTypes: '.pdf, not a type' }, 'allowedTypes', /“not” is neither an extension/],
        [{ allowedTypes: '<b>' }, 'allowedTypes', /“&#60;b&#62;” is neither/],
        [
          { allowedTypes: Array.from({ length: 51 }, (_, i) => `.x${i}`).join(',') },
          'allowedTypes',
          /at most 50 types/,
        ],
        [{ folderId: 'fld_nothere' }, 'folderId', /no longer exists/],
      ]
      for (const [fields, name, message] of cases) {
        const res = await o.web.post('/requests', requestForm(fields), '/requests/new')
        const what = JSON.stringify(fields).slice(0, 80)
        assert.equal(res.statusCode, name === 'folderId' ? 404 : 400, what)
        assert.match(String(fieldError(res.body, name)), message, what)
        // What was typed is shown again.
        if (name !== 'title') assert.ok(res.body.includes('value="Tax documents 2026"'), what)
        assert.match(res.body, /<title>New file request · Coffer<\/title>/)
      }
      const unknown = await o.web.post('/requests', requestForm({ isActive: 'false' }), '/requests/new')
      assert.equal(unknown.statusCode, 400)
      assert.match(unknown.body, /This form has no field named &#34;isActive&#34;/)
      const listed = await call(c.app, 'GET', REQUESTS, { token: o.token })
      assert.deepEqual(listed.body.data, [], 'no request was made')
    })

    test('edit: everything changes in one step, limits included; the exact deadline is kept on its day', async () => {
      const o = await owner(c.app)
      const id = await createByForm(o, { maxFiles: '3', allowedTypes: '.pdf' })
      // A deadline set through the API at 14:30 UTC.
      const day = dayFromNow(20)
      await call(c.app, 'PUT', `${REQUESTS}/${id}/limits`, {
        token: o.token,
        body: { deadline: `${day}T14:30:00.000Z`, maxFiles: 3, allowedTypes: ['.pdf'] },
      })
      const edit = await o.web.get(`/requests/${id}/edit`)
      assert.equal(edit.statusCode, 200)
      assert.match(edit.body, /value="Tax documents 2026"/)
      assert.match(edit.body, new RegExp(`name="deadline" type="date" value="${day}"`))
      assert.match(edit.body, /name="deadlineKept" value="[^"]+T14:30:00\.000Z"/)
      assert.match(
        edit.body,
        /The current deadline, \w+ \d+, \d{4}, 14:30, is kept while the day stays the same/,
      )
      assert.match(edit.body, /name="maxFiles" type="number" value="3"/)
      assert.match(edit.body, /<option value="required" selected>/)

      const folder = await newFolder(c.app, o.token)
      const token = await o.web.csrfToken(`/requests/${id}/edit`)
      const saved = await o.web.post(`/requests/${id}`, {
        ...requestForm({
          title: 'Receipts',
          description: '',
          folderId: folder.id,
          email: 'off',
          deadline: day,
          deadlineKept: `${day}T14:30:00.000Z`,
          maxFiles: '',
          maxFileSize: '1',
          allowedTypes: '',
        }),
        _csrf: token,
      })
      assert.equal(saved.statusCode, 303, saved.body)
      assert.equal(saved.headers.location, `/requests/${id}?done=saved`)
      const r = await apiRequest(c.app, o, id)
      assert.equal(r.title, 'Receipts')
      assert.equal(r.description, null)
      assert.equal(r.folderId, folder.id)
      assert.equal(r.collectEmail, false)
      assert.equal(r.emailRequired, false)
      assert.deepEqual(await apiLimits(c.app, o, id), {
        deadline: `${day}T14:30:00.000Z`,
        maxFiles: null,
        maxFileSize: 1_000_000,
        allowedTypes: [],
      })
      // Another day: the end of that day, UTC.
      const later = dayFromNow(30)
      const moved = await o.web.post(
        `/requests/${id}`,
        requestForm({ title: 'Receipts', deadline: later, deadlineKept: `${day}T14:30:00.000Z` }),
        `/requests/${id}/edit`,
      )
      assert.equal(moved.statusCode, 303)
      assert.equal((await apiLimits(c.app, o, id)).deadline, `${dayAfter(later)}T00:00:00.000Z`)

      // A refusal changes nothing, the limits included: one transaction.
      const refused = await o.web.post(
        `/requests/${id}`,
        requestForm({ title: 'Changed', deadline: dayFromNow(-2), maxFiles: '7' }),
        `/requests/${id}/edit`,
      )
      assert.equal(refused.statusCode, 400)
      assert.match(String(fieldError(refused.body, 'deadline')), /Choose today or a later day/)
      assert.match(refused.body, /value="Changed"/)
      assert.equal((await apiRequest(c.app, o, id)).title, 'Receipts')
      assert.equal((await apiLimits(c.app, o, id)).maxFiles, null)
      const badType = await o.web.post(
        `/requests/${id}`,
        requestForm({ title: 'Changed', allowedTypes: 'pdf' }),
        `/requests/${id}/edit`,
      )
      assert.equal(badType.statusCode, 400)
      assert.match(String(fieldError(badType.body, 'allowedTypes')), /“pdf” is neither/)
      assert.equal((await apiRequest(c.app, o, id)).title, 'Receipts')
    })

    test("a deadline's day ends in the owner's time zone, shown as that day on the list, the page and the form", async () => {
      const o = await owner(c.app)
      o.web.cookies.set('coffer_tz', encodeURIComponent('America/Los_Angeles'))
      const form = await o.web.get('/requests/new')
      assert.match(form.body, /<input type="hidden" name="timeZone" value="America\/Los_Angeles">/)
      assert.match(textOf(form.body), /until the end of this day, America\/Los_Angeles time\./)
      const day = dayFromNow(12)
      const id = await createByForm(o, { deadline: day, timeZone: 'America/Los_Angeles' })
      const deadline = Date.parse((await apiLimits(c.app, o, id)).deadline)
      // Swedish writes a date and time as ISO does: "2026-12-05 23:59:00".
      const inLa = (ms: number) => new Date(ms).toLocaleString('sv-SE', { timeZone: 'America/Los_Angeles' })
      assert.equal(inLa(deadline - 60_000), `${day} 23:59:00`, 'its last minute there takes files')
      assert.match(inLa(deadline), / 00:00:00$/)
      const words = new Date(`${day}T12:00:00Z`).toLocaleDateString('en-US', {
        timeZone: 'UTC',
        month: 'short',
        day: 'numeric',
        year: 'numeric',
      })
      assert.match(textOf((await o.web.get('/requests')).body), new RegExp(`Until ${words}`))
      assert.match(textOf((await o.web.get(`/requests/${id}`)).body), new RegExp(`Deadline ${words}`))
      assert.match(
        (await o.web.get(`/requests/${id}/edit`)).body,
        new RegExp(`name="deadline" type="date" value="${day}"`),
      )
      // The public page, read from elsewhere, says when that is in its reader's zone (here UTC: no cookie).
      const publicPage = await c.app.inject({
        method: 'GET',
        url: new URL((await apiRequest(c.app, o, id)).publicUrl).pathname,
      })
      assert.match(
        publicPage.body,
        new RegExp(`Open until <time datetime="${new Date(deadline).toISOString()}" data-local="until"`),
      )
    })

    test('disable, enable, move: each a POST answered with the page and what was done', async () => {
      const o = await owner(c.app)
      const first = await newFolder(c.app, o.token, 'First')
      const second = await newFolder(c.app, o.token, 'Second')
      const id = await createByForm(o, { folderId: first.id })
      const r = await apiRequest(c.app, o, id)

      const disabled = await o.web.post(`/requests/${id}/disable`, {}, `/requests/${id}`)
      assert.equal(disabled.statusCode, 303)
      assert.equal(disabled.headers.location, `/requests/${id}?done=disabled`)
      assert.equal((await apiRequest(c.app, o, id)).isActive, false)
      assert.equal((await fetch(r.publicUrl)).status, 410)
      const page = await o.web.get(`/requests/${id}?done=disabled`)
      assert.match(textOf(page.body), /File request disabled: its public page no longer accepts files\./)
      assert.match(textOf(page.body), /Closed · Disabled/)
      assert.match(page.body, /Enable it to accept files again/)
      assert.match(page.body, /<button class="button primary" type="submit">Enable<\/button>/)
      assert.match(textOf((await o.web.get('/requests')).body), /Closed · Disabled/)

      const enabled = await o.web.post(`/requests/${id}/enable`, {}, `/requests/${id}`)
      assert.equal(enabled.headers.location, `/requests/${id}?done=enabled`)
      assert.equal((await apiRequest(c.app, o, id)).isActive, true)
      assert.equal((await fetch(r.publicUrl)).status, 200)

      const moved = await o.web.post(`/requests/${id}/move`, { folderId: second.id }, `/requests/${id}`)
      assert.equal(moved.headers.location, `/requests/${id}?done=moved`)
      const after = await apiRequest(c.app, o, id)
      assert.equal(after.folderId, second.id)
      const counts = await call(c.app, 'GET', '/api/v1/folders', { token: o.token })
      assert.deepEqual(
        counts.body.data.map((f: { name: string; requestCount: number }) => [f.name, f.requestCount]).sort(),
        [
          ['First', 0],
          ['Second', 1],
        ],
      )
      const toRoot = await o.web.post(`/requests/${id}/move`, { folderId: '' }, `/requests/${id}`)
      assert.equal(toRoot.statusCode, 303)
      assert.equal((await apiRequest(c.app, o, id)).folderId, null)

      // A folder that is not there: the page again, the select marked.
      const stranger = await owner(c.app)
      const theirs = await newFolder(c.app, stranger.token)
      const refused = await o.web.post(`/requests/${id}/move`, { folderId: theirs.id }, `/requests/${id}`)
      assert.equal(refused.statusCode, 404)
      assert.match(refused.body, /<select id="move-folder" name="folderId"[^>]*aria-invalid="true"/)
      assert.match(refused.body, /This folder no longer exists\. Choose another\./)
      assert.match(refused.body, /<h1 id="page-title"/)
      assert.equal((await apiRequest(c.app, o, id)).folderId, null)

      // Deadline passed, and files all received: closed too, each said in words.
      await c.db.kysely
        .updateTable('file_requests')
        .set({ deadline_at: Date.now() - 1000 })
        .where('id', '=', id)
        .execute()
      assert.match(
        textOf((await o.web.get(`/requests/${id}`)).body),
        /Closed · Deadline passed.*Edit the deadline/,
      )
      await c.db.kysely
        .updateTable('file_requests')
        .set({ deadline_at: null, max_files: 1 })
        .where('id', '=', id)
        .execute()
      await submit(c.app, publicIdOf(r), { submitterEmail: 'a@example.com' }, [
        { name: 'a.txt', type: 'text/plain', content: 'a' },
      ])
      const full = textOf((await o.web.get(`/requests/${id}`)).body)
      assert.match(full, /Closed · File limit reached/)
      assert.match(full, /Files accepted 1 of 1/)
    })

    test('CSRF: every form is refused without its token, or with another session’s; nothing changes', async () => {
      const o = await owner(c.app)
      const folder = await newFolder(c.app, o.token)
      const id = await createByForm(o)
      const other = await owner(c.app)
      const othersToken = await other.web.csrfToken('/requests/new')
      const forms: [string, Record<string, string>][] = [
        ['/requests', requestForm({ title: 'Made without a token' })],
        [`/requests/${id}`, requestForm({ title: 'Changed without a token' })],
        [`/requests/${id}/disable`, {}],
        [`/requests/${id}/move`, { folderId: folder.id }],
      ]
      for (const [url, form] of forms) {
        for (const token of [undefined, othersToken, 'x']) {
          const body = new URLSearchParams(token === undefined ? form : { ...form, _csrf: token })
          const res = await o.web.send('POST', url, body.toString(), {
            accept: 'text/html',
            'content-type': 'application/x-www-form-urlencoded',
          })
          assert.equal(res.statusCode, 403, `${url} with ${token ?? 'no token'}`)
          assert.match(res.headers['content-type'] as string, /text\/html/)
        }
      }
      await o.web.post(`/requests/${id}/disable`, {}, `/requests/${id}`)
      const res = await o.web.send('POST', `/requests/${id}/enable`, '', {
        accept: 'text/html',
        'content-type': 'application/x-www-form-urlencoded',
      })
      assert.equal(res.statusCode, 403)
      const r = await apiRequest(c.app, o, id)
      assert.equal(r.title, 'Tax documents 2026')
      assert.equal(r.isActive, false)
      assert.equal(r.folderId, null)
      assert.equal((await call(c.app, 'GET', REQUESTS, { token: o.token })).body.data.length, 1)
    })

    test('another account’s request is a 404 page on every route, showing and changing nothing', async () => {
      const o = await owner(c.app)
      const theirs = await owner(c.app)
      const id = await createByForm(theirs, { title: 'Their secret project' })
      const folder = await newFolder(c.app, o.token)
      for (const url of [`/requests/${id}`, `/requests/${id}/edit`, `/requests/${id}?cursor=x`]) {
        const res = await o.web.get(url)
        assert.equal(res.statusCode, 404, url)
        assert.doesNotMatch(res.body, /Their secret project/)
      }
      const ownPage = '/requests/new'
      for (const [url, form] of [
        [`/requests/${id}`, requestForm({ title: 'Taken over' })],
        [`/requests/${id}/disable`, {}],
        [`/requests/${id}/enable`, {}],
        [`/requests/${id}/move`, { folderId: folder.id }],
        [`/requests/${id}/move`, { folderId: '' }],
      ] as const) {
        const res = await o.web.post(url, form, ownPage)
        assert.equal(res.statusCode, 404, url)
        assert.match(res.body, /Nothing here/)
        assert.doesNotMatch(res.body, /Their secret project/)
      }
      // An id that is nobody's, and one that is not an id at all.
      assert.equal((await o.web.get('/requests/req_nothing')).statusCode, 404)
      assert.equal((await o.web.get(`/requests/${'x'.repeat(200)}`)).statusCode, 400)
      const r = await apiRequest(c.app, theirs, id)
      assert.equal(r.title, 'Their secret project')
      assert.equal(r.isActive, true)
      assert.equal(r.folderId, null)
      assert.doesNotMatch((await o.web.get('/requests')).body, /Their secret project/)
    })

    test('hostile titles, descriptions, names, emails and messages stay text', async () => {
      const o = await owner(c.app)
      const folder = await newFolder(c.app, o.token, `${HOSTILE}`.slice(0, 100))
      const id = await createByForm(o, {
        title: HOSTILE.slice(0, 100),
        description: HOSTILE,
        folderId: folder.id,
        email: 'optional',
      })
      const r = await apiRequest(c.app, o, id)
      await submit(c.app, publicIdOf(r), { submitterName: HOSTILE.slice(0, 100), message: HOSTILE }, [
        { name: `${HOSTILE}.txt`, type: 'text/plain', content: 'x' },
      ])
      for (const url of ['/requests', `/requests/${id}`, `/requests/${id}/edit`]) {
        const res = await o.web.get(url)
        assert.equal(res.statusCode, 200, url)
        assert.doesNotMatch(res.body, /<script>alert|<img src=x/, url)
        assert.match(res.body, /&#60;script&#62;alert\(1\)&#60;\/script&#62;/, url)
      }
      const page = (await o.web.get(`/requests/${id}`)).body
      // Each of them is there, escaped: title, description, folder, the submitter's name and message, the file.
      assert.ok(page.split('&#60;script&#62;alert(1)').length - 1 >= 5, 'five texts shown, all escaped')
      assert.match(
        page,
        /<p class="req-sub-message">&#60;script&#62;alert\(1\)&#60;\/script&#62;&#60;img src&#61;x/,
      )
      assert.match(page, /<span class="req-sub-person">&#60;script&#62;/)
    })

    test('a GET changes nothing; there is no GET of an action', async () => {
      const o = await owner(c.app)
      const id = await createByForm(o)
      const row = () =>
        c.db.kysely.selectFrom('file_requests').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      const before = await row()
      await tick()
      for (const url of ['/requests', '/requests/new', `/requests/${id}`, `/requests/${id}/edit`]) {
        assert.equal((await o.web.get(url)).statusCode, 200, url)
      }
      for (const action of ['disable', 'enable', 'move']) {
        assert.equal((await o.web.get(`/requests/${id}/${action}`)).statusCode, 404, action)
      }
      assert.deepEqual(await row(), before)
    })

    test('the list and the submissions are paged with the API’s cursors; a deleted file keeps its name', async () => {
      const o = await owner(c.app)
      const ids: string[] = []
      for (let i = 0; i < 27; i++) {
        ids.push(await createByForm(o, { title: `Request number ${i}` }))
        await tick()
      }
      const first = await o.web.get('/requests')
      const titles = (body: string) =>
        [...body.matchAll(/<a href="\/requests\/req_[^"]+">([^<]+)<\/a>/g)].map((m) => m[1])
      assert.deepEqual(
        titles(first.body),
        ids
          .slice(2)
          .reverse()
          .map((_, i) => `Request number ${26 - i}`),
      )
      const more = /<a class="button" href="(\/requests\?cursor=[^"]+)">More requests<\/a>/.exec(
        first.body,
      )?.[1]
      assert.ok(more)
      const second = await o.web.get(more.replaceAll('&amp;', '&'))
      assert.deepEqual(titles(second.body), ['Request number 1', 'Request number 0'])
      assert.doesNotMatch(second.body, /More requests/)
      assert.doesNotMatch(second.body, /No file requests yet/)

      const id = ids[0] as string
      const r = await apiRequest(c.app, o, id)
      const files = Array.from({ length: 27 }, (_, i) => ({
        name: `doc-${i}.txt`,
        type: 'text/plain',
        content: `${i}`,
      }))
      await submit(
        c.app,
        publicIdOf(r),
        { submitterName: 'Ada', submitterEmail: 'ada@example.com', message: 'All of them' },
        files,
      )
      const subs = (await call(c.app, 'GET', `${REQUESTS}/${id}/submissions?limit=100`, { token: o.token }))
        .body.data
      assert.equal(subs.length, 27)
      const deleted = subs[0].file
      assert.equal(
        (await call(c.app, 'DELETE', `/api/v1/files/${deleted.id}`, { token: o.token })).status,
        200,
      )

      const page1 = await o.web.get(`/requests/${id}`)
      const links = (body: string) =>
        [...body.matchAll(/<a class="req-sub-name" href="\/files\/([^"]+)">/g)].map((m) => m[1])
      assert.deepEqual(
        links(page1.body),
        subs.slice(1, 25).map((s: { file: { id: string } }) => s.file.id),
      )
      assert.match(
        page1.body,
        new RegExp(`<span class="req-sub-name">${deleted.name}</span> <span class="badge">Deleted</span>`),
      )
      // One sending of 27 files: on this page of 25, one entry, who sent it and the message said once.
      assert.equal(page1.body.split('class="item req-sub"').length - 1, 1)
      assert.match(textOf(page1.body), /From Ada · ada@example\.com · .* · 25 files sent together/)
      assert.equal(textOf(page1.body).split('All of them').length, 2, 'the message once')
      assert.match(page1.body, /<time datetime="[^"]+" data-local>/)
      const next = /href="(\/requests\/[^"?]+\?cursor=[^"#]+)#submissions">More submissions/.exec(
        page1.body,
      )?.[1]
      assert.ok(next)
      const page2 = await o.web.get(next)
      assert.deepEqual(
        links(page2.body),
        subs.slice(25).map((s: { file: { id: string } }) => s.file.id),
      )
      assert.doesNotMatch(page2.body, /More submissions/)
      // The API's count is of Submissions, one per file: the page says files.
      assert.match(textOf(page2.body), /Submissions 27 files/)
    })
  })
}
