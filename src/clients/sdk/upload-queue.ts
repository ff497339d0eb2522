// The one upload queue every client uses: the owner's files page, a file request's page, the SDK's
// `files.upload` (upload.ts). Files are prepared in batches through an endpoint (upload-endpoints.ts: the
// owner's session, the API, a request's public API), their bytes go to the blob storage with the transfer
// (transfer.ts) a few at a time, and the uploads are followed through the status call until the server has
// made each file. An upload can be cancelled, and sent again after it failed or was cancelled. The queue holds
// each upload's state; whoever shows it (a page's rows, a promise) renders from the changes it reports.
// An upload can resume: a file queued with the grant of an upload that stopped (`saved`, kept by the caller
// through the hooks onPrepared, onStored and onFinished; see resume.ts) is not prepared again: its status says
// which parts the server holds, and only the others are sent. A retry after a failed transfer resumes the same.
import { CofferError } from './errors.ts'
import { type MultipartState, sendBytes, type UploadGrant } from './transfer.ts'

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
  /**
   * The upload of this file that stopped before, to go on with rather than prepare anew: its grant, and the
   * multipart upload its parts went to (the status's list of parts prevails). Only a Blob body resumes.
   */
  saved?: SavedUpload
}

/** What a caller keeps of an upload to resume it: its grant, and its multipart upload if one was created. */
export interface SavedUpload {
  grant: UploadGrant
  uploadId?: string
  parts?: MultipartState['parts']
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
  /** While pending: uploading until the bytes are stored, then processing. */
  phase?: 'uploading' | 'processing'
  /** While uploading: the multipart upload that holds the most bytes, with the parts the server keeps of it. */
  multipart?: MultipartState
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
  /** The multipart upload its bytes go to, and the parts stored, as far as the queue knows. */
  multipart: MultipartState | undefined
  /** The bytes the server already held when its transfer began (a resumed upload), else 0. */
  resumedBytes = 0
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
  /** Called once uploads have a new grant: what a caller keeps to resume them. */
  onPrepared?(items: UploadItem<File>[]): void
  /** Called as an upload's multipart upload is created and as each part is stored (`item.multipart`). */
  onStored?(item: UploadItem<File>): void
  /** Called as an upload goes on from the parts the server holds (`item.multipart`, `item.resumedBytes`). */
  onResume?(item: UploadItem<File>): void
  /**
   * Called once an upload can no longer be resumed: done, cancelled, or failed where resuming cannot help
   * (refused, or the server could not make the file). What a caller kept of it can go.
   */
  onFinished?(item: UploadItem<File>): void
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
  /** Uploads stopped to be resumed later (`cancel` with `resumable`): what was kept of them stays. */
  readonly #paused = new WeakSet<UploadItem<File>>()

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
    const anew = await this.#resumeSaved(items.filter((item) => item.file.saved))
    const unprepared = items.filter((item) => !item.file.saved || anew.includes(item))
    const per = this.#options.perPreparation || PER_PREPARATION
    for (let start = 0; start < unprepared.length; start += per) {
      const batch = unprepared.slice(start, start + per)
      const answer = await this.#requestGrants(batch)
      if ('grants' in answer) this.#granted(batch, answer.grants)
      else if (!options.stopAtRefusal) this.#refused(batch, answer.refusal)
      else {
        for (const item of unprepared.slice(start)) this.#forget(item)
        this.#pump()
        return { refusal: answer.refusal, batch: batch.map((item) => item.file) }
      }
    }
    this.#pump()
    return undefined
  }

  /**
   * Cancels an upload under way: its bytes stop, and the server ends it. With `resumable`, the server keeps it
   * instead, and `onFinished` is not called: what the caller kept resumes it later (a program interrupted).
   */
  async cancel(item: UploadItem<File>, options: { resumable?: boolean } = {}): Promise<void> {
    if (!UNDER_WAY.includes(item.state)) return
    if (options.resumable) this.#paused.add(item)
    this.#set([item], 'cancelled')
    item.controller?.abort()
    if (item.grant && !options.resumable) await this.#cancelOnServer([item])
    this.#pump()
  }

  /**
   * Sends a failed or cancelled upload again. One whose transfer failed (or whose status could not be asked)
   * keeps its grant and resumes: only the parts the server does not hold go. Any other gets a fresh preparation
   * for it alone, after its old one is ended.
   */
  async retry(item: UploadItem<File>): Promise<void> {
    if (item.state !== 'failed' && item.state !== 'cancelled') return
    const step = item.failure?.step
    const resumable =
      item.grant !== undefined && item.state === 'failed' && (step === 'transfer' || step === 'status')
    this.#paused.delete(item)
    item.failure = undefined
    if (resumable) {
      this.#set([item], 'preparing')
      const anew = await this.#resumeFromStatus([item])
      this.#pump()
      if (anew.length === 0) return
    } else if (item.grant) await this.#cancelOnServer([item])
    item.grant = undefined
    item.multipart = undefined
    if (!resumable) this.#set([item], 'preparing')
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
      if (this.#finished(item)) this.#options.onFinished?.(item)
      for (const resolve of this.#ends.get(item) ?? []) resolve()
      this.#ends.delete(item)
    }
  }

  /** Whether an upload that just ended can no longer be resumed (see `onFinished`). */
  #finished(item: UploadItem<File>): boolean {
    if (this.#paused.has(item)) return false
    if (item.state === 'done' || item.state === 'cancelled') return true
    return item.state === 'failed' && (item.failure?.step === 'prepare' || item.failure?.step === 'process')
  }

  /**
   * Takes up the uploads of `items` where they stopped (their files' `saved`): their grants, and what their
   * status says. Resolves with those to prepare anew (the grant expired, or about to).
   */
  async #resumeSaved(items: UploadItem<File>[]): Promise<UploadItem<File>[]> {
    const live: UploadItem<File>[] = []
    const expired: UploadItem<File>[] = []
    for (const item of items) {
      const saved = item.file.saved as SavedUpload
      if (Date.parse(saved.grant.expiresAt) - Date.now() <= GRANT_MARGIN_MS) expired.push(item)
      else {
        item.grant = saved.grant
        item.multipart = saved.uploadId ? { uploadId: saved.uploadId, parts: saved.parts ?? [] } : undefined
        live.push(item)
      }
    }
    return [...expired, ...(await this.#resumeFromStatus(live))]
  }

  /**
   * Asks the status of uploads that have a grant and stopped: one still uploading waits its turn to send the
   * parts the server lacks; one being processed is followed; one complete is done. Resolves with those to
   * prepare anew (ended in error, or unknown to the server), their grants dropped. A status that cannot be
   * asked (the server away) fails the upload at that step; a retry asks again.
   */
  async #resumeFromStatus(items: UploadItem<File>[]): Promise<UploadItem<File>[]> {
    const anew: UploadItem<File>[] = []
    await Promise.all(
      items.map(async (item) => {
        let status: UploadStatus | undefined
        try {
          status = (await this.#options.endpoint.status([item.grant as UploadGrant]))[0]
        } catch (error) {
          const refused = error instanceof CofferError && error.status >= 400 && error.status < 500
          if (!refused) {
            if (item.state === 'preparing') this.#set([item], 'failed', { step: 'status', error })
            return
          }
        }
        if (item.state !== 'preparing') return
        if (await this.#resumedAs(item, status)) return
        item.grant = undefined
        item.multipart = undefined
        anew.push(item)
      }),
    )
    if (this.#items.some((item) => item.state === 'processing')) this.#follow()
    return anew
  }

  /** Puts a stopped upload where `status` says it is; false when it must be prepared anew. */
  async #resumedAs(item: UploadItem<File>, status: UploadStatus | undefined): Promise<boolean> {
    if (status?.status === 'pending' && status.phase === 'processing') {
      this.#set([item], 'processing')
      return true
    }
    if (status?.status === 'pending') {
      item.multipart = status.multipart ?? (item.multipart && { ...item.multipart, parts: [] })
      this.#set([item], 'waiting')
      return true
    }
    if (status?.status !== 'complete') return false
    item.fileId = status.result?.id
    await this.#options.onComplete?.([item])
    if (item.state === 'preparing') this.#set([item], 'done')
    return true
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
    for (const item of ready) item.multipart = undefined
    if (ready.length > 0) this.#options.onPrepared?.(ready)
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
      this.#settings ??= await this.#options.endpoint.transferSettings()
      const settings = this.#settings
      const resumeFrom = item.multipart
      item.resumedBytes = (resumeFrom?.parts ?? []).reduce((sum, part) => sum + part.size, 0)
      if (resumeFrom && item.resumedBytes > 0) this.#options.onResume?.(item)
      await sendBytes(item.grant as UploadGrant, await item.file.open(), {
        ...settings,
        signal: controller.signal,
        ...(resumeFrom ? { resumeFrom } : {}),
        onStored: (state) => {
          item.multipart = state
          this.#options.onStored?.(item)
        },
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
    item.multipart = undefined
    if (item.state === 'uploading') {
      this.#options.onPrepared?.([item])
      return true
    }
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
