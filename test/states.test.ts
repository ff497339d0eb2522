// One state per resource, the same on every surface the server draws (issue 43): a share link is `active`,
// `disabled`, `expired` or `exhausted`, a file request `open`, `disabled`, `past_deadline` or `full`, decided by
// share-state.ts and request-state.ts. Each state is made here, alone and together with the next reason in the
// order, and read back from the API (the resource, its list, the file that carries the link, analytics), the
// public page and the owner's pages; analytics' counts, which the database makes with the same rule in SQL,
// must count exactly the links and requests the function calls active and open.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { ALL, call, createFile, describeEachEngine, type TestContext } from './support/harness.ts'
import { publicIdOf, REQUESTS } from './support/requests-helpers.ts'
import { newOwner, WebClient } from './support/web-client.ts'

const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()

async function owner(app: App) {
  const { id, email } = await newOwner(app)
  const web = await WebClient.signedIn(app, email)
  const { secret } = await app.services.apiKeys.create({ accountId: id, name: 'test', scopes: ALL })
  return { id, web, token: secret }
}

const PAST = () => Date.now() - 60_000

describeEachEngine('one state per resource', (ctx) => {
  test('share links: active, disabled, expired, exhausted, first reason first, on every surface', async () => {
    const c: TestContext = ctx()
    const o = await owner(c.app)
    /** A link made through the API, then changed in the database as time and downloads would change it. */
    const link = async (changes: { disabled?: boolean; expired?: boolean; exhausted?: boolean }) => {
      const file = await createFile(c, o.id)
      const made = await call(c.app, 'POST', '/api/v1/shares', {
        token: o.token,
        body: { fileId: file.id, ...(changes.exhausted ? { maxDownloads: 1 } : {}) },
      })
      assert.equal(made.status, 201, JSON.stringify(made.body))
      const share = made.body.data as { id: string; publicUrl: string }
      if (Object.keys(changes).length === 0) return { ...share, fileId: file.id, fileName: file.name }
      await c.db.kysely
        .updateTable('shares')
        .set({
          ...(changes.disabled ? { is_active: false } : {}),
          ...(changes.expired ? { expires_at: PAST() } : {}),
          ...(changes.exhausted ? { download_count: 1 } : {}),
        })
        .where('id', '=', share.id)
        .execute()
      return { ...share, fileId: file.id, fileName: file.name }
    }
    const cases = [
      { made: {}, state: 'active', isActive: true, page: 200 },
      { made: { disabled: true }, state: 'disabled', isActive: false, page: 410 },
      { made: { expired: true }, state: 'expired', isActive: false, page: 410 },
      { made: { exhausted: true }, state: 'exhausted', isActive: true, page: 410 },
      {
        made: { disabled: true, expired: true, exhausted: true },
        state: 'disabled',
        isActive: false,
        page: 410,
      },
      { made: { expired: true, exhausted: true }, state: 'expired', isActive: false, page: 410 },
    ] as const
    const links = []
    for (const each of cases) links.push({ ...each, link: await link(each.made) })

    const listed = await call(c.app, 'GET', '/api/v1/shares?limit=100', { token: o.token })
    const listedState = new Map(
      (listed.body.data as { id: string; state: string }[]).map((share) => [share.id, share.state]),
    )
    for (const { link, state, isActive, page } of links) {
      const what = `${JSON.stringify(link)} should be ${state}`
      const one = (await call(c.app, 'GET', `/api/v1/shares/${link.id}`, { token: o.token })).body.data
      assert.equal(one.state, state, what)
      assert.equal(one.isActive, isActive, what)
      assert.equal(listedState.get(link.id), state, what)
      const file = (await call(c.app, 'GET', `/api/v1/files/${link.fileId}`, { token: o.token })).body.data
      assert.equal(file.share.state, state, what)
      assert.equal(file.share.isActive, isActive, what)
      const counts = await call(c.app, 'GET', `/api/v1/analytics?shareId=${link.id}`, { token: o.token })
      assert.equal(counts.body.data.state, state, what)
      const publicPage = await c.app.inject({ method: 'GET', url: new URL(link.publicUrl).pathname })
      assert.equal(publicPage.statusCode, page, what)
      // The owner's file page says the same, in words.
      const words = {
        active: 'Active',
        disabled: 'Turned off',
        expired: 'Expired',
        exhausted: 'Download limit reached',
      }
      const filePage = textOf((await o.web.get(`/files/${link.fileId}`)).body)
      assert.match(filePage, new RegExp(`Share ${words[state]}`), what)
    }
    // The files list: only the link that opens is "Shared".
    const rows = (await o.web.get('/')).body.split('<tr data-file-id="')
    for (const { link, state } of links) {
      const row = textOf(rows.find((html) => html.startsWith(`${link.fileId}"`)) ?? '')
      assert.match(row, new RegExp(link.fileName), 'the file is listed')
      if (state === 'active') assert.match(row, /Shared/)
      else assert.doesNotMatch(row, /Shared/, `${link.fileName} is ${state}`)
      if (state === 'exhausted') assert.match(row, /Limit reached/)
    }
    // Analytics counts, in SQL, exactly the links the function calls active.
    const totals = (await call(c.app, 'GET', '/api/v1/analytics', { token: o.token })).body.data
    assert.equal(totals.shares, links.length)
    assert.equal(totals.activeShares, links.filter((each) => each.state === 'active').length)
  })

  test('file requests: open, disabled, past_deadline, full, first reason first, on every surface', async () => {
    const c: TestContext = ctx()
    const o = await owner(c.app)
    const request = async (changes: { disabled?: boolean; pastDeadline?: boolean; full?: boolean }) => {
      const made = await call(c.app, 'POST', REQUESTS, { token: o.token, body: { title: 'Send me files' } })
      assert.equal(made.status, 201, JSON.stringify(made.body))
      const created = made.body.data as { id: string; publicUrl: string }
      if (Object.keys(changes).length === 0) return created
      await c.db.kysely
        .updateTable('file_requests')
        .set({
          ...(changes.disabled ? { is_active: false } : {}),
          ...(changes.pastDeadline ? { deadline_at: PAST(), deadline_handled: true } : {}),
          ...(changes.full ? { max_files: 2, submission_count: 2 } : {}),
        })
        .where('id', '=', created.id)
        .execute()
      return created
    }
    const cases = [
      { made: {}, state: 'open' },
      { made: { disabled: true }, state: 'disabled' },
      { made: { pastDeadline: true }, state: 'past_deadline' },
      { made: { full: true }, state: 'full' },
      { made: { disabled: true, pastDeadline: true, full: true }, state: 'disabled' },
      { made: { pastDeadline: true, full: true }, state: 'past_deadline' },
    ] as const
    const requests = []
    for (const each of cases) requests.push({ ...each, request: await request(each.made) })

    const listed = await call(c.app, 'GET', `${REQUESTS}?limit=100`, { token: o.token })
    const listedState = new Map(
      (listed.body.data as { id: string; state: string }[]).map((request) => [request.id, request.state]),
    )
    const reasons = {
      disabled: /its owner closed it/i,
      past_deadline: /its deadline has passed/i,
      full: /it has received every file it asked for/i,
    }
    const badges = {
      open: /Active/,
      disabled: /Closed · Disabled/,
      past_deadline: /Closed · Deadline passed/,
      full: /Closed · File limit reached/,
    }
    for (const { request, state } of requests) {
      const what = `${request.id} should be ${state}`
      const one = await call(c.app, 'GET', `${REQUESTS}/${request.id}`, { token: o.token })
      assert.equal(one.body.data.state, state, what)
      assert.equal(listedState.get(request.id), state, what)
      assert.match(textOf((await o.web.get(`/requests/${request.id}`)).body), badges[state], what)
      // The public page and the public API: an open request takes files; any other says why, before any form.
      const publicId = publicIdOf(request)
      const page = await c.app.inject({
        method: 'GET',
        url: `/r/${publicId}`,
        headers: { accept: 'text/html' },
      })
      const api = await call(c.app, 'GET', `/api/v1/public/requests/${publicId}`)
      const prepare = await call(c.app, 'POST', `/api/v1/public/requests/${publicId}/uploads`, {
        body: { submitterEmail: 'a@example.com', files: [{ name: 'a.txt', type: 'text/plain', size: 1 }] },
      })
      if (state === 'open') {
        assert.equal(page.statusCode, 200, what)
        assert.equal(api.status, 200, what)
        assert.equal(prepare.status, 201, what)
        continue
      }
      assert.equal(page.statusCode, 410, what)
      assert.match(textOf(page.body), reasons[state], what)
      assert.doesNotMatch(page.body, /<form/, what)
      assert.equal(api.status, 410, what)
      assert.match(api.body.error.message, reasons[state], what)
      assert.equal(prepare.status, 410, what)
    }
    const totals = (await call(c.app, 'GET', '/api/v1/analytics', { token: o.token })).body.data
    assert.equal(totals.activeRequests, requests.filter((each) => each.state === 'open').length)
  })
})
