// Helpers for upload tests and benchmarks: a real listening server (the @vercel/blob client talks to real
// URLs), the client's upload() driven exactly as docs/uploads.md says, and reproducible large bodies.
import assert from 'node:assert/strict'
import { createCipheriv, createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { upload } from '@vercel/blob/client'
import type { Engine } from '../../src/platform/db/engine.ts'
import { type StartOptions, startApp, type TestContext } from './harness.ts'

export const MULTIPART_THRESHOLD = 5 * 1024 * 1024

import { freePort } from './ports.ts'

export { freePort }

export type ListeningContext = TestContext & { base: string; stop(): Promise<void> }

/** The app on a real port of 127.0.0.1, with PUBLIC_URL pointing at it. */
export async function startListening(engine: Engine, options: StartOptions = {}): Promise<ListeningContext> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const ctx = await startApp(engine, { ...options, env: { PUBLIC_URL: base, ...options.env } })
  await ctx.app.listen({ port, host: '127.0.0.1' })
  return {
    ...ctx,
    base,
    async stop() {
      // A client's keep-alive pool in the same process holds connections open, some never used: closing the
      // server must not wait for them.
      ctx.app.server.closeAllConnections()
      await ctx.stop()
    },
  }
}

export interface Grant {
  intentId: string
  name: string
  contentType: string
  size: number
  pathname: string
  handleUploadUrl: string
  statusUrl: string
  clientPayload: { intentId: string; name: string; grant: string }
  expiresAt: string
}

export interface FileToPrepare {
  name: string
  type: string
  size: number
}

/** POST /files over HTTP; returns the grants, or throws with the error body. */
export async function prepareUploads(
  base: string,
  token: string,
  files: FileToPrepare[],
  folderId?: string | null,
): Promise<Grant[]> {
  const response = await fetch(`${base}/api/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(folderId === undefined ? { files } : { files, folderId }),
  })
  const body = (await response.json()) as { data: { uploads: Grant[] } }
  if (response.status !== 201) throw new Error(`POST /files: ${response.status} ${JSON.stringify(body)}`)
  return body.data.uploads
}

type UploadBody = Parameters<typeof upload>[1]

/** The client call of step 2 of the upload procedure (docs/uploads.md); `overrides` changes one thing. */
export function uploadWithGrant(
  grant: Grant,
  body: UploadBody,
  overrides: Partial<Parameters<typeof upload>[2]> & { pathname?: string } = {},
) {
  const { pathname = grant.pathname, ...options } = overrides
  return upload(pathname, body, {
    access: 'private',
    contentType: grant.contentType,
    handleUploadUrl: grant.handleUploadUrl,
    clientPayload: JSON.stringify(grant.clientPayload),
    multipart: grant.size > MULTIPART_THRESHOLD,
    ...options,
  })
}

export type Status =
  | {
      status: 'pending'
      phase: 'uploading' | 'processing'
      multipart?: { uploadId: string; parts: { partNumber: number; size: number; etag: string }[] }
    }
  | { status: 'complete'; result: { id: string } }
  | { status: 'error'; error: string }

const askStatus = (grant: Grant, token: string) =>
  fetch(grant.statusUrl, { headers: { authorization: `Bearer ${token}` } })

async function readStatus(response: Response): Promise<Status> {
  const body = (await response.json()) as { data: Status }
  if (response.status !== 200) throw new Error(`status: ${response.status} ${JSON.stringify(body)}`)
  return body.data
}

export async function getStatus(grant: Grant, token: string): Promise<Status> {
  return readStatus(await askStatus(grant, token))
}

/**
 * Polls the status URL (step 3 of the upload procedure) until the upload is no longer pending. A 429 is
 * waited out as its Retry-After says, as a client must: tests that share a credential for a minute (the
 * fleet's, whose limit Redis keeps for all its processes) can poll past it.
 */
export async function waitForUpload(grant: Grant, token: string, timeoutMs = 30_000): Promise<Status> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const response = await askStatus(grant, token)
    if (response.status === 429 && Date.now() < deadline) {
      await response.arrayBuffer()
      const seconds = Number(response.headers.get('retry-after') ?? 1)
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
      continue
    }
    const status = await readStatus(response)
    if (status.status !== 'pending') return status
    if (Date.now() > deadline) throw new Error(`upload ${grant.intentId} still pending after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/**
 * `size` reproducible pseudo-random bytes (AES-256-CTR of zeros under a seed), produced as they are read:
 * large bodies never sit in memory. `digest()` is the SHA-256 of what was read, once the stream ended.
 */
export function seededStream(size: number, seed = 1): Readable & { digest(): string } {
  const cipher = createCipheriv(
    'aes-256-ctr',
    createHash('sha256').update(String(seed)).digest(),
    Buffer.alloc(16),
  )
  const hash = createHash('sha256')
  const zeros = Buffer.alloc(1024 * 1024)
  let left = size
  const stream = new Readable({
    read() {
      if (left === 0) {
        this.push(null)
        return
      }
      const n = Math.min(left, zeros.length)
      left -= n
      const chunk = cipher.update(zeros.subarray(0, n))
      hash.update(chunk)
      this.push(chunk)
    },
  })
  return Object.assign(stream, { digest: () => hash.copy().digest('hex') })
}

export async function sha256Of(source: AsyncIterable<Uint8Array>): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of source) hash.update(chunk)
  return hash.digest('hex')
}

export const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest('hex')

/** The client token the handshake hands out for a grant: the one upload() would get, the same for every call. */
export async function handshakeToken(grant: Grant): Promise<string> {
  const response = await fetch(grant.handleUploadUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'blob.generate-client-token',
      payload: {
        pathname: grant.pathname,
        clientPayload: JSON.stringify(grant.clientPayload),
        multipart: false,
      },
    }),
  })
  assert.equal(response.status, 200, `the handshake answered ${response.status}`)
  return ((await response.json()) as { clientToken: string }).clientToken
}

/**
 * Waits until a file's SHA-256 and CRC-32 are known: at once for most uploads, shortly after completion for a
 * multipart upload that S3 joined, whose digests a job computes (files/file-digests.job.ts).
 */
export async function digestsSettled(ctx: TestContext, fileId: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const pending = await ctx.db.kysely
      .selectFrom('file_digests_pending')
      .select('file_id')
      .where('file_id', '=', fileId)
      .executeTakeFirst()
    if (!pending) return
    assert.ok(Date.now() < deadline, `the digests of ${fileId} were still pending after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
