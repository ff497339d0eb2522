// The admin's pages over HTTP (issue 45, 1): only an admin sees them (anyone else gets the 404 of a page that
// does not exist, and the menu shows Admin to admins only); the accounts are listed newest first, searched by
// email and paged; an account's role changes, but never the last admin's; disabling ends the account's
// session, keys and links at once, and enabling brings its links back; invitations are single-use links that
// make an account with their role, shown to copy without email, refused once used, expired or revoked.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { App } from '../src/app.ts'
import { hashSecret } from '../src/platform/auth/secrets.ts'
import { ALL, call, createFile, describeEachEngine, type TestContext } from './support/harness.ts'
import { newOwner, OWNER_PASSWORD, WebClient } from './support/web-client.ts'

/** The text of a page as a person reads it: without its tags, its character references decoded. */
const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#(\d+);/g, (_, code) => String.fromCodePoint(Number(code)))
    .replace(/&(lt|gt|quot|amp);/g, (_, name) => ({ lt: '<', gt: '>', quot: '"', amp: '&' })[name as 'lt'])
    .replace(/\s+/g, ' ')

/** A new admin, signed in. */
async function admin(app: App) {
  const { id, email } = await newOwner(app)
  await app.services.accounts.setRole(email, 'admin')
  return { id, email, web: await WebClient.signedIn(app, email) }
}

/** A new member with an API key, signed in. */
async function member(app: App) {
  const { id, email } = await newOwner(app)
  const { secret } = await app.services.apiKeys.create({ accountId: id, name: 'check', scopes: ALL })
  return { id, email, token: secret, web: await WebClient.signedIn(app, email) }
}

const accountIds = (html: string) =>
  [...html.matchAll(/href="\/admin\/accounts\/(acc_[0-9a-z]+)"/g)].map((m) => m[1])

const invitationLink = (html: string) => /id="new-invitation-link">([^<]+)</.exec(html)?.[1]

describeEachEngine('the admin pages', (ctx) => {
  test('a member gets 404 on every admin page and form, and no Admin in the menu; an admin gets both', async () => {
    const { app } = ctx()
    const someone = await member(app)
    const home = await someone.web.get('/')
    assert.equal(home.statusCode, 200)
    assert.doesNotMatch(home.body, /href="\/admin\/accounts"/)
    for (const path of ['/admin/accounts', `/admin/accounts/${someone.id}`, '/admin/invitations']) {
      const res = await someone.web.get(path)
      assert.equal(res.statusCode, 404, path)
      assert.doesNotMatch(res.body, /Invitations|Make invitation/)
    }
    const posted = await someone.web.post(`/admin/accounts/${someone.id}/role`, { role: 'admin' }, '/')
    assert.equal(posted.statusCode, 404)
    assert.equal((await app.services.accounts.getByEmail(someone.email)).role, 'member')

    const boss = await admin(app)
    const page = await boss.web.get('/')
    assert.match(page.body, /<a href="\/admin\/accounts">Admin<\/a>/)
    assert.equal((await boss.web.get('/admin/accounts')).statusCode, 200)

    const anonymous = new WebClient(app)
    const signedOut = await anonymous.get('/admin/accounts')
    assert.equal(signedOut.statusCode, 303)
    assert.equal(
      signedOut.headers.location,
      `/account/sign-in?return_to=${encodeURIComponent('/admin/accounts')}`,
    )
  })

  test('accounts: newest first, searched by email (a LIKE wildcard is a letter), 50 a page', async () => {
    const { app } = ctx()
    const boss = await admin(app)
    const tag = `find${Date.now().toString(36)}`
    const made: string[] = []
    for (let i = 0; i < 53; i++) {
      made.push((await app.services.accounts.create({ email: `${tag}-${i}@example.com` })).id)
    }
    const first = await boss.web.get(`/admin/accounts?q=${tag.toUpperCase()}`)
    assert.equal(first.statusCode, 200)
    assert.deepEqual(accountIds(first.body), made.slice(3).reverse())
    const next = textOf(/href="([^"]+)" rel="next"/.exec(first.body)?.[1] ?? '').trim()
    assert.ok(next, 'a link to the next page')
    const second = await boss.web.get(next)
    assert.deepEqual(accountIds(second.body), made.slice(0, 3).reverse())
    assert.doesNotMatch(second.body, /rel="next"/)

    assert.deepEqual(accountIds((await boss.web.get('/admin/accounts?q=%25')).body), [])
    assert.deepEqual(accountIds((await boss.web.get(`/admin/accounts?q=${tag}-5_`)).body), [])
    assert.deepEqual(accountIds((await boss.web.get(`/admin/accounts?q=${tag}-52@`)).body), [made[52]])
    const none = await boss.web.get('/admin/accounts?q=nobody-at-all')
    assert.match(textOf(none.body), /No account’s email holds “nobody-at-all”/)
  })

  test('roles: made admin and member again on the account page; the last admin stays one', async () => {
    const { app } = ctx()
    const boss = await admin(app)
    const other = await member(app)
    const made = await boss.web.post(
      `/admin/accounts/${other.id}/role`,
      { role: 'admin' },
      `/admin/accounts/${other.id}`,
    )
    assert.equal(made.statusCode, 303)
    assert.equal(made.headers.location, `/admin/accounts/${other.id}?done=role`)
    assert.equal((await app.services.accounts.getByEmail(other.email)).role, 'admin')
    // The new admin sees the pages at once: the role is read with the session.
    assert.equal((await other.web.get('/admin/accounts')).statusCode, 200)

    const back = await boss.web.post(
      `/admin/accounts/${other.id}/role`,
      { role: 'member' },
      `/admin/accounts/${other.id}`,
    )
    assert.equal(back.statusCode, 303)
    assert.equal((await other.web.get('/admin/accounts')).statusCode, 404)
    const wrong = await boss.web.post(
      `/admin/accounts/${other.id}/role`,
      { role: 'owner' },
      `/admin/accounts/${other.id}`,
    )
    assert.equal(wrong.statusCode, 400)

    // Every other admin of this database disabled: `boss` is the last, and may not stop being one.
    for (const account of await app.services.accounts.list()) {
      if (account.role === 'admin' && account.id !== boss.id)
        await app.services.accounts.disable(account.email)
    }
    const refused = await boss.web.post(
      `/admin/accounts/${boss.id}/role`,
      { role: 'member' },
      `/admin/accounts/${boss.id}`,
    )
    assert.equal(refused.statusCode, 409)
    assert.match(textOf(refused.body), /is the last admin/)
    assert.equal((await app.services.accounts.getByEmail(boss.email)).role, 'admin')
    const self = await boss.web.post(`/admin/accounts/${boss.id}/disable`, {}, `/admin/accounts/${boss.id}`)
    assert.equal(self.statusCode, 409)
    assert.match(textOf(self.body), /cannot disable your own account/)
  })

  test('storage: what each account stores against its quota; its own quota, unlimited, the default, the largest file', async () => {
    const c = ctx()
    const boss = await admin(c.app)
    const owner = await member(c.app)
    await createFile(c, owner.id, { content: 'x'.repeat(1500) })
    const page = `/admin/accounts/${owner.id}`
    const action = `${page}/quota`
    assert.match(textOf((await boss.web.get(page)).body), /1 file, 1\.5 kB, no quota/)

    const own = await boss.web.post(action, { quota: 'own', quotaGb: '2,5', maxFileGb: '0.5' }, page)
    assert.equal(own.statusCode, 303)
    assert.equal(own.headers.location, `${page}?done=quota`)
    let usage = await c.app.services.quotas.usage(owner.id)
    assert.deepEqual(
      [usage.quotaSetting, usage.quotaBytes, usage.maxFileBytes],
      ['own', 2_500_000_000, 500_000_000],
    )
    const shown = await boss.web.get(`${page}?done=quota`)
    assert.match(textOf(shown.body), /Storage limits saved\. .*1 file, 1\.5 kB of 2\.5 GB/)
    assert.match(shown.body, /id="field-quotaGb" name="quotaGb" type="text" value="2\.5"/)
    const list = await boss.web.get(`/admin/accounts?q=${encodeURIComponent(owner.email)}`)
    assert.match(textOf(list.body), /1 file, 1\.5 kB of 2\.5 GB/)

    const wrong = await boss.web.post(action, { quota: 'own', quotaGb: 'ten', maxFileGb: '' }, page)
    assert.equal(wrong.statusCode, 400)
    assert.match(wrong.body, /id="field-quotaGb-error">Give the quota in GB, such as 10\./)
    assert.equal((await c.app.services.quotas.usage(owner.id)).quotaBytes, 2_500_000_000, 'unchanged')

    assert.equal(
      (await boss.web.post(action, { quota: 'unlimited', quotaGb: '', maxFileGb: '' }, page)).statusCode,
      303,
    )
    usage = await c.app.services.quotas.usage(owner.id)
    assert.deepEqual([usage.quotaSetting, usage.quotaBytes, usage.maxFileBytes], ['unlimited', null, null])
    assert.equal(
      (await boss.web.post(action, { quota: 'default', quotaGb: '7', maxFileGb: '' }, page)).statusCode,
      303,
    )
    assert.equal((await c.app.services.quotas.usage(owner.id)).quotaSetting, 'default')
  })

  test('disabled: its session, key, link and request page stop at once; enabled: its links come back', async () => {
    const { app } = ctx()
    const boss = await admin(app)
    const owner = await member(app)
    const file = await createFile(ctx(), owner.id, { name: 'report.txt' })
    const share = await call(app, 'POST', '/api/v1/shares', { token: owner.token, body: { fileId: file.id } })
    const request = await call(app, 'POST', '/api/v1/requests', {
      token: owner.token,
      body: { title: 'Photos' },
    })
    const linkPath = new URL(share.body.data.publicUrl).pathname
    const requestPath = new URL(request.body.data.publicUrl).pathname
    assert.equal((await app.inject({ method: 'GET', url: linkPath })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: requestPath })).statusCode, 200)

    const disabled = await boss.web.post(
      `/admin/accounts/${owner.id}/disable`,
      {},
      `/admin/accounts/${owner.id}`,
    )
    assert.equal(disabled.statusCode, 303)
    const page = await boss.web.get(disabled.headers.location as string)
    assert.match(textOf(page.body), /Account disabled/)
    assert.match(page.body, /<span class="badge badge-warn">Disabled<\/span>/)

    assert.equal((await owner.web.get('/')).statusCode, 303, 'signed out')
    assert.equal((await call(app, 'GET', '/api/v1/files', { token: owner.token })).status, 401)
    assert.equal((await app.inject({ method: 'GET', url: linkPath })).statusCode, 404)
    assert.equal((await app.inject({ method: 'GET', url: `${linkPath}/download` })).statusCode, 404)
    assert.equal((await app.inject({ method: 'GET', url: requestPath })).statusCode, 404)
    const signIn = await new WebClient(app).post('/account/sign-in', {
      email: owner.email,
      password: OWNER_PASSWORD,
    })
    assert.notEqual(signIn.statusCode, 303, 'a disabled account does not sign in')

    const enabled = await boss.web.post(
      `/admin/accounts/${owner.id}/enable`,
      {},
      `/admin/accounts/${owner.id}`,
    )
    assert.equal(enabled.statusCode, 303)
    assert.equal((await app.inject({ method: 'GET', url: linkPath })).statusCode, 200)
    assert.equal((await app.inject({ method: 'GET', url: requestPath })).statusCode, 200)
    assert.equal((await WebClient.signedIn(app, owner.email).then((web) => web.get('/'))).statusCode, 200)
    // Its ended credentials stay ended.
    assert.equal((await call(app, 'GET', '/api/v1/files', { token: owner.token })).status, 401)
  })

  test('invitations: a link to copy, which makes an account with its role once; used, expired, revoked: 410', async () => {
    const c: TestContext = ctx()
    const { app } = c
    const boss = await admin(app)
    const made = await boss.web.post('/admin/invitations', { email: '', role: 'admin' })
    assert.equal(made.statusCode, 201)
    assert.equal(made.headers['cache-control'], 'no-store')
    const link = invitationLink(made.body) ?? ''
    assert.ok(link.startsWith(`${c.config.publicUrl}/account/invite/coffer_invite_`), link)
    const path = new URL(link).pathname
    assert.match(textOf((await boss.web.get('/admin/invitations')).body), /A link to hand over Admin/)

    const guest = new WebClient(app)
    const form = await guest.get(path)
    assert.equal(form.statusCode, 200)
    assert.match(textOf(form.body), /You are invited as an admin/)
    const email = `invited-${Date.now().toString(36)}@example.com`
    const differ = await guest.post(path, { email, password: OWNER_PASSWORD, confirm: 'something else' })
    assert.equal(differ.statusCode, 400)
    const accepted = await guest.post(path, { email, password: OWNER_PASSWORD, confirm: OWNER_PASSWORD })
    assert.equal(accepted.statusCode, 303)
    assert.equal((await guest.get('/')).statusCode, 200, 'signed in to the new account')
    assert.equal((await app.services.accounts.getByEmail(email)).role, 'admin')
    assert.equal((await guest.get('/admin/accounts')).statusCode, 200)

    const again = await new WebClient(app).get(path)
    assert.equal(again.statusCode, 410)
    assert.match(textOf(again.body), /This invitation cannot be used/)
    assert.doesNotMatch(textOf((await boss.web.get('/admin/invitations')).body), /A link to hand over Admin/)

    // For an address: that address's account, whatever the form sends.
    const forAddress = await boss.web.post('/admin/invitations', { email: `Fixed-${email}`, role: 'member' })
    assert.equal(forAddress.statusCode, 201)
    const fixedPath = new URL(invitationLink(forAddress.body) ?? '').pathname
    const fixedForm = await new WebClient(app).get(fixedPath)
    assert.match(fixedForm.body, new RegExp(`value="fixed-${email}" [^>]*readonly`))
    const other = new WebClient(app)
    await other.post(fixedPath, {
      email: 'someone-else@example.com',
      password: OWNER_PASSWORD,
      confirm: OWNER_PASSWORD,
    })
    assert.equal((await app.services.accounts.getByEmail(`fixed-${email}`)).role, 'member')
    assert.equal(await app.services.accounts.findByEmail('someone-else@example.com'), undefined)
    // An invitation for an address that has an account is refused when made.
    const taken = await boss.web.post('/admin/invitations', { email, role: 'member' })
    assert.equal(taken.statusCode, 409)

    // Revoked, then expired: both 410.
    const revokedPath = new URL(
      invitationLink((await boss.web.post('/admin/invitations', { role: 'member' })).body) ?? '',
    ).pathname
    const pending = await app.services.invitations.unused()
    const revokedId = pending[0]?.id
    assert.ok(revokedId)
    const revoked = await boss.web.post(`/admin/invitations/${revokedId}/revoke`, {}, '/admin/invitations')
    assert.equal(revoked.statusCode, 303)
    assert.equal((await new WebClient(app).get(revokedPath)).statusCode, 410)
    const expiringPath = new URL(
      invitationLink((await boss.web.post('/admin/invitations', { role: 'member' })).body) ?? '',
    ).pathname
    await c.db.kysely
      .updateTable('invitations')
      .set({ expires_at: Date.now() - 1 })
      .where('used_at', 'is', null)
      .execute()
    assert.equal((await new WebClient(app).get(expiringPath)).statusCode, 410)
    assert.match(textOf((await boss.web.get('/admin/invitations')).body), /Expired/)
  })

  test('delete: confirmed by the email typed; disabled at once, its files purged with their bytes, then the account', async () => {
    const c = ctx()
    const { app } = c
    const boss = await admin(app)
    const owner = await member(app)
    const files = [await createFile(c, owner.id), await createFile(c, owner.id)]
    const trashed = await call(app, 'DELETE', `/api/v1/files/${files[1]?.id}`, { token: owner.token })
    assert.equal(trashed.status, 200)
    const share = await call(app, 'POST', '/api/v1/shares', {
      token: owner.token,
      body: { fileId: files[0]?.id },
    })
    const linkPath = new URL(share.body.data.publicUrl).pathname
    const confirmPath = `/admin/accounts/${owner.id}/delete`
    assert.match(textOf((await boss.web.get(confirmPath)).body), /Delete this account\?/)

    const wrong = await boss.web.post(confirmPath, { email: 'someone@example.com' })
    assert.equal(wrong.statusCode, 400)
    assert.match(textOf(wrong.body), new RegExp(`Type ${owner.email} to delete this account`))
    assert.equal((await app.services.admin.account(owner.id)).deletingAt, null)
    const self = await boss.web.post(
      `/admin/accounts/${boss.id}/delete`,
      { email: boss.email },
      `/admin/accounts/${boss.id}/delete`,
    )
    assert.equal(self.statusCode, 409)

    const deleted = await boss.web.post(confirmPath, { email: owner.email.toUpperCase() })
    assert.equal(deleted.statusCode, 303)
    assert.equal(deleted.headers.location, '/admin/accounts?done=deleted')
    assert.match(textOf((await boss.web.get(`/admin/accounts/${owner.id}`)).body), /Being deleted/)
    assert.equal((await owner.web.get('/')).statusCode, 303, 'signed out at once')
    assert.equal((await call(app, 'GET', '/api/v1/files', { token: owner.token })).status, 401)
    assert.equal((await app.inject({ method: 'GET', url: linkPath })).statusCode, 404)
    const enable = await boss.web.post(`/admin/accounts/${owner.id}/enable`, {}, `/admin/accounts/${boss.id}`)
    assert.equal(enable.statusCode, 409, 'an account being deleted is not enabled again')

    // The account stays until the purge removed its files (the trash's included) with their bytes.
    assert.equal(await app.services.accounts.purgeDeleted(), 0)
    assert.equal(await app.services.trash.purge({ error: () => {} }), 2)
    for (const file of files) assert.equal(await c.blobs.stat(file.blobKey), undefined)
    assert.equal(await app.services.accounts.purgeDeleted(), 1)
    assert.equal(await app.services.accounts.findByEmail(owner.email), undefined)
    assert.equal((await boss.web.get(`/admin/accounts/${owner.id}`)).statusCode, 404)
  })

  test('the forms refuse a missing CSRF token', async () => {
    const { app } = ctx()
    const boss = await admin(app)
    const other = await member(app)
    for (const path of [`/admin/accounts/${other.id}/disable`, '/admin/invitations']) {
      const res = await boss.web.post(path, { _csrf: 'wrong', role: 'member' })
      assert.equal(res.statusCode, 403, path)
    }
    assert.equal((await app.services.admin.account(other.id)).disabledAt, null)
  })
})

describeEachEngine(
  'the admin pages when SIGNUP=closed',
  (ctx) => {
    test('no invitation is made, and one made before is a 410', async () => {
      const c = ctx()
      const boss = await admin(c.app)
      const page = await boss.web.get('/admin/invitations')
      assert.match(textOf(page.body), /Invitations are off on this server/)
      assert.doesNotMatch(page.body, /Make invitation/)
      const refused = await boss.web.post('/admin/invitations', { role: 'member' }, '/admin/accounts')
      assert.equal(refused.statusCode, 409)
      const secret = `coffer_invite_${'a'.repeat(43)}`
      await c.db.kysely
        .insertInto('invitations')
        .values({
          id: 'inv_before',
          secret_hash: hashSecret(secret),
          email: null,
          role: 'member',
          invited_by: boss.id,
          created_at: Date.now(),
          expires_at: Date.now() + 86_400_000,
          used_at: null,
          used_by: null,
        })
        .execute()
      assert.equal((await new WebClient(c.app).get(`/account/invite/${secret}`)).statusCode, 410)
    })
  },
  { env: { SIGNUP: 'closed' } },
)
