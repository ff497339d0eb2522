// The transfer step of an upload, the one implementation of it: the bytes of a prepared upload go straight to
// the blob storage with the @vercel/blob client, as the grant allows, with progress and cancellation. Every
// uploader uses it: the SDK's `files.upload` (upload.ts), and the pages of the web app and of file requests,
// which prepare and follow their uploads through their own endpoints (the session's, a request's public API).
import { completeMultipartUpload, createMultipartUpload, upload, uploadPart } from '@vercel/blob/client'
import { CofferError } from './errors.ts'
import { aborted } from './http.ts'

/** What a preparation hands out for one upload, and what the transfer needs of it. */
export interface UploadGrant {
  intentId: string
  contentType: string
  size: number
  pathname: string
  handleUploadUrl: string
  clientPayload: { intentId: string; name: string; grant: string }
  /** When the grant is refused: the bytes must be stored by then. */
  expiresAt: string
}

export interface TransferOptions {
  /** The blob API the bytes go to (the capability index's `uploads.blobApiUrl`). */
  blobApiUrl: string
  /** Above this size the bytes go in parts (the capability index's `uploads.multipartThresholdBytes`). */
  multipartThreshold: number
  signal?: AbortSignal
  /** Called as the bytes go: `loaded` of `total` sent. */
  onProgress?: (loaded: number, total: number) => void
}

/** The size of a part sent from a Blob, and how many go at once: @vercel/blob's own in a browser. */
const PART_BYTES = 8 * 1024 * 1024
const PARTS_AT_ONCE = 6

/**
 * Sends `body` (a Blob or File, bytes, or a stream: anything `upload()` of @vercel/blob takes) as `grant`
 * allows. Resolves once the blob storage holds all of it; the server then makes the file. Throws a CofferError:
 * `aborted` when the signal ends it, `upload_failed` with the reason otherwise.
 */
export async function sendBytes(grant: UploadGrant, body: unknown, options: TransferOptions): Promise<void> {
  const { signal } = options
  if (signal?.aborted) throw aborted(signal.reason)
  useBlobApi(options.blobApiUrl)
  // @vercel/blob throttles its progress to one report in 100 ms, and the last one may come after its upload has
  // resolved: the end is reported here once the bytes are stored, and nothing after it.
  let ended = false
  const report = options.onProgress
  const onProgress =
    report &&
    ((loaded: number, total: number) => {
      if (!ended) report(loaded, total)
    })
  const multipart = grant.size > options.multipartThreshold
  const sending =
    multipart && body instanceof Blob
      ? sendInParts(grant, body, { ...options, ...(onProgress ? { onProgress } : {}) })
      : upload(grant.pathname, body as Parameters<typeof upload>[1], {
          access: 'private',
          contentType: grant.contentType,
          handleUploadUrl: grant.handleUploadUrl,
          clientPayload: JSON.stringify(grant.clientPayload),
          multipart,
          ...(signal ? { abortSignal: signal } : {}),
          ...(onProgress ? { onUploadProgress: ({ loaded }) => onProgress(loaded, grant.size) } : {}),
        })
  try {
    // @vercel/blob passes the signal to its requests, but a multipart upload from a Node stream can wait on
    // the stream after it, and never settle: the signal ends the wait here, and the stream is closed.
    await (signal ? Promise.race([sending, abortion(signal)]) : sending)
    report?.(grant.size, grant.size)
    ended = true
  } catch (error) {
    ended = true
    if (signal?.aborted) {
      ;(body as { destroy?: () => void }).destroy?.()
      sending.catch(() => {})
      throw aborted(error)
    }
    if (error instanceof CofferError) throw error
    const message = (error as Error).message.replace(/^Vercel Blob: /, '')
    throw new CofferError(
      0,
      /network|fetch|connect/i.test(message) ? 'network_error' : 'upload_failed',
      `The bytes of ${grant.clientPayload.name} could not be sent: ${message}`,
      'Try again; if it keeps failing, check that the server’s blob API is reachable from here.',
      { cause: error },
    )
  }
}

/**
 * A multipart upload of a Blob through @vercel/blob's own steps (create, each part, complete), each part a
 * slice of it: a browser sends each from the disk, the page's thread never touching the bytes. `upload()` reads
 * a Blob as a stream and copies it into new parts, which cost Chromium 39 s of CPU a GiB and held a page to 0.6
 * of the rate of the same client in Node; from slices, 9 s and 1.1 (bench/app-uploads.ts). The client token is
 * asked for as `upload()` asks (docs/blob-protocol.md); a failed part is retried by the library, and a part
 * that fails for good stops the others.
 */
async function sendInParts(grant: UploadGrant, file: Blob, options: TransferOptions): Promise<void> {
  const handshake = await fetch(grant.handleUploadUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'blob.generate-client-token',
      payload: {
        pathname: grant.pathname,
        clientPayload: JSON.stringify(grant.clientPayload),
        multipart: true,
      },
    }),
    signal: options.signal ?? null,
  })
  if (!handshake.ok) throw await CofferError.fromResponse(handshake)
  const { clientToken } = (await handshake.json()) as { clientToken: string }
  // Aborted when the caller cancels, or when a part fails for good: the other parts then stop too.
  const stop = new AbortController()
  const { signal } = stop
  if (options.signal?.aborted) stop.abort()
  options.signal?.addEventListener('abort', () => stop.abort(), { once: true })
  const common = {
    access: 'private' as const,
    token: clientToken,
    contentType: grant.contentType,
    abortSignal: signal,
  }
  const { key, uploadId } = await createMultipartUpload(grant.pathname, common)
  const count = Math.ceil(file.size / PART_BYTES)
  const sent = new Array<number>(count).fill(0)
  const parts: { partNumber: number; etag: string }[] = []
  let next = 0
  const sendParts = async () => {
    while (next < count && !signal.aborted) {
      const index = next++
      const body = file.slice(index * PART_BYTES, Math.min(file.size, (index + 1) * PART_BYTES))
      parts[index] = await uploadPart(grant.pathname, body, {
        ...common,
        key,
        uploadId,
        partNumber: index + 1,
        onUploadProgress: ({ loaded }) => {
          sent[index] = loaded
          options.onProgress?.(
            sent.reduce((sum, bytes) => sum + bytes, 0),
            file.size,
          )
        },
      })
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(PARTS_AT_ONCE, count) }, sendParts))
  } catch (error) {
    stop.abort()
    throw error
  }
  options.signal?.throwIfAborted()
  await completeMultipartUpload(grant.pathname, parts, { ...common, key, uploadId })
}

/** Rejects once `signal` aborts. */
function abortion(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const onAbort = () => reject(aborted(signal.reason))
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * The blob API `upload()` sends to: Coffer's own, which @vercel/blob reads from its environment variable, or in
 * Coffer's browser bundles from a global (web/build.ts). One process, one blob API: a program that uploads to
 * two Coffer servers at once must use one process for each.
 */
function useBlobApi(url: string): void {
  const global = globalThis as {
    COFFER_BLOB_API_URL?: string
    process?: { env: Record<string, string | undefined> }
  }
  global.COFFER_BLOB_API_URL = url
  global.process ??= { env: {} }
  global.process.env.VERCEL_BLOB_API_URL = url
}
