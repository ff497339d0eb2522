// An upload in one call, as the API's upload procedure says, through the upload queue every client uses
// (upload-queue.ts): prepare it (POST /files), send the bytes straight to the blob storage (transfer.ts; the API
// credential stays here, the grant goes with the bytes), then poll the upload's status until the server has made
// the file. With `resume`, the upload's grant and the parts stored are kept as they go (resume.ts), and an upload
// of the same file that stopped (killed, interrupted, a lost connection) goes on from them.
import mime from 'mime/lite'
import type { components } from './api.d.ts'
import { CofferError } from './errors.ts'
import { aborted } from './http.ts'
import { fileResumeStore, type ResumeRecord, type ResumeStore, resumeKeyOf } from './resume.ts'
import { apiUploads, type UploadSteps } from './upload-endpoints.ts'
import { type QueuedFile, type UploadItem, UploadQueue, type UploadQueueOptions } from './upload-queue.ts'

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
  /**
   * Cancels the upload. With `resume`, what was stored is kept: the same upload run again goes on from it.
   */
  signal?: AbortSignal
  /**
   * Where to keep what resumes the upload: a ResumeStore, or in Node a directory (`fileResumeStore`). The file
   * (a path, or a Blob; by its name, or absolute path, size and modification time) is looked up in it first: an
   * upload of it that stopped goes on, sending only the parts the server lacks. The record goes once the file is
   * made, or once the upload cannot be resumed.
   */
  resume?: ResumeStore | string
  /** Called when the upload goes on from the bytes the server already held (`stored` of `total`). */
  onResume?: (progress: { stored: number; total: number }) => void
}

/** A file to upload, and what identifies it for resuming (its absolute path when from a path). */
type Described = QueuedFile & {
  identity: { name: string; size: number; lastModified: number }
  resumable: boolean
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
  const { onProgress, onResume } = options
  const keeping = options.resume === undefined ? undefined : await resumable(coffer, file, options)
  const queue = new UploadQueue({
    endpoint: apiUploads(coffer, options.folderId),
    statusFailure: 'fail',
    ...keeping?.hooks,
    ...(onProgress
      ? { onProgress: (_, loaded: number, total: number) => onProgress({ loaded, total }) }
      : {}),
    ...(onResume
      ? { onResume: (item: UploadItem) => onResume({ stored: item.resumedBytes, total: file.size }) }
      : {}),
  })
  void queue.add([file])
  const item = queue.itemOf(file) as UploadItem
  const cancel = () => void queue.cancel(item, { resumable: keeping !== undefined })
  signal?.addEventListener('abort', cancel, { once: true })
  await queue.ended(item).finally(() => signal?.removeEventListener('abort', cancel))
  await keeping?.flush()
  const { failure } = item
  if (item.state === 'done') return coffer.files.get(item.fileId as string)
  if (item.state === 'cancelled' || !failure) throw aborted(signal?.reason)
  if (failure.step !== 'process') throw failure.error
  throw new CofferError(0, 'upload_failed', `The upload of ${file.name} failed: ${failure.reason}`, '')
}

/**
 * What keeps `file`'s upload resumable in `options.resume`: the record of an upload of it that stopped, put in
 * `file.saved` (when it was for the same server and folder), and the queue's hooks that write its record as the
 * upload goes, one write at a time, the latest winning, and remove it once the upload cannot be resumed.
 */
async function resumable(coffer: UploadSteps, file: Described, options: UploadOptions) {
  if (!file.resumable) {
    throw new CofferError(
      0,
      'invalid_argument',
      'Only the upload of a path or a Blob can resume.',
      'Pass a path or a Blob, or leave `resume` out.',
    )
  }
  const store =
    typeof options.resume === 'string' ? fileResumeStore(options.resume) : (options.resume as ResumeStore)
  const key = resumeKeyOf(file.identity)
  const target = `${coffer.url ?? ''} ${options.folderId ?? ''}`
  const kept = await store.get(key).catch(() => undefined)
  if (kept && kept.size === file.size && kept.target === target) {
    file.saved = {
      grant: kept.grant,
      ...(kept.uploadId ? { uploadId: kept.uploadId, parts: kept.parts ?? [] } : {}),
    }
  }
  let chain: Promise<unknown> = Promise.resolve()
  let latest: object | undefined
  let finished = false
  const write = (record: ResumeRecord | undefined) => {
    if (finished) return
    finished = record === undefined
    latest = record ?? {}
    const mine = latest
    chain = chain
      .then(() => (mine !== latest ? undefined : record ? store.set(key, record) : store.delete(key)))
      .catch(() => undefined)
  }
  const save = (item: UploadItem) => {
    if (!item.grant) return
    const { name, size, lastModified } = file.identity
    const multipart = item.multipart ? { uploadId: item.multipart.uploadId, parts: item.multipart.parts } : {}
    write({
      key,
      name,
      size,
      lastModified,
      grant: item.grant,
      ...multipart,
      updatedAt: Date.now(),
      target,
    })
  }
  const hooks: Partial<UploadQueueOptions<QueuedFile>> = {
    onPrepared: (items) => items.forEach(save),
    onStored: save,
    onFinished: () => write(undefined),
  }
  return { hooks, flush: () => chain }
}

/** How to open the body `upload()` takes, and the name, size and type the server is told of. */
async function describe(source: UploadSource, options: UploadOptions): Promise<Described> {
  let open = async (): Promise<unknown> => source
  let name = options.name
  let size = options.size
  let type = options.type
  let identity: Described['identity'] | undefined
  if (typeof source === 'string') {
    // Node only: a browser never takes this branch, and never loads node:fs.
    const [{ stat }, { basename, resolve }] = await Promise.all([
      import('node:fs/promises'),
      import('node:path'),
    ])
    const stats = await stat(source).catch((error: NodeJS.ErrnoException) => {
      throw new CofferError(
        0,
        'invalid_argument',
        `Cannot read ${source}: ${error.code ?? error.message}.`,
        '',
      )
    })
    if (!stats.isFile()) throw new CofferError(0, 'invalid_argument', `${source} is not a file.`, '')
    // A Blob of the file: its parts are slices read from the disk as they go, and resume.
    open = async () => {
      const fs = await import('node:fs')
      return fs.openAsBlob ? fs.openAsBlob(source) : fs.createReadStream(source)
    }
    name ??= basename(source)
    size ??= stats.size
    identity = { name: resolve(source), size: stats.size, lastModified: stats.mtimeMs }
  } else if (source instanceof Blob) {
    name ??= (source as Blob & { name?: string }).name
    size ??= source.size
    type ??= source.type || undefined
    const lastModified = (source as Blob & { lastModified?: number }).lastModified ?? 0
    identity = { name: name ?? '', size: source.size, lastModified }
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
  return {
    open,
    name,
    size,
    type,
    identity: identity ?? { name, size, lastModified: 0 },
    resumable: identity !== undefined,
  }
}
