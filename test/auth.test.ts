import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { App } from '../src/app.ts'
import type { Db } from '../src/platform/db/database.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { wireAccounts } from '../src/wiring.ts'
import {
  assertError,
  call,
  captureLogs,
  createAccount,
  describeEachEngine,
  dropListenerAndAwaitItsReturn,
  startApp,
} from './support/harness.ts'

const FOLDERS = '/api/v1/folders'

/** Uses a key until it is served from memory: the first use writes last_used_at, and PostgreSQL's listener starts. */
async function useUntilCached(app: App, token: string): Promise<void> {
  for (let i = 0; i < 3; i++) assert.equal((await call(app, 'GET', FOLDERS, { token })).status, 200)
  await sleep(50)
}

/** Revokes the key of `token` through `db`: connections other than the app's, as another process has. */
async function revokeThrough(db: Db, accountId: string, token: string): Promise<void> {
  const { apiKeys: keys } = wireAccounts(db)
  const key = (await keys.list(accountId)).find((k) => token.startsWith(k.prefix))
  assert.ok(key)
  await keys.revoke(key.id)
}

/** PostgreSQL tells the app of a change by a notification, which arrives within moments of the commit. */
async function refusedWithinASecond(app: App, token: string): Promise<void> {
  const deadline = Date.now() + 1000
  while ((await call(app, 'GET', FOLDERS, { token })).status === 200) {
    assert.ok(Date.now() < deadline, 'the revocation was not noticed within a second')
    await sleep(5)
  }
  assertError(await call(app, 'GET', FOLDERS, { token }), 401, 'unauthorized')
}

describeEachEngine('authentication', (ctx) => {
  test('401 for a missing, malformed, unknown or revoked credential, with WWW-Authenticate', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const cases: [string, Record<string, string>][] = [
      ['missing', {}],
      ['basic scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['bearer with spaces inside', { authorization: `Bearer ${a.token} extra` }],
      ['unknown key', { authorization: `Bearer coffer_${'x'.repeat(43)}` }],
      ['not a key at all', { authorization: 'Bearer hello' }],
      ['truncated key', { authorization: `Bearer ${a.token.slice(0, -1)}` }],
    ]
    for (const [name, headers] of cases) {
      const res = await call(app, 'GET', '/api/v1/folders', { headers })
      const message = assertError(res, 401, 'unauthorized')
      assert.match(String(res.headers['www-authenticate']), /^Bearer /, name)
      assert.ok(!message.includes(a.token), `${name}: the message must not echo the credential`)
    }
    assert.equal((await call(app, 'GET', '/api/v1/folders', { token: a.token })).status, 200)
    assert.equal(
      (await call(app, 'GET', '/api/v1/folders', { headers: { authorization: `bearer ${a.token}` } })).status,
      200,
    )
  })

  test('a revoked key gets 401 at once; other keys of the account keep working', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    const doomed = await a.key(['folders:read'])
    assert.equal((await call(app, 'GET', '/api/v1/folders', { token: doomed })).status, 200)
    const [key] = await app.services.apiKeys.list(a.id)
    assert.ok(key)
    const listed = await app.services.apiKeys.list(a.id)
    const doomedKey = listed.find((k) => doomed.startsWith(k.prefix) && k.scopes.join() === 'folders:read')
    assert.ok(doomedKey)
    await app.services.apiKeys.revoke(doomedKey.id)
    assertError(await call(app, 'GET', '/api/v1/folders', { token: doomed }), 401, 'unauthorized')
    assert.equal((await call(app, 'GET', '/api/v1/folders', { token: a.token })).status, 200)
  })

  test('a key is read from the database once, then from memory until something changes', async () => {
    const { app, db } = ctx()
    const a = await createAccount(app)
    const token = await a.key(['folders:read'])
    let lookups = 0
    const read = db.read
    db.read = (query, name) => {
      if (name === 'api_key_by_hash') lookups += 1
      return read(query, name)
    }
    try {
      await useUntilCached(app, token)
      const before = lookups
      for (let i = 0; i < 5; i++)
        assert.equal((await call(app, 'GET', '/api/v1/folders', { token })).status, 200)
      assert.equal(lookups, before, 'a key in use is not looked up again')
      await app.services.apiKeys.create({ accountId: a.id, name: 'change', scopes: ['files:read'] })
      assert.equal((await call(app, 'GET', '/api/v1/folders', { token })).status, 200)
      if (ctx().engine === 'sqlite') assert.equal(lookups, before + 1, 'any commit makes SQLite look again')
    } finally {
      db.read = read
    }
  })

  test('a cached key revoked through another connection (another process) is refused', async () => {
    const { app, config, engine } = ctx()
    const a = await createAccount(app)
    const token = await a.key(['folders:read'])
    await useUntilCached(app, token)
    assert.equal((await call(app, 'GET', FOLDERS, { token })).status, 200)

    const other = openDatabase({ ...config, poolSize: 1 })
    try {
      await revokeThrough(other, a.id, token)
    } finally {
      await other.close()
    }
    // SQLite: one file, so the next request's read sees the commit.
    if (engine === 'sqlite') assertError(await call(app, 'GET', FOLDERS, { token }), 401, 'unauthorized')
    else await refusedWithinASecond(app, token)
  })

  test('PostgreSQL: after the notification connection is lost and regained, revocations still count', async (t) => {
    const { app, config, engine } = ctx()
    if (engine !== 'postgres') return t.skip('SQLite needs no notifications')
    const a = await createAccount(app)
    const token = await a.key(['folders:read'])
    await useUntilCached(app, token)

    const other = openDatabase({ ...config, poolSize: 1 })
    try {
      await dropListenerAndAwaitItsReturn(other)
      await call(app, 'GET', FOLDERS, { token })
      await revokeThrough(other, a.id, token)
    } finally {
      await other.close()
    }
    await refusedWithinASecond(app, token)
  })

  test('PostgreSQL: the loss of the notification connection is logged, and its return', async (t) => {
    if (ctx().engine !== 'postgres') return t.skip('SQLite needs no notifications')
    const sink = captureLogs('info')
    const c = await startApp('postgres', { logger: sink.logger })
    const other = openDatabase({ ...c.config, poolSize: 1 })
    try {
      const a = await createAccount(c.app)
      await useUntilCached(c.app, await a.key(['folders:read']))
      await dropListenerAndAwaitItsReturn(other)
      await sleep(50)
    } finally {
      await other.close()
      await c.stop()
    }
    const reports = sink.lines().filter((line) => /change notifications/.test(line.msg))
    assert.equal(reports.length, 2, JSON.stringify(reports))
    const [down, back] = reports
    assert.equal(down.level, 40)
    assert.match(down.msg, /are down: every request reads its API key and files from the database/)
    assert.match(down.error, /terminat/)
    assert.equal(back.level, 30)
    assert.match(back.msg, /are back/)
    assert.ok(back.downForMs >= 0 && back.downForMs < 5000, String(back.downForMs))
  })

  test('authentication comes before validation: a bad body without a key is 401, not 400', async () => {
    const { app } = ctx()
    assertError(await call(app, 'POST', '/api/v1/folders', { body: { bogus: true } }), 401, 'unauthorized')
    const a = await createAccount(app)
    const readOnly = await a.key(['shares:read'])
    assertError(
      await call(app, 'POST', '/api/v1/folders', { token: readOnly, body: { bogus: true } }),
      403,
      'insufficient_scope',
    )
  })

  test('unknown routes answer 404 in the envelope', async () => {
    const { app } = ctx()
    assertError(await call(app, 'GET', '/api/v1/nope'), 404, 'not_found')
    assertError(await call(app, 'DELETE', '/nowhere/at/all'), 404, 'not_found')
  })

  test('a body that is not JSON is a 400 or 415 in the envelope', async () => {
    const { app } = ctx()
    const a = await createAccount(app)
    assertError(
      await call(app, 'POST', '/api/v1/folders', {
        token: a.token,
        rawBody: '{',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    )
    assertError(
      await call(app, 'POST', '/api/v1/folders', {
        token: a.token,
        rawBody: 'name=x',
        headers: { 'content-type': 'text/plain' },
      }),
      415,
      'unsupported_media_type',
    )
  })
})

test('an unexpected fault is a 500 envelope that reveals nothing, and its cause is logged', async () => {
  const logs = captureLogs('info')
  const context = await startApp('sqlite', { logger: logs.logger, deferReady: true })
  try {
    context.app.get('/api/v1/boom', { schema: { hide: true } }, async () => {
      throw new Error('database password is hunter2')
    })
    await context.app.ready()
    const res = await call(context.app, 'GET', '/api/v1/boom')
    assertError(res, 500, 'internal_error')
    assert.ok(!JSON.stringify(res.body).includes('hunter2'))
    assert.ok(logs.text().includes('hunter2'), 'the cause is logged for operators')
  } finally {
    await context.stop()
  }
})

test('request logs carry the request id; levels below the configured one cost no log line', async () => {
  for (const level of ['info', 'warn']) {
    const logs = captureLogs(level)
    const context = await startApp('sqlite', { logger: logs.logger, deferReady: true })
    try {
      context.app.get('/api/v1/warns', { schema: { hide: true } }, async (request) => {
        request.log.info('an info line')
        request.log.warn('a warning')
        return {}
      })
      await context.app.ready()
      await call(context.app, 'GET', '/api/v1/warns')
      const lines = logs.lines().filter((line) => line.reqId !== undefined)
      const messages = lines.map((line) => line.msg)
      const expected =
        level === 'info'
          ? ['incoming request', 'an info line', 'a warning', 'request completed']
          : ['a warning']
      assert.deepEqual(messages, expected, `at level ${level}`)
      assert.equal(new Set(lines.map((line) => line.reqId)).size, 1, 'one request, one id')
    } finally {
      await context.stop()
    }
  }
})

test('credentials never reach the logs', async () => {
  const captured = captureLogs('trace')
  const context = await startApp('sqlite', { logger: captured.logger })
  try {
    const a = await createAccount(context.app)
    await call(context.app, 'GET', '/api/v1/folders', { token: a.token })
    await call(context.app, 'GET', '/api/v1/folders', { token: `${a.token}x` })
    await call(context.app, 'POST', '/api/v1/folders', {
      token: a.token,
      body: { name: a.token.slice(0, 20) },
    })
    const logs = captured.text()
    assert.ok(logs.length > 0, 'logs were captured')
    assert.ok(!logs.includes(a.token), 'an API key appeared in the logs')
    assert.ok(!logs.includes(a.token.slice(7)), 'the secret part of a key appeared in the logs')
  } finally {
    await context.stop()
  }
})

test('a prepared query refuses a builder that does not bind its placeholders', async () => {
  const { prepare } = await import('../src/platform/db/read-path/prepared.ts')
  const context = await startApp('sqlite')
  try {
    const broken = prepare(context.db, 'broken', 1, (_id: string) =>
      context.db.kysely.selectFrom('files').select('id').where('id', '=', 'constant'),
    )
    await assert.rejects(broken('x'), /placeholder was not used/)
    const working = prepare(context.db, 'working', 1, (email: string) =>
      context.db.kysely.selectFrom('accounts').select('email').where('email', '=', email),
    )
    const a = await createAccount(context.app)
    assert.deepEqual(
      (await working(a.email)).map((r) => r.email),
      [a.email],
    )
  } finally {
    await context.stop()
  }
})
