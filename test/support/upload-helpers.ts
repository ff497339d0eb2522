// What the upload test files (uploads-prepare, -transfer, -processing and -refusals) share beyond
// ./uploads.ts: the app as they all start it, with a file size limit of its own and its log kept, so that a
// test can see which blob API calls the client made; POST /files and a whole upload as the test's account;
// and the rows and refusals those tests look at.
import assert from 'node:assert/strict'
import type { Engine } from '../../src/platform/db/engine.ts'
import type { TestAccount } from './harness.ts'
import {
  type ListeningContext,
  prepareUploads,
  startListening,
  uploadWithGrant,
  waitForUpload,
} from './uploads.ts'

export const MiB = 1024 * 1024
export const MAX_FILE_SIZE = 64 * MiB

/** Log lines of the app under test, to see which blob API calls the client made. */
const logLines: string[] = []
const logger = { level: 'info', stream: { write: (line: string) => logLines.push(line) } }

/** The app of the upload tests on a real port, with the @vercel/blob client of this process pointed at it. */
export async function startUploadApp(engine: Engine): Promise<ListeningContext> {
  const ctx = await startListening(engine, { env: { MAX_FILE_SIZE: String(MAX_FILE_SIZE) }, logger })
  process.env.VERCEL_BLOB_API_URL = `${ctx.base}/blob`
  // A refusal in a shape the client does not understand would be retried; one retry shows it quickly.
  process.env.VERCEL_BLOB_RETRIES = '1'
  return ctx
}

/** The blob API calls the app logged for `pathname`, as `METHOD /path`. */
export function blobCalls(pathname: string): string[] {
  const query = new URLSearchParams({ pathname }).toString()
  return logLines
    .map((line) => JSON.parse(line) as { msg?: string; req?: { method: string; url: string } })
    .filter((entry) => entry.msg === 'incoming request' && entry.req?.url.includes(query))
    .map((entry) => `${entry.req?.method} ${entry.req?.url.split('?')[0]}`)
}

/**
 * POST /files and a whole upload, for the account `account()` returns on the app `app()` returns: both are
 * read at each call, since a test file sets them in its `before` hook.
 */
export function uploadHelpers(app: () => ListeningContext, account: () => TestAccount) {
  const prepare = (files: { name: string; type: string; size: number }[], folderId?: string | null) =>
    prepareUploads(app().base, account().token, files, folderId)

  /** Uploads `content` through a fresh grant and waits for the outcome. */
  async function uploadFile(name: string, type: string, content: Buffer, folderId?: string | null) {
    const [grant] = await prepare([{ name, type, size: content.length }], folderId)
    assert.ok(grant)
    const result = await uploadWithGrant(grant, content)
    return { grant, result, status: await waitForUpload(grant, account().token) }
  }

  return { prepare, uploadFile }
}

/** The keys of the blobs staged for an intent: its rows of upload_blobs. */
export async function stagedKeys(ctx: ListeningContext, intentId: string): Promise<string[]> {
  const rows = await ctx.db.kysely
    .selectFrom('upload_blobs')
    .select('key')
    .where('intent_id', '=', intentId)
    .execute()
  return rows.map((r) => r.key)
}

export async function intentRow(ctx: ListeningContext, intentId: string) {
  return ctx.db.kysely
    .selectFrom('upload_intents')
    .selectAll()
    .where('id', '=', intentId)
    .executeTakeFirstOrThrow()
}

/** Asserts that `promise` rejects with an error of `type`, whose message matches `pattern` if given. */
export async function expectRejection(
  promise: Promise<unknown>,
  type: new (...args: any[]) => Error,
  pattern?: RegExp,
) {
  await assert.rejects(promise, (error: Error) => {
    assert.ok(error instanceof type, `expected ${type.name}, got ${error.constructor.name}: ${error.message}`)
    if (pattern) assert.match(error.message, pattern)
    return true
  })
}
