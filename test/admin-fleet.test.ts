// Disabling an account in one process, refused at once in the others (issue 45, 1): two server processes on
// one PostgreSQL database, and the test's own app as the admin's process. Each server has used the account's
// API key (so it holds it in its cache), its session and its link; the moment the admin's process has disabled
// the account, every server refuses all three. Enabled again, its link opens everywhere; its key stays revoked.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ALL, call, createFile, ENGINES, startApp, type TestContext } from './support/harness.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'
import { newOwner, OWNER_PASSWORD } from './support/web-client.ts'

/** Signs in on `base` with fetch; answers the session's cookie header. */
async function signIn(base: string, email: string): Promise<string> {
  const form = await fetch(`${base}/account/sign-in`, { headers: { accept: 'text/html' } })
  const csrfCookie = form.headers
    .getSetCookie()
    .map((cookie) => cookie.split(';')[0])
    .join('; ')
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ''
  const posted = await fetch(`${base}/account/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrfCookie, origin: base },
    body: new URLSearchParams({ email, password: OWNER_PASSWORD, _csrf: token }),
  })
  assert.equal(posted.status, 303, await posted.text())
  return [csrfCookie, ...posted.headers.getSetCookie().map((cookie) => cookie.split(';')[0])].join('; ')
}

describe('an account disabled in one process, refused at once by the others', {
  skip: ENGINES.includes('postgres') ? false : 'TEST_DATABASE_URL is not set',
}, () => {
  let c: TestContext & { stop(): Promise<void> }
  const servers: ServerProcess[] = []

  before(async () => {
    c = await startApp('postgres')
    const env = { DATABASE_URL: c.config.databaseUrl as string, DATA_DIR: c.dataDir, ...c.bucket?.env }
    for (let i = 0; i < 2; i++) servers.push(await startServer(env))
  })

  after(async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await c?.stop()
  })

  test('its session, key and link stop on every server the moment it is disabled', async () => {
    const owner = await newOwner(c.app)
    const { secret } = await c.app.services.apiKeys.create({ accountId: owner.id, name: 'k', scopes: ALL })
    const file = await createFile(c, owner.id, { name: 'shared.txt' })
    const share = await call(c.app, 'POST', '/api/v1/shares', { token: secret, body: { fileId: file.id } })
    const link = new URL(share.body.data.publicUrl).pathname
    const sessions = await Promise.all(servers.map((server) => signIn(server.base, owner.email)))
    const state = async (server: ServerProcess, i: number) => ({
      key: (await fetch(`${server.base}/api/v1/files`, { headers: { authorization: `Bearer ${secret}` } }))
        .status,
      session: (
        await fetch(`${server.base}/`, {
          redirect: 'manual',
          headers: { accept: 'text/html', cookie: sessions[i] ?? '' },
        })
      ).status,
      link: (await fetch(`${server.base}${link}`, { headers: { accept: 'text/html' } })).status,
    })
    for (const [i, server] of servers.entries()) {
      assert.deepEqual(
        await state(server, i),
        { key: 200, session: 200, link: 200 },
        `before, on server ${i}`,
      )
    }

    await c.app.services.accounts.disable(owner.email)
    for (const [i, server] of servers.entries()) {
      assert.deepEqual(
        await state(server, i),
        { key: 401, session: 303, link: 404 },
        `disabled, on server ${i}`,
      )
    }

    await c.app.services.accounts.enable(owner.email)
    for (const [i, server] of servers.entries()) {
      assert.deepEqual(
        await state(server, i),
        { key: 401, session: 303, link: 200 },
        `enabled, on server ${i}`,
      )
    }
  })
})
