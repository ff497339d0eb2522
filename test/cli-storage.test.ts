// The command-line tool on storage of its own, as an operator first meets it: a database it cannot reach, a
// fresh database it brings up to date itself, and a server process running on the same storage, which must
// honour what the tool changes at once.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type App, buildApp } from '../src/app.ts'
import { LocalBlobStore } from '../src/platform/blob/local-blob-store.ts'
import { loadConfig } from '../src/platform/config.ts'
import type { Db } from '../src/platform/db/database.ts'
import type { Engine } from '../src/platform/db/engine.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { cliJson, envFor, MAIN, newAccount, newKey, ROOT, run, type Storage } from './support/cli-helpers.ts'
import { call, ENGINES, freshDatabase } from './support/harness.ts'

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
