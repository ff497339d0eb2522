// An upload in one call, as the API's upload procedure says, through the upload queue every client uses
// (upload-queue.ts): prepare it (POST /files), send the bytes straight to the blob storage (transfer.ts; the API
// credential stays here, the grant goes with the bytes), then poll the upload's status until the server has made
// the file.
import mime from 'mime/lite'
import type { components } from './api.d.ts'
import { CofferError } from './errors.ts'
import { aborted } from './http.ts'
import { apiUploads, type UploadSteps } from './upload-endpoints.ts'
import { type QueuedFile, type UploadItem, UploadQueue } from './upload-queue.ts'

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

/**
 * Uploads one file through the upload queue (upload-queue.ts) and the API (upload-endpoints.ts), and resolves
 * with the new file. A failure is thrown as the step that failed threw it: a status call that fails ends the
 * upload too, for the caller to decide what to do.
 */
export async function uploadFile(
  coffer: UploadSteps,
  source: UploadSource,
  options: UploadOptions,
): Promise<File> {
  const file = await describe(source, options)
  const signal = options.signal
  if (signal?.aborted) throw aborted(signal.reason)
  const { onProgress } = options
  const queue = new UploadQueue({
    endpoint: apiUploads(coffer, options.folderId),
    statusFailure: 'fail',
    ...(onProgress
      ? { onProgress: (_, loaded: number, total: number) => onProgress({ loaded, total }) }
      : {}),
  })
  void queue.add([file])
  const item = queue.itemOf(file) as UploadItem
  const cancel = () => void queue.cancel(item)
  signal?.addEventListener('abort', cancel, { once: true })
  await queue.ended(item).finally(() => signal?.removeEventListener('abort', cancel))
  const { failure } = item
  if (item.state === 'done') return coffer.files.get(item.fileId as string)
  if (item.state === 'cancelled' || !failure) throw aborted(signal?.reason)
  if (failure.step !== 'process') throw failure.error
  throw new CofferError(0, 'upload_failed', `The upload of ${file.name} failed: ${failure.reason}`, '')
}

/** How to open the body `upload()` takes, and the name, size and type the server is told of. */
async function describe(source: UploadSource, options: UploadOptions): Promise<QueuedFile> {
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
