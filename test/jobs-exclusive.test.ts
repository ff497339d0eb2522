// Background jobs run in one process at a time (issue 24): on PostgreSQL, Db.exclusively holds a session
// advisory lock while a job runs, so a second process skips the job instead of running it alongside, and a
// process that dies gives the lock back. Shown on the Db of two connections' worth of processes, then on three
// server processes started together, which all skip the storage check while another holds it and run it once
// it is free. SQLite has one process by construction.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import type { Db } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { openDatabase } from '../src/platform/db/open.ts'
import { ENGINES, freshDatabase } from './support/harness.ts'
import { blobStorageFor } from './support/s3.ts'
import { type ServerProcess, startServer } from './support/server-process.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('background jobs on one PostgreSQL database', {
  skip: ENGINES.includes('postgres') ? false : 'TEST_DATABASE_URL is not set',
}, () => {
  let dataDir: string
  let database: Awaited<ReturnType<typeof freshDatabase>>
  let blobs: Awaited<ReturnType<typeof blobStorageFor>>
  const dbs: Db[] = []
  const servers: ServerProcess[] = []
  const open = () => {
    const db = openDatabase({ dataDir, databaseUrl: database.url, poolSize: 2 })
    dbs.push(db)
    return db
  }
  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-jobs-'))
    database = await freshDatabase('postgres', dataDir)
    blobs = await blobStorageFor('postgres')
    await migrate(open())
  })
  after(async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await Promise.all(dbs.map((db) => db.close()))
    await database?.drop()
    await blobs?.drop()
    await rm(dataDir, { recursive: true, force: true })
  })

  test('a job runs in one process at a time; another skips it, and a dead holder gives it back', async () => {
    const [one, two] = [open(), open()]
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let started = () => {}
    const holding = new Promise<void>((resolve) => {
      started = resolve
    })
    const running = one.exclusively('chore', () => {
      started()
      return held
    })
    // Held once the job runs (not after a pause: a loaded machine may take longer to connect).
    await holding
    let ranTwice = false
    assert.equal(
      await two.exclusively('chore', async () => {
        ranTwice = true
      }),
      false,
    )
    assert.equal(ranTwice, false)
    // Another job is not held back by it.
    assert.equal(await two.exclusively('other chore', async () => {}), true)
    release()
    assert.equal(await running, true)
    assert.equal(await two.exclusively('chore', async () => {}), true)

    // A process that dies holding it: its connection goes (ended here by the server), and the lock with it.
    const dying = open()
    let finish = () => {}
    let dyingStarted = () => {}
    const dyingHolds = new Promise<void>((resolve) => {
      dyingStarted = resolve
    })
    const dyingJob = dying.exclusively(
      'chore',
      () =>
        new Promise<void>((resolve) => {
          finish = resolve
          dyingStarted()
        }),
    )
    await dyingHolds
    assert.equal(await two.exclusively('chore', async () => {}), false)
    // Only this test's database: other test files run their migrations (under an advisory lock) at the same time.
    await sql`select pg_terminate_backend(pid) from pg_locks
      where locktype = 'advisory' and granted and pid <> pg_backend_pid()
        and database = (select oid from pg_database where datname = current_database())`.execute(two.kysely)
    let free = false
    for (let i = 0; i < 50 && !free; i++) {
      free = await two.exclusively('chore', async () => {})
      if (!free) await sleep(100)
    }
    assert.ok(free, 'the lock of a closed connection is free')
    // The job whose connection died finishes without taking the process down.
    finish()
    assert.equal(await dyingJob, true)
  })

  test('three servers started together skip the storage check another holds, then run it', async () => {
    const holder = open()
    let release = () => {}
    let held = () => {}
    const holds = new Promise<void>((resolve) => {
      held = resolve
    })
    const holding = holder.exclusively(
      'storage-check',
      () =>
        new Promise<void>((resolve) => {
          release = resolve
          held()
        }),
    )
    await holds
    const env = {
      DATA_DIR: dataDir,
      DATABASE_URL: database.url ?? '',
      ...blobs.env,
      LOG_LEVEL: 'info',
      STORAGE_CHECK_INTERVAL_SECONDS: '1',
    }
    servers.push(...(await Promise.all([startServer(env), startServer(env), startServer(env)])))
    const lines = (server: ServerProcess) =>
      server
        .stdout()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { msg: string })
    // Each tries within an interval or so; a loaded machine is given up to ten.
    const triedAndSkipped = (server: ServerProcess) =>
      lines(server).some((line) => line.msg === 'storage check: another process is running it')
    for (let i = 0; i < 100 && !servers.every(triedAndSkipped); i++) await sleep(100)
    for (const server of servers) {
      const messages = lines(server).map((line) => line.msg)
      assert.ok(messages.includes('storage check: another process is running it'), messages.join('\n'))
      assert.ok(!messages.includes('storage check'), 'no check ran while another held it')
    }
    release()
    await holding
    // Free again: within a few intervals the checks run, one process at a time.
    for (let i = 0; i < 50; i++) {
      if (servers.some((server) => lines(server).some((line) => line.msg === 'storage check'))) break
      await sleep(100)
    }
    const ran = servers.filter((server) => lines(server).some((line) => line.msg === 'storage check'))
    assert.ok(ran.length >= 1, 'a check ran once the lock was free')
  })
})
