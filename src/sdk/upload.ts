// An upload in one call, as the API's upload procedure says: prepare it (POST /files), send the bytes straight
// to the blob storage with @vercel/blob's `upload()` (the API credential stays here; the grant goes with the
// bytes), then poll the upload's status until the server has made the file.
import { upload } from '@vercel/blob/client'
import mime from 'mime/lite'
import type { components, operations } from './api.d.ts'
import { CofferError } from './errors.ts'
import { aborted, delay } from './http.ts'

/**
 * What to upload: a file's path (Node), a Blob or File, bytes, or a stream of bytes (a web ReadableStream or a
 * Node Readable), which needs `size`.
 */
export type UploadSource =
  | string
  | Blob
  | Uint8Array
  | ArrayBuffer
  | ReadableStream<Uint8Array>
  | NodeJS.ReadableStream

export interface UploadOptions {
  /** The file's name; by default the path's or the File's own. */
  name?: string
  /** Its content type; by default the Blob's own, or guessed from the name's extension. */
  type?: string
  /** Its size in bytes: needed for a stream, which is not read ahead. */
  size?: number
  /** The folder to upload into; by default the root. */
  folderId?: string | null
  /** Called as the bytes go: `loaded` of `total` bytes sent. */
  onProgress?: (progress: { loaded: number; total: number }) => void
  /** Cancels the upload. */
  signal?: AbortSignal
}

type File = components['schemas']['File']

/** What an upload asks of the client (Coffer): the steps of the upload procedure. */
export interface UploadSteps {
  capabilities(): Promise<{ uploads: { blobApiUrl: string; multipartThresholdBytes: number } }>
  files: {
    prepareUploads(
      body: operations['prepareUploads']['requestBody']['content']['application/json'],
    ): Promise<
      operations['prepareUploads']['responses'][201]['content']['application/json']['data']['uploads']
    >
    uploadStatus(
      intentId: string,
    ): Promise<operations['getUploadStatus']['responses'][200]['content']['application/json']['data']>
    get(fileId: string): Promise<File>
  }
}

/** The first wait before asking for an upload's status, and the longest: each wait is half as long again. */
const FIRST_POLL_MS = 50
const LONGEST_POLL_MS = 1000

export async function uploadFile(
  coffer: UploadSteps,
  source: UploadSource,
  options: UploadOptions,
): Promise<File> {
  const { open, name, size, type } = await describe(source, options)
  const signal = options.signal
  if (signal?.aborted) throw aborted(signal.reason)
  const { uploads } = await coffer.capabilities()
  const [grant] = await coffer.files.prepareUploads({
    files: [{ name, type, size }],
    ...(options.folderId === undefined ? {} : { folderId: options.folderId }),
  })
  if (!grant) throw new CofferError(0, 'upload_failed', 'The server prepared no upload.', '')

  useBlobApi(uploads.blobApiUrl)
  // A path's file is opened only now that the upload is prepared: a refusal above leaves nothing open.
  const body = await open()
  const sending = upload(grant.pathname, body as Parameters<typeof upload>[1], {
    access: 'private',
    contentType: grant.contentType,
    handleUploadUrl: grant.handleUploadUrl,
    clientPayload: JSON.stringify(grant.clientPayload),
    multipart: size > uploads.multipartThresholdBytes,
    ...(signal ? { abortSignal: signal } : {}),
    ...(options.onProgress
      ? { onUploadProgress: ({ loaded }) => options.onProgress?.({ loaded, total: size }) }
      : {}),
  })
  try {
    // @vercel/blob passes the signal to its requests, but a multipart upload from a Node stream can wait on
    // the stream after it, and never settle: the signal ends the wait here, and the file's stream is closed.
    await (signal ? Promise.race([sending, abortion(signal)]) : sending)
  } catch (error) {
    if (signal?.aborted) {
      ;(body as { destroy?: () => void }).destroy?.()
      sending.catch(() => {})
      throw aborted(error)
    }
    if (error instanceof CofferError) throw error
    throw new CofferError(
      0,
      'upload_failed',
      `The bytes of ${name} could not be sent: ${(error as Error).message}`,
      'Try again; if it keeps failing, check that the server’s blob API is reachable from here.',
      { cause: error },
    )
  }

  for (let wait = FIRST_POLL_MS; ; wait = Math.min(LONGEST_POLL_MS, wait * 1.5)) {
    const status = await coffer.files.uploadStatus(grant.intentId)
    if (status.status === 'complete') return coffer.files.get(status.result.id)
    if (status.status === 'error') {
      throw new CofferError(0, 'upload_failed', `The upload of ${name} failed: ${status.error}`, '')
    }
    await delay(wait, signal)
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
 * Coffer's browser bundle from a global (web/build.ts). One process, one blob API: a program that uploads to
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

/** How to open the body `upload()` takes, and the name, size and type the server is told of. */
async function describe(source: UploadSource, options: UploadOptions) {
  let open = async (): Promise<unknown> => source
  let name = options.name
  let size = options.size
  let type = options.type
  if (typeof source === 'string') {
    // Node only: a browser never takes this branch, and never loads node:fs.
    const [{ stat }, { basename }] = await Promise.all([import('node:fs/promises'), import('node:path')])
    const stats = await stat(source).catch((error: NodeJS.ErrnoException) => {
      throw new CofferError(
        0,
        'invalid_argument',
        `Cannot read ${source}: ${error.code ?? error.message}.`,
        '',
      )
    })
    if (!stats.isFile()) throw new CofferError(0, 'invalid_argument', `${source} is not a file.`, '')
    open = async () => (await import('node:fs')).createReadStream(source)
    name ??= basename(source)
    size ??= stats.size
  } else if (source instanceof Blob) {
    name ??= (source as Blob & { name?: string }).name
    size ??= source.size
    type ??= source.type || undefined
  } else if (source instanceof Uint8Array || source instanceof ArrayBuffer) {
    size ??= source.byteLength
  }
  if (!name) {
    throw new CofferError(0, 'invalid_argument', 'The upload needs a name.', 'Pass `name` in the options.')
  }
  if (size === undefined) {
    throw new CofferError(
      0,
      'invalid_argument',
      'The upload of a stream needs its size.',
      'Pass `size` in the options: the server is told it before the bytes are sent.',
    )
  }
  type ??= mime.getType(name) ?? 'application/octet-stream'
  return { open, name, size, type }
}
