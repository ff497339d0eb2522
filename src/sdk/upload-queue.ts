// The one upload queue every client uses: the owner's files page, a file request's page, the SDK's
// `files.upload` (upload.ts). Files are prepared in batches through an endpoint (upload-endpoints.ts: the
// owner's session, the API, a request's public API), their bytes go to the blob storage with the transfer
// (transfer.ts) a few at a time, and the uploads are followed through the status call until the server has
// made each file. An upload can be cancelled, and sent again after it failed or was cancelled. The queue holds
// each upload's state; whoever shows it (a page's rows, a promise) renders from the changes it reports.
import { CofferError } from './errors.ts'
import { sendBytes, type UploadGrant } from './transfer.ts'

/**
 * Where an upload stands: being prepared, prepared and waiting its turn, its bytes being sent, stored and being
 * made into a file by the server, then done, failed (`failure` says where and why) or cancelled.
 */
export type UploadState =
  | 'preparing'
  | 'waiting'
  | 'uploading'
  | 'processing'
  | 'done'
  | 'failed'
  | 'cancelled'

/** The states of an upload still under way: leaving would end it. */
const UNDER_WAY: readonly UploadState[] = ['preparing', 'waiting', 'uploading', 'processing']

/** A file to upload: what the server is told of it, and how to open its bytes when its turn comes. */
export interface QueuedFile {
  name: string
  type: string
  size: number
  /** The body `sendBytes` sends (a Blob, bytes, a stream), opened only once the upload is prepared. */
  open(): unknown
}

/** A Blob or File as a file to upload: its own name, and its type (`application/octet-stream` when unknown). */
export function blobFile(file: Blob & { name: string }): QueuedFile {
  return { name: file.name, type: file.type || 'application/octet-stream', size: file.size, open: () => file }
}

/** Why an upload failed, by the step it failed at. */
export type UploadFailure =
  /**
   * The server refused to prepare it, or could not be reached. `blame`: the refusal named this file, or another
   * file of the same preparation (the whole batch is refused).
   */
  | { step: 'prepare'; error: unknown; blame?: 'this' | 'another' }
  /** Its bytes could not be sent (a CofferError from transfer.ts). */
  | { step: 'transfer'; error: unknown }
  /** Its status could not be asked for (only with `statusFailure: 'fail'`). */
  | { step: 'status'; error: unknown }
  /** The server received the bytes but could not make the file; `reason` is the server's, when it gave one. */
  | { step: 'process'; reason: string | undefined }

/** An upload's status as the server reports it. */
export interface UploadStatus {
  status: 'pending' | 'complete' | 'error'
  error?: string
  /** The new file, once complete (the public API of a request does not say). */
  result?: { id: string }
}

/** Where the bytes go: the capability index's `uploads.blobApiUrl` and `uploads.multipartThresholdBytes`. */
export interface TransferSettings {
  blobApiUrl: string
  multipartThreshold: number
}

/** What the queue asks of the server, through one of the endpoints of upload-endpoints.ts. */
export interface UploadEndpoint {
  /** Where the bytes go; asked for before each preparation. */
  transferSettings(): Promise<TransferSettings>
  /** The grants of `files`' uploads, in order; throws the refusal (a CofferError) otherwise. */
  prepare(files: { name: string; type: string; size: number }[]): Promise<UploadGrant[]>
  /** The statuses of the uploads of `grants`, in order. */
  status(grants: UploadGrant[]): Promise<UploadStatus[]>
  /** Ends the uploads of `grants` on the server; none where the endpoint has no such call (they expire). */
  cancel?(grants: UploadGrant[]): Promise<void>
}

/** One file's upload. The queue changes it; readers render it. */
export class UploadItem<File extends QueuedFile = QueuedFile> {
  state: UploadState = 'preparing'
  grant: UploadGrant | undefined
  failure: UploadFailure | undefined
  /** The new file's id, once done (when the endpoint says it). */
  fileId: string | undefined
  /** When its bytes began to go (performance.now()), for a speed. */
  startedAt = 0
  controller: AbortController | undefined
  readonly file: File
  constructor(file: File) {
    this.file = file
  }
}

export interface UploadQueueOptions<File extends QueuedFile> {
  endpoint: UploadEndpoint
  /** Uploads whose bytes go at once; the others wait their turn (default 3). */
  concurrency?: number
  /** Files prepared in one call (default 100). */
  perPreparation?: number
  /** Which waiting upload goes next: the one queued first (default), or the one queued last. */
  newestFirst?: boolean
  /**
   * Whether an upload whose grant has less than a minute left when its turn comes is prepared again first: on a
   * request's page files can wait longer than the ten minutes the server lets a grant go unused.
   */
  renewGrants?: boolean
  /**
   * What a status call that fails does: nothing, the next one asks again (default: a page waits, the server
   * may be restarting); or fail the uploads it asked about with its error (a program gets it to decide).
   */
  statusFailure?: 'ask-again' | 'fail'
  /** Called with the uploads whose state just changed (together when they changed together). */
  onChange?(items: UploadItem<File>[]): void
  /** Called as an upload's bytes go: `loaded` of `total` sent. */
  onProgress?(item: UploadItem<File>, loaded: number, total: number): void
  /** Awaited with the uploads the server has made files of, before they are done (a page adds their rows). */
  onComplete?(items: UploadItem<File>[]): Promise<void>
  /** Called when a turn of the queue ends with no upload under way. */
  onIdle?(): void
}

const CONCURRENT_UPLOADS = 3
const PER_PREPARATION = 100
/** A grant with less than this left is prepared again before its file is sent (with `renewGrants`). */
const GRANT_MARGIN_MS = 60_000
/**
 * The status is asked for at once when an upload's bytes are stored, then after this long, each wait half as
 * long again up to the longest, while any upload is being processed.
 */
const FIRST_POLL_MS = 50
const LONGEST_POLL_MS = 1000

/** The index of the file a refusal names (`files[2].size`), if it names one. */
function blamedFile(error: unknown): number | undefined {
  const at = error instanceof CofferError ? /^files\[(\d+)\]/.exec(error.field ?? '') : null
  return at ? Number(at[1]) : undefined
}

export class UploadQueue<File extends QueuedFile = QueuedFile> {
  readonly #options: UploadQueueOptions<File>
  readonly #items: UploadItem<File>[] = []
  readonly #ends = new Map<UploadItem<File>, (() => void)[]>()
  #settings: TransferSettings | undefined
  /** The next status call, when one is due, and the wait before the one after it. */
  #statusTimer: ReturnType<typeof setTimeout> | undefined
  #asking = false
  #wait = 0

  constructor(options: UploadQueueOptions<File>) {
    this.#options = options
  }

  get items(): readonly UploadItem<File>[] {
    return this.#items
  }

  /** The upload of `file`, while it is in the queue. */
  itemOf(file: File): UploadItem<File> | undefined {
    return this.#items.find((item) => item.file === file)
  }

  /** Whether an upload is under way (being prepared, waiting, sending, or processed). */
  get busy(): boolean {
    return this.#items.some((item) => UNDER_WAY.includes(item.state))
  }

  /**
   * Queues `files` and prepares them, `perPreparation` at a time, then sends them as their turns come. A
   * preparation refused fails its uploads (`failure.blame` says which file the refusal named), and the others go
   * on; with `stopAtRefusal`, the refused batch and those after it leave the queue instead, and the refusal is
   * returned with the files of its batch.
   */
  async add(
    files: File[],
    options: { stopAtRefusal?: boolean } = {},
  ): Promise<{ refusal: unknown; batch: File[] } | undefined> {
    const items = files.map((file) => new UploadItem(file))
    this.#items.push(...items)
    this.#changed(items)
    const per = this.#options.perPreparation || PER_PREPARATION
    for (let start = 0; start < items.length; start += per) {
      const batch = items.slice(start, start + per)
      const answer = await this.#requestGrants(batch)
      if ('grants' in answer) this.#granted(batch, answer.grants)
      else if (!options.stopAtRefusal) this.#refused(batch, answer.refusal)
      else {
        for (const item of items.slice(start)) this.#forget(item)
        this.#pump()
        return { refusal: answer.refusal, batch: batch.map((item) => item.file) }
      }
    }
    this.#pump()
    return undefined
  }

  /** Cancels an upload under way: its bytes stop, and the server ends it. */
  async cancel(item: UploadItem<File>): Promise<void> {
    if (!UNDER_WAY.includes(item.state)) return
    this.#set([item], 'cancelled')
    item.controller?.abort()
    if (item.grant) await this.#cancelOnServer([item])
    this.#pump()
  }

  /** Sends a failed or cancelled upload again: a fresh preparation for it alone, after ending its old one. */
  async retry(item: UploadItem<File>): Promise<void> {
    if (item.state !== 'failed' && item.state !== 'cancelled') return
    if (item.grant) await this.#cancelOnServer([item])
    item.grant = undefined
    item.failure = undefined
    this.#set([item], 'preparing')
    const answer = await this.#requestGrants([item])
    if ('refusal' in answer) {
      this.#refused([item], answer.refusal)
      return
    }
    this.#granted([item], answer.grants)
    this.#pump()
  }

  /** Takes an upload out of the queue, cancelling it first if it is under way. */
  remove(item: UploadItem<File>): void {
    if (UNDER_WAY.includes(item.state)) void this.cancel(item)
    this.#forget(item)
  }

  /** Resolves once the upload has ended: done, failed or cancelled. */
  ended(item: UploadItem<File>): Promise<void> {
    if (!UNDER_WAY.includes(item.state)) return Promise.resolve()
    return new Promise((resolve) => this.#ends.set(item, [...(this.#ends.get(item) ?? []), resolve]))
  }

  #forget(item: UploadItem<File>): void {
    const at = this.#items.indexOf(item)
    if (at >= 0) this.#items.splice(at, 1)
  }

  #set(items: UploadItem<File>[], state: UploadState, failure?: UploadFailure): void {
    for (const item of items) {
      item.state = state
      item.failure = failure
    }
    this.#changed(items)
  }

  #changed(items: UploadItem<File>[]): void {
    if (items.length > 0) this.#options.onChange?.(items)
    for (const item of items) {
      if (UNDER_WAY.includes(item.state)) continue
      for (const resolve of this.#ends.get(item) ?? []) resolve()
      this.#ends.delete(item)
    }
  }

  /** The grants of `batch`'s uploads, or the server's refusal (or the failure to reach it). */
  async #requestGrants(batch: UploadItem<File>[]): Promise<{ grants: UploadGrant[] } | { refusal: unknown }> {
    try {
      this.#settings = await this.#options.endpoint.transferSettings()
      const files = batch.map(({ file }) => ({ name: file.name, type: file.type, size: file.size }))
      return { grants: await this.#options.endpoint.prepare(files) }
    } catch (refusal) {
      return { refusal }
    }
  }

  /** Gives the uploads of `batch` their grants; those cancelled or removed meanwhile end on the server. */
  #granted(batch: UploadItem<File>[], grants: UploadGrant[]): void {
    const missing = new CofferError(0, 'upload_failed', 'The server prepared no upload.', '')
    const ready: UploadItem<File>[] = []
    for (const [i, item] of batch.entries()) {
      item.grant = grants[i]
      if (!item.grant) this.#set([item], 'failed', { step: 'prepare', error: missing })
      else if (item.state === 'preparing' && this.#items.includes(item)) ready.push(item)
    }
    const gone = batch.filter((item) => item.grant && !ready.includes(item) && item.state !== 'failed')
    if (gone.length > 0) void this.#cancelOnServer(gone)
    this.#set(ready, 'waiting')
  }

  /** Fails the uploads of a refused preparation, blaming the file the refusal named, if any. */
  #refused(batch: UploadItem<File>[], refusal: unknown): void {
    const blamed = blamedFile(refusal)
    const culprit = blamed === undefined ? undefined : batch[blamed]
    for (const item of batch) {
      if (item.state !== 'preparing') continue
      const blame = culprit === undefined ? undefined : item === culprit ? 'this' : 'another'
      this.#set([item], 'failed', { step: 'prepare', error: refusal, ...(blame ? { blame } : {}) })
    }
  }

  async #cancelOnServer(items: UploadItem<File>[]): Promise<void> {
    const grants = items.flatMap((item) => (item.grant ? [item.grant] : []))
    await this.#options.endpoint.cancel?.(grants).catch(() => undefined)
  }

  /** Starts uploads while fewer than `concurrency` are sending. */
  #pump(): void {
    const concurrency = this.#options.concurrency ?? CONCURRENT_UPLOADS
    let sending = this.#items.filter((item) => item.state === 'uploading').length
    const order = this.#options.newestFirst ? [...this.#items].reverse() : this.#items
    for (const item of order) {
      if (sending >= concurrency) break
      if (item.state !== 'waiting') continue
      sending++
      void this.#send(item)
    }
    if (!this.busy) this.#options.onIdle?.()
  }

  async #send(item: UploadItem<File>): Promise<void> {
    const controller = new AbortController()
    item.controller = controller
    this.#set([item], 'uploading')
    try {
      if (this.#options.renewGrants && !(await this.#freshGrant(item))) return
      item.startedAt = performance.now()
      const settings = this.#settings as TransferSettings
      await sendBytes(item.grant as UploadGrant, await item.file.open(), {
        ...settings,
        signal: controller.signal,
        onProgress: (loaded, total) => {
          if (item.state === 'uploading') this.#options.onProgress?.(item, loaded, total)
        },
      })
      if (item.state !== 'uploading') return
      this.#set([item], 'processing')
      this.#follow()
    } catch (error) {
      if (item.state === 'uploading') this.#set([item], 'failed', { step: 'transfer', error })
    } finally {
      this.#pump()
    }
  }

  /**
   * Makes sure the upload's grant is still good as its turn comes: the server lets a grant go unused for only
   * ten minutes, so one that has waited that long is prepared again (the old one expires by itself). False if
   * the server refused (the upload failed), or if the upload was cancelled meanwhile.
   */
  async #freshGrant(item: UploadItem<File>): Promise<boolean> {
    const grant = item.grant as UploadGrant
    if (Date.parse(grant.expiresAt) - Date.now() > GRANT_MARGIN_MS) return true
    const answer = await this.#requestGrants([item])
    if ('refusal' in answer) {
      if (item.state === 'uploading') this.#set([item], 'failed', { step: 'prepare', error: answer.refusal })
      return false
    }
    item.grant = answer.grants[0]
    if (item.state === 'uploading') return true
    await this.#cancelOnServer([item])
    return false
  }

  /** Asks for the status of the uploads being processed until none is (see FIRST_POLL_MS). */
  #follow(): void {
    if (this.#statusTimer !== undefined || this.#asking) return
    this.#statusTimer = setTimeout(() => {
      this.#statusTimer = undefined
      void this.#askStatus()
    }, this.#wait)
  }

  async #askStatus(): Promise<void> {
    const processing = this.#items.filter((item) => item.state === 'processing')
    if (processing.length === 0) {
      this.#wait = 0
      return
    }
    this.#asking = true
    const complete: UploadItem<File>[] = []
    try {
      const statuses = await this.#options.endpoint.status(
        processing.map((item) => item.grant as UploadGrant),
      )
      for (const [i, item] of processing.entries()) {
        const status = statuses[i]
        if (item.state !== 'processing' || !status) continue
        if (status.status === 'complete') {
          item.fileId = status.result?.id
          complete.push(item)
        } else if (status.status === 'error') {
          this.#set([item], 'failed', { step: 'process', reason: status.error })
        }
      }
    } catch (error) {
      // A page asks again: the server may be restarting.
      if (this.#options.statusFailure === 'fail') {
        const asked = processing.filter((item) => item.state === 'processing')
        this.#set(asked, 'failed', { step: 'status', error })
      }
    }
    if (complete.length > 0) await this.#options.onComplete?.(complete)
    this.#set(
      complete.filter((item) => item.state === 'processing'),
      'done',
    )
    this.#asking = false
    this.#wait = Math.min(LONGEST_POLL_MS, Math.max(FIRST_POLL_MS, this.#wait * 1.5))
    if (this.#items.some((item) => item.state === 'processing')) this.#follow()
    else this.#wait = 0
    if (!this.busy) this.#options.onIdle?.()
  }
}
