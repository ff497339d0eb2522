// The integration harness: boots the real app on a fresh database (SQLite always, PostgreSQL when
// TEST_DATABASE_URL is set) with real blob files in a temporary directory, and drives it over HTTP with
// `inject`. Every response of a documented operation is checked against the OpenAPI document.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable, Writable } from 'node:stream'
import { after, before, describe } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import pg from 'pg'
import { type App, buildApp } from '../../src/app.ts'
import type { Scope } from '../../src/platform/auth/scopes.ts'
import { blobKeyOf } from '../../src/platform/blob/blob-keys.ts'
import type { BlobStore } from '../../src/platform/blob/blob-store.ts'
import { openBlobStore } from '../../src/platform/blob/open-blob-store.ts'
import { S3BlobStore } from '../../src/platform/blob/s3-blob-store.ts'
import { type Config, loadConfig } from '../../src/platform/config.ts'
import type { Db } from '../../src/platform/db/database.ts'
import type { Engine } from '../../src/platform/db/engine.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { openDatabase } from '../../src/platform/db/open.ts'
import { LISTENER_NAME } from '../../src/platform/db/pg-change-listener.ts'
import { newId } from '../../src/platform/ids.ts'
import type { StoredFile } from '../../src/resources/files/files.repository.ts'
import { checkResponseAgainstOpenApi } from './openapi-check.ts'
import { freshBucket, s3Missing, type TestBucket } from './s3.ts'

export const ENGINES: Engine[] = process.env.TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite']

/**
 * Deprecation warnings raised in this test process: a use of a library that its next major version removes
 * (the pg driver's, say) must fail a test now rather than break an upgrade later. Node raises each once per
 * process, so they are collected from the start and every engine's block checks them when it ends.
 */
const deprecations: string[] = []
process.on('warning', (warning) => {
  if (warning.name === 'DeprecationWarning') deprecations.push(warning.message)
})

/**
 * A database of its own for one test file: a new SQLite file, or a new, empty PostgreSQL database. `migrated`
 * asks for a copy of the run's migrated one when there is one (global-setup.ts), for a test that only needs
 * the schema as it is: startApp's, which migrates again and finds nothing to do. Tests of migrations, of the
 * first start, of a restore get an empty one.
 */
export async function freshDatabase(
  engine: Engine,
  dataDir: string,
  { migrated = false }: { migrated?: boolean } = {},
): Promise<{ url: string | undefined; drop(): Promise<void> }> {
  if (engine === 'sqlite') return { url: undefined, drop: async () => {} }
  const adminUrl = process.env.TEST_DATABASE_URL
  assert.ok(adminUrl, 'TEST_DATABASE_URL must be set for PostgreSQL tests')
  const name = `coffer_test_${randomBytes(6).toString('hex')}`
  const template = migrated ? process.env.TEST_DATABASE_TEMPLATE : undefined
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database ${name}${template ? ` template ${template}` : ''}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  void dataDir
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl })
      await client.connect()
      await client.query(`drop database if exists ${name} with (force)`)
      await client.end()
    },
  }
}

export interface TestContext {
  engine: Engine
  app: App
  db: Db
  blobs: BlobStore
  /** Where the blobs are: a directory under `dataDir`, or a bucket of the run's S3 (PostgreSQL's leg). */
  blobStore: 'local' | 's3'
  /** The bucket, when the blobs are in S3. */
  bucket?: TestBucket
  config: Config
  dataDir: string
}

export interface StartOptions {
  env?: Record<string, string>
  logger?: boolean | object
  /** Leave the app unready, so a test can add routes before calling `app.ready()`. */
  deferReady?: boolean
  /**
   * The blob store: by default the local disk on SQLite and S3 on PostgreSQL (when there is S3 here), so that
   * every test runs on both; `local` for a test of what only the local disk does, `s3` for one of what only S3
   * does (skip it where `s3Missing` says there is none).
   */
  blobStore?: 'local' | 's3'
}

/** Said once per process when the PostgreSQL leg cannot use S3. */
let s3FallbackNoted = false

/** A bucket for the app when it keeps its blobs in S3 (see StartOptions.blobStore), else undefined. */
async function bucketFor(engine: Engine, options: StartOptions): Promise<TestBucket | undefined> {
  if (options.blobStore === 's3') return freshBucket()
  if (engine !== 'postgres' || options.blobStore === 'local') return undefined
  if (s3Missing) {
    if (!s3FallbackNoted) console.log(`# blobs on the local disk for PostgreSQL too: ${s3Missing}`)
    s3FallbackNoted = true
    return undefined
  }
  return freshBucket()
}

export async function startApp(
  engine: Engine,
  options: StartOptions = {},
): Promise<TestContext & { stop(): Promise<void> }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'coffer-test-'))
  const database = await freshDatabase(engine, dataDir, { migrated: true })
  const bucket = await bucketFor(engine, options)
  const config = loadConfig({
    DATA_DIR: dataDir,
    PUBLIC_URL: 'http://coffer.test',
    LOG_LEVEL: 'silent',
    ...(database.url ? { DATABASE_URL: database.url } : {}),
    ...bucket?.env,
    ...options.env,
  })
  const db = openDatabase({ ...config, poolSize: 4 })
  await migrate(db)
  const blobs =
    bucket && config.blobStore.kind === 's3'
      ? await S3BlobStore.open(config.blobStore, bucket.client())
      : await openBlobStore(config)
  const app = await buildApp({ config, db, blobs, logger: options.logger ?? false })
  if (!options.deferReady) await app.ready()
  return {
    engine,
    app,
    db,
    blobs,
    blobStore: bucket ? 's3' : 'local',
    bucket,
    config,
    dataDir,
    async stop() {
      await app.close()
      await db.close()
      await database.drop()
      await bucket?.drop()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * Runs `body` once per engine, each in its own describe block with its own app and database.
 * `ctx()` returns the running context inside tests.
 */
export function describeEachEngine(
  name: string,
  body: (ctx: () => TestContext) => void,
  options: StartOptions = {},
): void {
  for (const engine of ENGINES) {
    describe(`${name} [${engine}]`, () => {
      let context: (TestContext & { stop(): Promise<void> }) | undefined
      before(async () => {
        context = await startApp(engine, options)
      })
      after(async () => {
        await context?.stop()
        assert.deepEqual(deprecations, [], 'no deprecated API was used')
      })
      body(() => {
        assert.ok(context, 'app not started')
        return context
      })
    })
  }
}

export interface ApiResponse<T = any> {
  status: number
  headers: LightMyRequestResponse['headers']
  body: T
  raw: LightMyRequestResponse
}

export interface CallOptions {
  token?: string
  body?: unknown
  headers?: Record<string, string>
  /** Send `body` as this raw string instead of JSON. */
  rawBody?: string
  /** The client address the request comes from (127.0.0.1 unless set). */
  ip?: string
}

/**
 * Calls the API and checks the response: JSON responses of documented operations must match the OpenAPI
 * document for their status, and every failure must be the error envelope.
 */
export async function call<T = any>(
  app: App,
  method: string,
  url: string,
  options: CallOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token) headers.authorization = `Bearer ${options.token}`
  let payload: string | undefined
  if (options.rawBody !== undefined) payload = options.rawBody
  else if (options.body !== undefined) {
    payload = JSON.stringify(options.body)
    headers['content-type'] ??= 'application/json'
  }
  const raw = await app.inject({
    method: method as 'GET',
    url,
    headers,
    payload,
    ...(options.ip ? { remoteAddress: options.ip } : {}),
  })
  const isJson = String(raw.headers['content-type'] ?? '').startsWith('application/json')
  const body = isJson && raw.body ? JSON.parse(raw.body) : raw.body
  if (raw.statusCode >= 400) {
    assert.ok(isJson, `${method} ${url}: ${raw.statusCode} must be JSON, got ${raw.headers['content-type']}`)
    assertErrorEnvelope(body, `${method} ${url}`)
  }
  if (isJson) await checkResponseAgainstOpenApi(app, method, url, raw.statusCode, body)
  return { status: raw.statusCode, headers: raw.headers, body, raw }
}

export function assertErrorEnvelope(body: any, where = 'response'): void {
  assert.deepEqual(Object.keys(body ?? {}), ['error'], `${where}: error body must be { error }`)
  const keys = Object.keys(body.error).sort()
  const expected = 'field' in body.error ? ['code', 'field', 'hint', 'message'] : ['code', 'hint', 'message']
  assert.deepEqual(keys, expected, `${where}: error fields`)
  for (const key of keys) {
    assert.equal(typeof body.error[key], 'string', `${where}: error.${key}`)
    assert.ok(body.error[key].length > 0, `${where}: error.${key} is empty`)
  }
}

/** Asserts an error response with the given status and code; returns its message. */
export function assertError(res: ApiResponse, status: number, code: string): string {
  assert.equal(
    res.status,
    status,
    `expected ${status} ${code}, got ${res.status}: ${JSON.stringify(res.body)}`,
  )
  assertErrorEnvelope(res.body)
  assert.equal(res.body.error.code, code)
  return res.body.error.message as string
}

export const ALL: Scope[] = [
  'files:read',
  'files:write',
  'folders:read',
  'folders:write',
  'shares:read',
  'shares:write',
  'requests:read',
  'requests:write',
  'analytics:read',
  'webhooks:read',
  'webhooks:write',
  'audit:read',
]

export interface TestAccount {
  id: string
  email: string
  /** An API key with every scope. */
  token: string
  /** Makes another key of this account with exactly these scopes. */
  key(scopes: Scope[]): Promise<string>
}

export async function createAccount(app: App): Promise<TestAccount> {
  const email = `user-${randomBytes(6).toString('hex')}@example.com`
  const account = await app.services.accounts.create({ email })
  const key = async (scopes: Scope[]) =>
    (await app.services.apiKeys.create({ accountId: account.id, name: 'test', scopes })).secret
  return { id: account.id, email, token: await key(ALL), key }
}

export interface TestFileInput {
  name?: string
  contentType?: string
  content?: Buffer | string
  folderId?: string | null
}

/**
 * Stores a file the way upload processing will: bytes into the BlobStore, then the row through the files
 * service. Returns the stored file and its content.
 */
export async function createFile(
  ctx: TestContext,
  accountId: string,
  input: TestFileInput = {},
): Promise<StoredFile & { content: Buffer }> {
  const content = Buffer.from(input.content ?? `content ${randomBytes(8).toString('hex')}`)
  const id = newId('fil')
  const blobKey = blobKeyOf(accountId, id)
  await ctx.blobs.put(blobKey, Readable.from([content]))
  const file = await ctx.app.services.files.create({
    id,
    accountId,
    folderId: input.folderId ?? null,
    name: input.name ?? `file-${randomBytes(4).toString('hex')}.txt`,
    contentType: input.contentType ?? 'text/plain',
    size: content.length,
    blobKey,
    sha256: createHash('sha256').update(content).digest('hex'),
  })
  return { ...file, content }
}

/**
 * Views and downloads of a share link as its recipients make them, all at once: GETs of its public page and
 * of its download address. Each must succeed.
 */
export async function visitShare(
  app: App,
  share: { publicUrl: string },
  counts: { views?: number; downloads?: number },
): Promise<void> {
  const page = new URL(share.publicUrl).pathname
  const responses = await Promise.all([
    ...Array.from({ length: counts.views ?? 0 }, () => app.inject({ method: 'GET', url: page })),
    ...Array.from({ length: counts.downloads ?? 0 }, () =>
      app.inject({ method: 'GET', url: `${page}/download` }),
    ),
  ])
  for (const response of responses)
    assert.equal(response.statusCode, 200, `${page}: ${response.body.slice(0, 200)}`)
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** A string of `n` characters. */
export const chars = (n: number, c = 'a') => c.repeat(n)

/**
 * Captures what an app logs: pass `logger` to `startApp`. `level` overrides the configured LOG_LEVEL.
 * `text()` is everything written, `lines()` the parsed JSON lines.
 */
export function captureLogs(level?: string) {
  const chunks: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk))
      done()
    },
  })
  const text = () => chunks.join('')
  return {
    logger: level === undefined ? { stream } : { level, stream },
    text,
    lines: (): any[] =>
      text()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
  }
}

/**
 * Ends the app's listening connection from `db` (as a restart of PostgreSQL would) and waits for a new one.
 * `whileDown` runs at once after the connection is ended, well before the second the app waits to reconnect.
 */
export async function dropListenerAndAwaitItsReturn(db: Db, whileDown?: () => Promise<void>): Promise<void> {
  const listeners = async () =>
    (
      await sql<{ pid: number }>`select pid from pg_stat_activity
        where application_name = ${LISTENER_NAME} and datname = current_database()`.execute(db.kysely)
    ).rows.map((row) => row.pid)
  const [listener] = await listeners()
  assert.ok(listener, 'the app listens for changes')
  await sql`select pg_terminate_backend(${listener})`.execute(db.kysely)
  await whileDown?.()
  // Reconnected within a second or so, as a new backend.
  const deadline = Date.now() + 5000
  for (;;) {
    const now = await listeners()
    if (now.length === 1 && now[0] !== listener) return
    assert.ok(Date.now() < deadline, 'the listener did not come back')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
