// The command-line tool, run as a real process on the same storage as an app opened by the test (and, in
// the last suite, as a running server process). Its output is parsed exactly as a script would.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type App, buildApp } from '../src/app.ts'
import { LocalBlobStore } from '../src/blob/local-blob-store.ts'
import { loadConfig } from '../src/config.ts'
import { type Db, type Engine, openDatabase } from '../src/db/database.ts'
import {
  ALL,
  assertError,
  call,
  describeEachEngine,
  ENGINES,
  freshDatabase,
  ISO_MS,
  type TestContext,
} from './support/harness.ts'

const ROOT = path.resolve(import.meta.dirname, '..')
const MAIN = path.join(ROOT, 'src/cli/main.ts')
const KEY = /^coffer_[A-Za-z0-9_-]{43}$/

interface Storage {
  dataDir: string
  databaseUrl: string | undefined
}

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function envFor(storage: Storage, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: storage.dataDir, ...extra }
  delete env.DATABASE_URL
  if (storage.databaseUrl) env.DATABASE_URL = storage.databaseUrl
  return env
}

function run(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; stdin?: string; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    // A CLI that leaves its database open never exits: that is a failure, not a slow test.
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${args.join(' ')} did not exit; stderr: ${stderr}`))
    }, options.timeoutMs ?? 30_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(options.stdin ?? '')
  })
}

const storageOf = (ctx: TestContext): Storage => ({
  dataDir: ctx.dataDir,
  databaseUrl: ctx.config.databaseUrl,
})

function cli(ctx: TestContext | Storage, args: string[], stdin?: string): Promise<Run> {
  const storage = 'app' in ctx ? storageOf(ctx) : ctx
  return run(process.execPath, [MAIN, ...args], { env: envFor(storage), stdin })
}

/** Runs a --json command that must succeed; stdout must be exactly one JSON object and a newline. */
async function cliJson(ctx: TestContext | Storage, args: string[], stdin?: string): Promise<any> {
  const res = await cli(ctx, [...args, '--json'], stdin)
  assert.equal(res.code, 0, `${args.join(' ')} failed: ${res.stderr}`)
  assert.equal(res.stderr, '')
  const body = JSON.parse(res.stdout)
  assert.equal(res.stdout, `${JSON.stringify(body)}\n`)
  assert.equal(typeof body, 'object')
  assert.ok(body !== null && !Array.isArray(body))
  return body
}

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

const newEmail = () => `cli-${randomBytes(5).toString('hex')}@example.com`

async function newAccount(ctx: TestContext | Storage): Promise<{ id: string; email: string }> {
  const email = newEmail()
  return cliJson(ctx, ['accounts', 'create', '--email', email])
}

async function newKey(
  ctx: TestContext | Storage,
  email: string,
  scopes: string,
  name = 'test',
): Promise<any> {
  return cliJson(ctx, ['keys', 'create', '--email', email, '--scopes', scopes, '--name', name])
}

describeEachEngine('cli', (ctx) => {
  test('accounts create and accounts list print exact JSON shapes', async () => {
    const c = ctx()
    const email = newEmail()
    const created = await cliJson(c, ['accounts', 'create', '--email', email.toUpperCase()])
    assert.match(created.id, /^acc_[0-9a-z]{26}$/)
    assert.match(created.createdAt, ISO_MS)
    assert.deepEqual(created, { id: created.id, email, createdAt: created.createdAt })
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
    assert.match(table.stdout, /^ID +EMAIL +CREATED\n/)
    assert.ok(table.stdout.includes(`${created.id}  ${email}`))
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

  test('--help documents each command on stdout', async () => {
    const c = ctx()
    const top = await cli(c, ['--help'])
    assert.equal(top.code, 0)
    assert.equal(top.stderr, '')
    for (const command of [
      'accounts create',
      'accounts list',
      'accounts set-password',
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

/** Opens the app on storage the CLI made, without migrating it: the CLI must have done that. */
async function appOn(storage: Storage): Promise<{ app: App; db: Db }> {
  const config = loadConfig({
    DATA_DIR: storage.dataDir,
    LOG_LEVEL: 'silent',
    ...(storage.databaseUrl ? { DATABASE_URL: storage.databaseUrl } : {}),
  })
  const db = openDatabase({ ...config, poolSize: 2 })
  const app = await buildApp({
    config,
    db,
    blobs: await LocalBlobStore.open(path.join(storage.dataDir, 'blobs')),
    logger: false,
  })
  await app.ready()
  return { app, db }
}

async function freshStorage(engine: Engine): Promise<Storage & { drop(): Promise<void> }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-cli-'))
  const database = await freshDatabase(engine, dataDir)
  return {
    dataDir,
    databaseUrl: database.url,
    drop: async () => {
      await database.drop()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  assert.ok(address && typeof address === 'object')
  return address.port
}

test('an unreachable database fails clearly, without the credentials of DATABASE_URL', async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-cli-'))
  try {
    const res = await run(process.execPath, [MAIN, 'accounts', 'list', '--json'], {
      env: envFor({ dataDir, databaseUrl: 'postgres://coffer:s3cret-pw@127.0.0.1:1/coffer' }),
    })
    assert.equal(res.code, 1)
    const message =
      'Cannot open the PostgreSQL database coffer on 127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1'
    assert.equal(res.stderr, `error: ${message}\n`)
    assert.deepEqual(JSON.parse(res.stdout), {
      error: {
        code: 'unavailable',
        message,
        hint: 'Check DATABASE_URL (PostgreSQL) or DATA_DIR (SQLite), and that the database is reachable.',
      },
    })
  } finally {
    await rm(dataDir, { recursive: true, force: true })
  }
})

for (const engine of ENGINES) {
  describe(`cli on fresh storage [${engine}]`, () => {
    let storage: (Storage & { drop(): Promise<void> }) | undefined
    let opened: { app: App; db: Db } | undefined
    before(async () => {
      storage = await freshStorage(engine)
    })
    after(async () => {
      await opened?.app.close()
      await opened?.db.close()
      await storage?.drop()
    })

    test('the first command brings the schema up to date', async () => {
      assert.ok(storage)
      const account = await newAccount(storage)
      const key = await newKey(storage, account.email, 'folders:read')
      opened = await appOn(storage)
      const res = await call(opened.app, 'GET', '/api/v1/folders', { token: key.key })
      assert.equal(res.status, 200)
    })
  })

  describe(`cli while the server process runs [${engine}]`, () => {
    let storage: (Storage & { drop(): Promise<void> }) | undefined
    let server: ReturnType<typeof spawn> | undefined
    let serverLog = ''
    let base = ''

    before(async () => {
      storage = await freshStorage(engine)
      const port = await freePort()
      base = `http://127.0.0.1:${port}`
      server = spawn(process.execPath, [path.join(ROOT, 'src/server.ts')], {
        cwd: ROOT,
        env: envFor(storage, { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }),
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      server.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        serverLog += chunk
      })
      server.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
        serverLog += chunk
      })
      const deadline = Date.now() + 30_000
      for (;;) {
        assert.equal(server.exitCode, null, `the server exited: ${serverLog}`)
        // Any HTTP answer (the 404 envelope too) means the server is listening.
        const answered = await fetch(`${base}/api/v1/`).then(
          () => true,
          () => false,
        )
        if (answered) break
        assert.ok(Date.now() < deadline, `the server did not start: ${serverLog}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })

    after(async () => {
      const child = server
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(timer)
      }
      await storage?.drop()
    })

    test('accounts and keys made by the CLI work on the running server at once', async () => {
      assert.ok(storage)
      const account = await newAccount(storage)
      const key = await newKey(storage, account.email, 'folders:read,folders:write')
      const auth = { authorization: `Bearer ${key.key}` }

      const list = await fetch(`${base}/api/v1/folders`, { headers: auth })
      assert.equal(list.status, 200)
      assert.deepEqual(await list.json(), { data: [], pagination: { nextCursor: null } })
      const made = await fetch(`${base}/api/v1/folders`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'From the CLI' }),
      })
      assert.equal(made.status, 201)

      await cliJson(storage, ['keys', 'revoke', '--id', key.id])
      const refused = await fetch(`${base}/api/v1/folders`, { headers: auth })
      assert.equal(refused.status, 401)
      assert.equal(((await refused.json()) as any).error.code, 'unauthorized')
    })
  })
}
