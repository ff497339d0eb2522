// An upload in one call, as the API's upload procedure says: prepare it (POST /files), send the bytes straight
// to the blob storage (transfer.ts; the API credential stays here, the grant goes with the bytes), then poll
// the upload's status until the server has made the file.
import mime from 'mime/lite'
import type { components, operations } from './api.d.ts'
import { CofferError } from './errors.ts'
import { aborted, delay } from './http.ts'
import { sendBytes } from './transfer.ts'

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

  // A path's file is opened only now that the upload is prepared: a refusal above leaves nothing open.
  const body = await open()
  await sendBytes(grant, body, {
    blobApiUrl: uploads.blobApiUrl,
    multipartThreshold: uploads.multipartThresholdBytes,
    ...(signal ? { signal } : {}),
    ...(options.onProgress ? { onProgress: (loaded, total) => options.onProgress?.({ loaded, total }) } : {}),
  })

  for (let wait = FIRST_POLL_MS; ; wait = Math.min(LONGEST_POLL_MS, wait * 1.5)) {
    const status = await coffer.files.uploadStatus(grant.intentId)
    if (status.status === 'complete') return coffer.files.get(status.result.id)
    if (status.status === 'error') {
      throw new CofferError(0, 'upload_failed', `The upload of ${name} failed: ${status.error}`, '')
    }
    await delay(wait, signal)
  }
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
