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
  /**
   * A multipart upload of this grant to go on with (the upload status's `multipart`, or what `onStored` last
   * reported): only the parts it does not hold with the size expected are sent, then it is completed with all
   * of them. If the server no longer holds it, a new one starts on the same grant. Only a Blob body sent in
   * parts resumes; any other is sent whole.
   */
  resumeFrom?: MultipartState
  /**
   * Called once a multipart upload of a Blob is created (no parts yet), and after each part is stored, with the
   * parts the server holds: what a client keeps to resume after it was stopped.
   */
  onStored?: (state: MultipartState) => void
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

/** The blob API's refusals (bad_request) of a multipart upload it does not hold (docs/uploads.md). */
const UPLOAD_GONE = /no longer open|not an upload id this server gave out/i

/** A part of a multipart upload the server holds: its number, its size, and the etag to complete with. */
export interface StoredPart {
  partNumber: number
  size: number
  etag: string
}

/** A multipart upload under way: its id, and the parts the server holds of it. */
export interface MultipartState {
  uploadId: string
  parts: StoredPart[]
}

/**
 * A multipart upload of a Blob through @vercel/blob's own steps (create, each part, complete), each part a
 * slice of it: a browser sends each from the disk, the page's thread never touching the bytes. `upload()` reads
 * a Blob as a stream and copies it into new parts, which cost Chromium 39 s of CPU a GiB and held a page to 0.6
 * of the rate of the same client in Node; from slices, 9 s and 1.1 (bench/app-uploads.ts). The client token is
 * asked for as `upload()` asks (docs/blob-protocol.md); a failed part is retried by the library, and a part
 * that fails for good stops the others. With `resumeFrom`, the upload goes on: only the parts the server does not
 * hold with the size expected are sent; should the server no longer hold that upload, a new one starts.
 */
async function sendInParts(grant: UploadGrant, file: Blob, options: TransferOptions): Promise<void> {
  const token = await clientToken(grant, options.signal)
  try {
    await sendUpload(grant, file, { token, options, from: options.resumeFrom })
  } catch (error) {
    // The upload resumed is gone from the server (removed after lying idle, or never its own): a new one, on
    // the same grant.
    const gone = UPLOAD_GONE.test((error as Error).message)
    if (!options.resumeFrom || options.signal?.aborted || !gone) throw error
    await sendUpload(grant, file, { token, options, from: undefined })
  }
}

/** One multipart upload of `file`: the one `from` names, or a new one; its missing parts, then its completion. */
async function sendUpload(
  grant: UploadGrant,
  file: Blob,
  run: { token: string; options: TransferOptions; from: MultipartState | undefined },
): Promise<void> {
  const { options, from } = run
  // Aborted when the caller cancels, or when a part fails for good: the other parts then stop too.
  const stop = new AbortController()
  const onAbort = () => stop.abort()
  if (options.signal?.aborted) stop.abort()
  options.signal?.addEventListener('abort', onAbort, { once: true })
  const common = {
    access: 'private' as const,
    token: run.token,
    contentType: grant.contentType,
    abortSignal: stop.signal,
  }
  try {
    const state = from
      ? { uploadId: from.uploadId, parts: partsToKeep(from.parts, file.size) }
      : await createUpload(grant, common, options)
    await sendMissingParts(grant, file, { ...common, stop, state, options })
    options.signal?.throwIfAborted()
    const parts = [...state.parts].sort((a, b) => a.partNumber - b.partNumber)
    await completeMultipartUpload(grant.pathname, parts, {
      ...common,
      key: grant.pathname,
      uploadId: state.uploadId,
    })
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
  }
}

/** A client token for `grant`'s multipart upload, asked for as `upload()` asks (a new one for each transfer). */
async function clientToken(grant: UploadGrant, signal: AbortSignal | undefined): Promise<string> {
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
    signal: signal ?? null,
  })
  if (!handshake.ok) throw await CofferError.fromResponse(handshake)
  return ((await handshake.json()) as { clientToken: string }).clientToken
}

type PartOptions = Parameters<typeof createMultipartUpload>[1]

/** A new multipart upload, reported to `onStored` before any part goes. */
async function createUpload(
  grant: UploadGrant,
  common: PartOptions,
  options: TransferOptions,
): Promise<MultipartState> {
  const { uploadId } = await createMultipartUpload(grant.pathname, common)
  const state = { uploadId, parts: [] }
  options.onStored?.({ uploadId, parts: [] })
  return state
}

/** The size of part `partNumber` of a file of `size` bytes, as sent from a Blob. */
function partSize(partNumber: number, size: number): number {
  return Math.max(0, Math.min(PART_BYTES, size - (partNumber - 1) * PART_BYTES))
}

/** The stored parts that hold what this client would send under their numbers (the others are sent again). */
function partsToKeep(parts: readonly StoredPart[], size: number): StoredPart[] {
  const count = Math.ceil(size / PART_BYTES)
  const seen = new Set<number>()
  return parts.filter((part) => {
    const keep =
      Number.isInteger(part.partNumber) &&
      part.partNumber >= 1 &&
      part.partNumber <= count &&
      part.size === partSize(part.partNumber, size) &&
      !seen.has(part.partNumber)
    seen.add(part.partNumber)
    return keep
  })
}

/**
 * Sends the parts of `file` that `state` does not hold, `PARTS_AT_ONCE` at a time, adding each to `state` as
 * the server stores it (and reporting it to `onStored`). A part that fails for good stops the others.
 */
async function sendMissingParts(
  grant: UploadGrant,
  file: Blob,
  run: PartOptions & { stop: AbortController; state: MultipartState; options: TransferOptions },
): Promise<void> {
  const { stop, state, options, ...common } = run
  const count = Math.ceil(file.size / PART_BYTES)
  const held = new Set(state.parts.map((part) => part.partNumber))
  const missing = Array.from({ length: count }, (_, i) => i + 1).filter((n) => !held.has(n))
  const sent = new Map<number, number>(state.parts.map((part) => [part.partNumber, part.size]))
  const report = () =>
    options.onProgress?.(
      [...sent.values()].reduce((sum, bytes) => sum + bytes, 0),
      file.size,
    )
  if (state.parts.length > 0) report()
  let next = 0
  const sendParts = async () => {
    while (next < missing.length && !stop.signal.aborted) {
      const partNumber = missing[next++] as number
      const size = partSize(partNumber, file.size)
      const body = file.slice((partNumber - 1) * PART_BYTES, (partNumber - 1) * PART_BYTES + size)
      const { etag } = await uploadPart(grant.pathname, body, {
        ...common,
        key: grant.pathname,
        uploadId: state.uploadId,
        partNumber,
        onUploadProgress: ({ loaded }) => {
          sent.set(partNumber, loaded)
          report()
        },
      })
      state.parts.push({ partNumber, size, etag })
      options.onStored?.({ uploadId: state.uploadId, parts: [...state.parts] })
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(PARTS_AT_ONCE, missing.length) }, sendParts))
  } catch (error) {
    stop.abort()
    throw error
  }
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
