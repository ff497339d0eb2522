// The command-line tool's commands, run as a real process on the same storage as an app opened by the test:
// accounts, passwords and keys, what each prints (its output parsed exactly as a script would), its failures
// and its help. Storage the tool opens by itself, and a running server beside it, are in cli-storage.test.ts.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { cli, cliJson, envFor, newAccount, newEmail, newKey, run, storageOf } from './support/cli-helpers.ts'
import { ALL, assertError, call, describeEachEngine, ISO_MS, type TestContext } from './support/harness.ts'

const KEY = /^coffer_[A-Za-z0-9_-]{43}$/

/** Runs a command that must fail with `exitCode`; returns its stderr and, with --json, its error body. */
async function cliFails(
  ctx: TestContext,
  args: string[],
  exitCode: number,
  code: string,
  stdin?: string,
): Promise<{ stderr: string; message: string }> {
  const plain = await cli(ctx, args, stdin)
  assert.equal(plain.code, exitCode, `${args.join(' ')}: ${plain.stderr}`)
  assert.equal(plain.stdout, '', 'errors go to stderr')
  assert.match(plain.stderr, /^error: .+\n/)
  const json = await cli(ctx, [...args, '--json'], stdin)
  assert.equal(json.code, exitCode)
  const body = JSON.parse(json.stdout)
  assert.equal(json.stdout, `${JSON.stringify(body)}\n`)
  assert.deepEqual(Object.keys(body), ['error'])
  assert.deepEqual(Object.keys(body.error), ['code', 'message', 'hint'])
  assert.equal(body.error.code, code)
  assert.ok(body.error.hint.length > 0)
  assert.equal(plain.stderr.split('\n')[0], `error: ${body.error.message}`)
  return { stderr: plain.stderr, message: body.error.message }
}

describeEachEngine('cli', (ctx) => {
  test('accounts create and accounts list print exact JSON shapes', async () => {
    const c = ctx()
    const email = newEmail()
    const created = await cliJson(c, ['accounts', 'create', '--email', email.toUpperCase()])
    assert.match(created.id, /^acc_[0-9a-z]{26}$/)
    assert.match(created.createdAt, ISO_MS)
    assert.deepEqual(created, { id: created.id, email, role: 'member', createdAt: created.createdAt })
    const stored = await c.app.services.accounts.getByEmail(email)
    assert.equal(stored.id, created.id)
    assert.equal(new Date(created.createdAt).getTime(), stored.createdAt)

    const second = await newAccount(c)
    const listed = await cliJson(c, ['accounts', 'list'])
    assert.deepEqual(Object.keys(listed), ['accounts'])
    const ids = listed.accounts.map((a: any) => a.id)
    assert.ok(ids.indexOf(second.id) < ids.indexOf(created.id), 'newest first')
    assert.deepEqual(
      listed.accounts.find((a: any) => a.id === created.id),
      created,
    )

    // --json may stand anywhere, like --help.
    const anywhere = await cli(c, ['--json', 'accounts', 'list'])
    assert.equal(anywhere.code, 0)
    assert.deepEqual(JSON.parse(anywhere.stdout), listed)

    const text = await cli(c, ['accounts', 'create', '--email', newEmail()])
    assert.equal(text.code, 0)
    assert.match(text.stdout, /^Created account acc_[0-9a-z]{26} for cli-[0-9a-f]{10}@example\.com\.\n$/)
    const table = await cli(c, ['accounts', 'list'])
    assert.match(table.stdout, /^ID +EMAIL +ROLE +CREATED\n/)
    assert.ok(table.stdout.includes(`${created.id}  ${email}`))
  })

  test('accounts create --admin and set-role; the last admin that can sign in stays one', async () => {
    const c = ctx()
    const adminEmail = newEmail()
    const admin = await cliJson(c, ['accounts', 'create', '--email', adminEmail, '--admin'])
    assert.equal(admin.role, 'admin')
    const member = await cliJson(c, ['accounts', 'create', '--email', newEmail()])
    assert.equal(
      (await cliJson(c, ['accounts', 'set-role', '--email', member.email, '--role', 'admin'])).role,
      'admin',
    )
    assert.equal(
      (await cliJson(c, ['accounts', 'set-role', '--email', adminEmail, '--role', 'member'])).role,
      'member',
    )
    // Every other admin of this database is demoted or disabled: the member made admin is then the last one.
    const others = (await c.app.services.accounts.list()).filter(
      (a) => a.role === 'admin' && a.id !== member.id,
    )
    for (const other of others) await c.app.services.accounts.disable(other.email)
    await cliFails(c, ['accounts', 'set-role', '--email', member.email, '--role', 'member'], 1, 'conflict')
    await cliFails(c, ['accounts', 'disable', '--email', member.email], 1, 'conflict')
    const text = await cli(c, ['accounts', 'set-role', '--email', adminEmail, '--role', 'admin'])
    assert.equal(text.stdout, `${adminEmail} is an admin.\n`)
    await cliFails(
      c,
      ['accounts', 'set-role', '--email', adminEmail, '--role', 'owner'],
      2,
      'invalid_request',
    )
  })

  test('accounts set-quota: bytes, unlimited, the default again; the largest file or none; GET /usage says so', async () => {
    const c = ctx()
    const account = await newAccount(c)
    const set = (...flags: string[]) =>
      cliJson(c, ['accounts', 'set-quota', '--email', account.email, ...flags])
    const own = await set('--quota', '5000000', '--max-file', '1000')
    assert.deepEqual(own, {
      id: account.id,
      email: account.email,
      quota: 'own',
      files: 0,
      bytes: 0,
      trashFiles: 0,
      trashBytes: 0,
      quotaBytes: 5_000_000,
      maxFileBytes: 1000,
    })
    const token = (await newKey(c, account.email, 'files:read,files:write')).key
    const usage = async () => (await call(c.app, 'GET', '/api/v1/usage', { token })).body.data
    assert.deepEqual(
      { quota: (await usage()).quotaBytes, largest: (await usage()).maxFileBytes },
      { quota: 5_000_000, largest: 1000 },
    )
    const refused = await call(c.app, 'POST', '/api/v1/files', {
      token,
      body: { files: [{ name: 'big.bin', type: 'application/octet-stream', size: 1001 }] },
    })
    assertError(refused, 413, 'quota_exceeded')
    // --max-file left out leaves it; unlimited whatever the default.
    const unlimited = await set('--quota', 'unlimited')
    assert.equal(unlimited.quotaBytes, null)
    assert.equal(unlimited.maxFileBytes, 1000)
    assert.equal(unlimited.quota, 'unlimited')
    const text = await cli(c, [
      'accounts',
      'set-quota',
      '--email',
      account.email,
      '--quota',
      'default',
      '--max-file',
      'none',
    ])
    assert.equal(
      text.stdout,
      `${account.email}: no quota, the default, no largest file of its own; it stores 0 bytes in 0 files, the trash included.\n`,
    )
    assert.deepEqual(
      { quota: (await usage()).quotaBytes, largest: (await usage()).maxFileBytes },
      { quota: null, largest: null },
    )
    assert.match(
      (await cli(c, ['accounts', 'set-quota', '--email', account.email, '--quota', '12'])).stdout,
      /a quota of 12 bytes \(12 bytes\)/,
    )
    for (const bad of [['--quota', '5GB'], ['--quota=-1'], ['--quota', '1', '--max-file', 'lots']]) {
      await cliFails(c, ['accounts', 'set-quota', '--email', account.email, ...bad], 2, 'invalid_request')
    }
    await cliFails(c, ['accounts', 'set-quota', '--email', account.email], 2, 'invalid_request')
    await cliFails(c, ['accounts', 'set-quota', '--email', newEmail(), '--quota', '1'], 1, 'not_found')
  })

  test('keys create prints the key once, and it authenticates with exactly its scopes', async () => {
    const c = ctx()
    const account = await newAccount(c)
    const created = await cliJson(c, [
      'keys',
      'create',
      '--email',
      account.email,
      '--scopes',
      'files:read,files:write',
      '--name',
      'ci',
    ])
    assert.match(created.id, /^key_[0-9a-z]{26}$/)
    assert.match(created.key, KEY)
    assert.match(created.createdAt, ISO_MS)
    assert.deepEqual(created, {
      id: created.id,
      key: created.key,
      name: 'ci',
      prefix: created.key.slice(0, 13),
      scopes: ['files:read', 'files:write'],
      createdAt: created.createdAt,
    })

    // Folder operations accept files:* scopes: this key may list and create folders.
    const list = await call(c.app, 'GET', '/api/v1/folders', { token: created.key })
    assert.equal(list.status, 200)
    assert.deepEqual(list.body, { data: [], pagination: { nextCursor: null } })
    const made = await call(c.app, 'POST', '/api/v1/folders', { token: created.key, body: { name: 'CI' } })
    assert.equal(made.status, 201)

    const readOnly = await newKey(c, account.email, 'files:read')
    assert.deepEqual(readOnly.scopes, ['files:read'])
    assert.equal((await call(c.app, 'GET', '/api/v1/folders', { token: readOnly.key })).status, 200)
    assertError(
      await call(c.app, 'POST', '/api/v1/folders', { token: readOnly.key, body: { name: 'no' } }),
      403,
      'insufficient_scope',
    )
    const sharesOnly = await newKey(c, account.email, 'shares:read')
    assertError(
      await call(c.app, 'GET', '/api/v1/folders', { token: sharesOnly.key }),
      403,
      'insufficient_scope',
    )

    const everything = await cliJson(c, ['keys', 'create', '--email', account.email, '--scopes', 'all'])
    assert.deepEqual(everything.scopes, ALL)
    assert.equal(everything.name, 'cli')
    // Space-separated lists and repeats are accepted; the key carries each scope once.
    const spaced = await newKey(c, account.email, 'shares:read shares:write,shares:read')
    assert.deepEqual(spaced.scopes, ['shares:read', 'shares:write'])
  })

  test('keys create without --json prints the key with a shown-only-once note, and nothing else secret', async () => {
    const c = ctx()
    const account = await newAccount(c)
    const res = await cli(c, ['keys', 'create', '--email', account.email, '--scopes', 'folders:read'])
    assert.equal(res.code, 0)
    assert.equal(res.stderr, '')
    const keys = res.stdout.match(/coffer_[A-Za-z0-9_-]{43}/g)
    assert.equal(keys?.length, 1)
    const key = keys?.[0] ?? ''
    assert.match(res.stdout, /shown only once/)
    assert.match(res.stdout, new RegExp(`^Created API key key_[0-9a-z]{26} "cli" for ${account.email}`))
    assert.equal((await call(c.app, 'GET', '/api/v1/folders', { token: key })).status, 200)
  })

  test('keys list shows every key of the account, never a secret', async () => {
    const c = ctx()
    const account = await newAccount(c)
    const other = await newAccount(c)
    const first = await newKey(c, account.email, 'folders:read', 'first')
    const second = await newKey(c, account.email, 'files:read,shares:write', 'second')
    const foreign = await newKey(c, other.email, 'folders:read', 'foreign')
    assert.equal((await call(c.app, 'GET', '/api/v1/folders', { token: first.key })).status, 200)
    await cliJson(c, ['keys', 'revoke', '--id', second.id])

    const res = await cli(c, ['keys', 'list', '--email', account.email, '--json'])
    assert.equal(res.code, 0)
    for (const secret of [first.key, second.key, foreign.key]) {
      assert.ok(!res.stdout.includes(secret), 'no secret in the list')
      assert.ok(!res.stderr.includes(secret))
    }
    const body = JSON.parse(res.stdout)
    assert.equal(res.stdout, `${JSON.stringify(body)}\n`)
    const [listedSecond, listedFirst] = body.keys
    assert.match(listedFirst.lastUsedAt, ISO_MS)
    assert.match(listedSecond.revokedAt, ISO_MS)
    assert.deepEqual(body, {
      keys: [
        {
          id: second.id,
          name: 'second',
          prefix: second.prefix,
          scopes: ['files:read', 'shares:write'],
          createdAt: second.createdAt,
          lastUsedAt: null,
          revokedAt: listedSecond.revokedAt,
        },
        {
          id: first.id,
          name: 'first',
          prefix: first.prefix,
          scopes: ['folders:read'],
          createdAt: first.createdAt,
          lastUsedAt: listedFirst.lastUsedAt,
          revokedAt: null,
        },
      ],
    })

    const text = await cli(c, ['keys', 'list', '--email', account.email])
    assert.equal(text.code, 0)
    for (const secret of [first.key, second.key]) assert.ok(!text.stdout.includes(secret))
    assert.match(text.stdout, /^ID +NAME +PREFIX +SCOPES +CREATED +LAST USED +REVOKED\n/)
    assert.ok(text.stdout.includes(first.id) && text.stdout.includes(second.id))
    assert.ok(!text.stdout.includes(foreign.id))

    const empty = await newAccount(c)
    assert.deepEqual(await cliJson(c, ['keys', 'list', '--email', empty.email]), { keys: [] })
  })

  test('keys revoke refuses the key at once; revoking again changes nothing', async () => {
    const c = ctx()
    const account = await newAccount(c)
    const key = await newKey(c, account.email, 'folders:read', 'doomed')
    assert.equal((await call(c.app, 'GET', '/api/v1/folders', { token: key.key })).status, 200)

    const revoked = await cliJson(c, ['keys', 'revoke', '--id', key.id])
    assert.match(revoked.revokedAt, ISO_MS)
    assert.match(revoked.lastUsedAt, ISO_MS)
    assert.deepEqual(revoked, {
      id: key.id,
      name: 'doomed',
      prefix: key.prefix,
      scopes: ['folders:read'],
      createdAt: key.createdAt,
      lastUsedAt: revoked.lastUsedAt,
      revokedAt: revoked.revokedAt,
    })
    // SQLite: at once, since every read sees the CLI's commit. PostgreSQL: once the server's notification
    // connection hears of it, normally within a millisecond of the commit (the README says so); the CLI can exit
    // and the next request arrive before that, so the request is retried for a short while.
    const deadline = Date.now() + (c.engine === 'postgres' ? 2000 : 0)
    let afterRevoke = await call(c.app, 'GET', '/api/v1/folders', { token: key.key })
    while (afterRevoke.status === 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5))
      afterRevoke = await call(c.app, 'GET', '/api/v1/folders', { token: key.key })
    }
    assertError(afterRevoke, 401, 'unauthorized')
    assert.deepEqual(await cliJson(c, ['keys', 'revoke', '--id', key.id]), revoked)

    // --email confines the revocation to that account's keys.
    const other = await newAccount(c)
    const kept = await newKey(c, account.email, 'folders:read')
    await cliFails(c, ['keys', 'revoke', '--id', kept.id, '--email', other.email], 1, 'not_found')
    assert.equal((await call(c.app, 'GET', '/api/v1/folders', { token: kept.key })).status, 200)
    const text = await cli(c, ['keys', 'revoke', '--id', kept.id, '--email', account.email])
    assert.equal(text.code, 0)
    assert.match(text.stdout, new RegExp(`^Revoked API key ${kept.id} "test"`))
    assertError(await call(c.app, 'GET', '/api/v1/folders', { token: kept.key }), 401, 'unauthorized')
  })

  test('--password-stdin sets a password from the first line of stdin, never echoed', async () => {
    const c = ctx()
    const { accounts } = c.app.services
    const email = newEmail()
    const password = `pw-${randomBytes(8).toString('hex')}`
    const res = await cli(
      c,
      ['accounts', 'create', '--email', email, '--password-stdin', '--json'],
      `${password}\n`,
    )
    assert.equal(res.code, 0, res.stderr)
    assert.ok(!res.stdout.includes(password) && !res.stderr.includes(password))
    const created = JSON.parse(res.stdout)
    assert.equal((await accounts.verifyPassword(email, password))?.id, created.id)
    assert.equal(await accounts.verifyPassword(email, `${password}x`), undefined)

    // Only the first line counts, without its line ending.
    const next = `pw2-${randomBytes(8).toString('hex')}`
    const set = await cli(
      c,
      ['accounts', 'set-password', '--email', email, '--password-stdin', '--json'],
      `${next}\r\nsecond line\n`,
    )
    assert.equal(set.code, 0, set.stderr)
    assert.ok(!set.stdout.includes(next) && !set.stderr.includes(next))
    assert.deepEqual(JSON.parse(set.stdout), { id: created.id, email, passwordSet: true })
    assert.equal((await accounts.verifyPassword(email, next))?.id, created.id)
    assert.equal(await accounts.verifyPassword(email, password), undefined)

    // A last line without a newline is read too.
    const last = `pw3-${randomBytes(8).toString('hex')}`
    const text = await cli(c, ['accounts', 'set-password', '--email', email, '--password-stdin'], last)
    assert.equal(text.stdout, `Set the password of ${email}.\n`)
    assert.equal((await accounts.verifyPassword(email, last))?.id, created.id)

    const withoutPassword = await newAccount(c)
    assert.equal(await accounts.verifyPassword(withoutPassword.email, ''), undefined)

    assert.match(
      (
        await cliFails(
          c,
          ['accounts', 'set-password', '--email', email, '--password-stdin'],
          1,
          'invalid_request',
          'short\n',
        )
      ).message,
      /at least 8 characters/,
    )
    assert.match(
      (
        await cliFails(
          c,
          ['accounts', 'set-password', '--email', email, '--password-stdin'],
          1,
          'invalid_request',
          '',
        )
      ).message,
      /No password on stdin/,
    )
    assert.equal(
      (await accounts.verifyPassword(email, last))?.id,
      created.id,
      'failed attempts change nothing',
    )
    await cliFails(c, ['accounts', 'set-password', '--email', email], 2, 'invalid_request')
    await cliFails(
      c,
      ['accounts', 'set-password', '--email', newEmail(), '--password-stdin'],
      1,
      'not_found',
      'long enough password\n',
    )
    const refused = newEmail()
    await cliFails(
      c,
      ['accounts', 'create', '--email', refused, '--password-stdin'],
      1,
      'invalid_request',
      'short\n',
    )
    assert.equal(await accounts.findByEmail(refused), undefined)
  })

  test('failures: a clear message, the error envelope with --json, and a non-zero exit', async () => {
    const c = ctx()
    const account = await newAccount(c)

    const duplicate = await cliFails(c, ['accounts', 'create', '--email', account.email], 1, 'conflict')
    assert.equal(duplicate.stderr, `error: An account with the email ${account.email} already exists.\n`)
    await cliFails(c, ['accounts', 'create', '--email', 'not-an-email'], 1, 'invalid_request')

    const unknown = newEmail()
    for (const args of [
      ['keys', 'create', '--email', unknown, '--scopes', 'all'],
      ['keys', 'list', '--email', unknown],
      ['keys', 'revoke', '--id', 'key_00000000000000000000000000'],
    ]) {
      await cliFails(c, args, 1, 'not_found')
    }

    const scope = await cliFails(
      c,
      ['keys', 'create', '--email', account.email, '--scopes', 'files:read,files:delete'],
      2,
      'invalid_request',
    )
    assert.match(scope.message, /"files:delete"/)
    for (const valid of ALL) assert.ok(scope.message.includes(valid), `lists ${valid}`)
    await cliFails(c, ['keys', 'create', '--email', account.email, '--scopes', ' , '], 2, 'invalid_request')
    await cliFails(
      c,
      ['keys', 'create', '--email', account.email, '--scopes', 'all', '--name', ''],
      1,
      'invalid_request',
    )

    const missing = [
      [['accounts', 'create'], '--email'],
      [['keys', 'create', '--email', account.email], '--scopes'],
      [['keys', 'create', '--scopes', 'all'], '--email'],
      [['keys', 'list'], '--email'],
      [['keys', 'revoke'], '--id'],
    ] as const
    for (const [args, flag] of missing) {
      const res = await cliFails(c, [...args], 2, 'invalid_request')
      assert.equal(res.message, `Missing option ${flag}.`)
      assert.match(res.stderr, /\nUsage: npm run cli -- /)
    }
    assert.deepEqual(await cliJson(c, ['keys', 'list', '--email', account.email]), { keys: [] })

    for (const args of [
      ['keys', 'list', '--email', account.email, '--emial', 'x'],
      ['keys', 'list', '--email'],
      ['keys', 'list', '--email', account.email, 'extra'],
      ['accounts', 'delete'],
      ['users', 'list'],
      ['keys'],
      [],
    ]) {
      const res = await cliFails(c, args, 2, 'invalid_request')
      assert.match(res.stderr, /^error: .+\n\n[\s\S]*\nUsage: npm run cli -- /, `usage for ${args.join(' ')}`)
    }
  })

  test('accounts disable ends every credential of the account; enable lets it sign in again', async () => {
    const c = ctx()
    const { accounts, apiKeys } = c.app.services
    const account = await newAccount(c)
    await accounts.setPassword(account.id, 'a long password')
    const key = await newKey(c, account.email, 'files:read')
    assert.ok(await apiKeys.authenticate(key.key))
    const disabled = await cliJson(c, ['accounts', 'disable', '--email', account.email])
    assert.deepEqual(disabled, { id: account.id, email: account.email, disabled: true })
    assert.equal(await apiKeys.authenticate(key.key), undefined)
    assert.equal(await accounts.verifyPassword(account.email, 'a long password'), undefined)
    const enabled = await cliJson(c, ['accounts', 'enable', '--email', account.email])
    assert.deepEqual(enabled, { id: account.id, email: account.email, disabled: false })
    assert.ok(await accounts.verifyPassword(account.email, 'a long password'))
    assert.equal(await apiKeys.authenticate(key.key), undefined, 'a revoked key stays revoked')
  })

  test('--help documents each command on stdout', async () => {
    const c = ctx()
    const top = await cli(c, ['--help'])
    assert.equal(top.code, 0)
    assert.equal(top.stderr, '')
    for (const command of [
      'accounts create',
      'accounts list',
      'accounts set-password',
      'accounts disable',
      'accounts enable',
      'keys create',
      'keys list',
      'keys revoke',
    ]) {
      assert.ok(top.stdout.includes(`  ${command} `), command)
      const help = await cli(c, [...command.split(' '), '--help'])
      assert.equal(help.code, 0)
      assert.ok(help.stdout.includes(`\nUsage: npm run cli -- ${command} `), command)
      assert.ok(help.stdout.includes('--json'))
    }
    const keysHelp = await cli(c, ['keys', 'create', '-h'])
    for (const scope of ALL) assert.ok(keysHelp.stdout.includes(`  ${scope} `), scope)
    assert.match(keysHelp.stdout, /\[--name <name>\]/)
    const group = await cli(c, ['accounts', '--help'])
    assert.equal(group.code, 0)
    assert.ok(group.stdout.includes('accounts set-password') && !group.stdout.includes('keys create'))
  })

  test('npm run --silent cli -- keys create --json prints only the JSON object', async () => {
    const c = ctx()
    const account = await newAccount(c)
    const args = ['run', '--silent', 'cli', '--', 'keys', 'create', '--email', account.email]
    const res = await run('npm', [...args, '--scopes', 'files:read,files:write', '--name', 'ci', '--json'], {
      env: envFor(storageOf(c)),
    })
    assert.equal(res.code, 0, res.stderr)
    const body = JSON.parse(res.stdout)
    assert.equal(res.stdout, `${JSON.stringify(body)}\n`)
    assert.deepEqual(Object.keys(body), ['id', 'key', 'name', 'prefix', 'scopes', 'createdAt'])
    assert.match(body.key, KEY)
    assert.ok(!res.stderr.includes(body.key))
    assert.equal((await call(c.app, 'GET', '/api/v1/folders', { token: body.key })).status, 200)
  })
})
