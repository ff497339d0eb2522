// Turns a stored blob into a file: checks its size against the declaration, detects its type from its
// bytes, renders a preview for images, creates the File and completes the intent. All state lives in the
// database: a process takes an intent with a lease (renewed while it works), and a periodic sweep resumes
// intents whose lease ran out (a process died) and ends uploads whose grant expired, so any number of
// processes share the work and a restart loses none of it.
import { Readable } from 'node:stream'
import { blobKeyOf, previewKeyOf } from '../../platform/blob/blob-keys.ts'
import type { BlobStore } from '../../platform/blob/blob-store.ts'
import type { Transactor } from '../../platform/db/database.ts'
import { AppError } from '../../platform/errors.ts'
import { faultPoint } from '../../platform/fault-points.ts'
import { LeasedWorker } from '../../platform/jobs/leased-worker.ts'
import { unavailableDependency } from '../../platform/unavailable-dependencies.ts'
import type { FileDigestsService } from '../files/file-digests.job.ts'
import type { FilePreview, FilesRepository } from '../files/files.repository.ts'
import type { FilesService } from '../files/files.service.ts'
import { PREVIEW_MAX_INPUT_BYTES, PREVIEW_TYPE, renderPreview } from './previews.ts'
import { chooseContentType, detectType, PREVIEWABLE, SNIFF_BYTES } from './sniff.ts'
import type { StagedBlobs } from './staged-blobs.ts'
import type { IntentRow, UploadsRepository } from './uploads.repository.ts'

// A dead process's work is taken over once its lease has run out and a sweep passes: within LEASE_MS +
// SWEEP_INTERVAL_MS (25 s) in the scale-out mode. The embedded mode, where one process owns the database,
// takes over at once at start (jobs/leased-worker.ts).
export const LEASE_MS = 15_000
export const SWEEP_INTERVAL_MS = 10_000
const SWEEP_BATCH = 100
/**
 * How long after a multipart completion began the sweep looks at it, if it is still unfinished: well past the
 * retries a client makes of a completion that failed (the @vercel/blob client's come after 1, 2, 4, 8… s), so
 * that the sweep finishes only those the client gave up on.
 */
export const STALLED_COMPLETION_MS = 60_000

export const EXPIRED_MESSAGE = 'The upload grant expired before the file was stored.'
const FAULT_MESSAGE = 'The file could not be processed because of a server fault. Upload it again.'

/** A failure the uploader can act on; its message becomes the intent's `error`. */
class Rejected extends Error {}

/**
 * Whether a failure of processing is a dependency's that may pass (the database or the blob store down, a
 * transaction that lost a race): the upload is then left to be taken up again once its lease runs out, with
 * its bytes, rather than failed.
 */
const isTransient = (error: unknown) => unavailableDependency(error) !== undefined

export interface Log {
  error(details: object, message: string): void
  warn(details: object, message: string): void
}

/** An upload of a file request's page whose bytes are stored and checked. */
export interface ReceivedUpload {
  requestId: string
  submitterName: string | null
  submitterEmail: string | null
  message: string | null
  /** The sending the upload was prepared in, with the other files sent at once. */
  sendingId: string | null
  /** The type the upload was prepared with, which the request's list accepted then. */
  declaredType: string
  /** The File to record: the id its blob was stored under, and what processing found. */
  file: {
    id: string
    name: string
    contentType: string
    size: number
    blobKey: string
    sha256: string | null
  }
}

/**
 * Records the File and Submission of an upload prepared on a file request's page (SubmissionsService, of
 * requests/, which wiring.ts hands over); a refusal is an AppError, the upload's error.
 */
export interface SubmissionReceiver {
  receive(upload: ReceivedUpload): Promise<void>
}

export interface ProcessorDeps {
  /**
   * Whether this process is the only one that processes uploads (the embedded mode, on SQLite): at start, no
   * lease can then belong to a live process, so it takes back every one at once instead of waiting for them
   * to run out.
   */
  soleProcessor: boolean
  transaction: Transactor
  uploads: UploadsRepository
  files: FilesRepository
  filesService: FilesService
  /** Records the File and Submission of an upload prepared on a file request's page. */
  submissions: SubmissionReceiver
  staged: StagedBlobs
  blobs: BlobStore
  /** Computes the digests of a file whose blob came without them (an S3 multipart upload), afterwards. */
  digests: FileDigestsService
}

export class UploadProcessor {
  readonly #transaction: Transactor
  readonly #uploads: UploadsRepository
  readonly #files: FilesRepository
  readonly #filesService: FilesService
  readonly #submissions: SubmissionReceiver
  readonly #staged: StagedBlobs
  readonly #blobs: BlobStore
  readonly #digests: FileDigestsService
  readonly #running = new Map<string, Promise<void>>()
  readonly #schedule: LeasedWorker
  #stopped = false
  #log: Log | undefined

  constructor(deps: ProcessorDeps) {
    this.#transaction = deps.transaction
    this.#uploads = deps.uploads
    this.#files = deps.files
    this.#filesService = deps.filesService
    this.#submissions = deps.submissions
    this.#staged = deps.staged
    this.#blobs = deps.blobs
    this.#digests = deps.digests
    this.#schedule = new LeasedWorker(() => this.#sweepOnce(), {
      intervalMs: SWEEP_INTERVAL_MS,
      soleProcess: deps.soleProcessor,
      releaseLeases: () => this.#uploads.releaseLeases(),
      what: 'uploads',
    })
  }

  /** Resumes what earlier processes left, then keeps sweeping. */
  start(log: Log): void {
    this.#log = log
    this.#stopped = false
    this.#schedule.start(log)
  }

  /** Stops sweeping and waits for the work under way, so nothing touches the database after it. */
  async stop(): Promise<void> {
    this.#stopped = true
    await this.#schedule.stop()
    await Promise.allSettled(this.#running.values())
  }

  /** Processes an intent now, unless this process is already at it; resolves when it is done. */
  kick(intentId: string): Promise<void> {
    const running = this.#running.get(intentId)
    if (running) return running
    // A process that is stopping takes no new work; the sweep of a live one will.
    if (this.#stopped) return Promise.resolve()
    const work = this.#process(intentId).finally(() => this.#running.delete(intentId))
    this.#running.set(intentId, work)
    return work
  }

  /** One pass over what needs attention; passes never overlap. */
  sweep(): Promise<void> {
    return this.#schedule.pass()
  }

  async #sweepOnce(): Promise<void> {
    try {
      const now = Date.now()
      for (const id of await this.#uploads.expiredUploading(now, SWEEP_BATCH)) {
        if (this.#stopped) return
        await this.expire(id)
      }
      for (const id of await this.#uploads.unleasedProcessing(now, SWEEP_BATCH)) {
        if (this.#stopped) return
        void this.kick(id)
      }
      for (const id of await this.#uploads.leftoverIntents(SWEEP_BATCH)) {
        if (this.#stopped) return
        await this.#staged.discardAll(id)
      }
      for (const staged of await this.#uploads.stalledCompletions(now - STALLED_COMPLETION_MS, SWEEP_BATCH)) {
        if (this.#stopped) return
        if (await this.#staged.finishStalledCompletion(staged)) {
          this.#log?.warn(
            { intentId: staged.intentId },
            'finished a multipart upload whose completion failed after the store had joined its parts',
          )
          void this.kick(staged.intentId)
        }
      }
    } catch (error) {
      this.#log?.error({ err: error }, 'upload sweep failed')
    }
  }

  /** Ends an upload whose grant expired, and removes what it had received. */
  expire(intentId: string): Promise<void> {
    return this.end(intentId, EXPIRED_MESSAGE)
  }

  /** Ends an upload that has not stored its file yet with `message`, and removes what it had received. */
  async end(intentId: string, message: string): Promise<void> {
    if (await this.#uploads.fail(intentId, 'uploading', message)) {
      await this.#staged.discardAll(intentId)
    }
  }

  /** Never rejects: a failure is logged, and the lease running out lets a later sweep try again. */
  async #process(intentId: string): Promise<void> {
    let renew: NodeJS.Timeout | undefined
    try {
      if (!(await this.#uploads.lease(intentId, LEASE_MS))) return
      renew = setInterval(() => {
        this.#uploads.renewLease(intentId, LEASE_MS).catch((error: unknown) => {
          this.#log?.error({ err: error, intentId }, 'could not renew an upload processing lease')
        })
      }, LEASE_MS / 3)
      renew.unref()
      const intent = await this.#uploads.intent(intentId)
      if (intent?.state === 'processing' && intent.file_id !== null) await this.#run(intent, intent.file_id)
    } catch (error) {
      if (isTransient(error)) {
        this.#log?.warn(
          { error: (error as Error).message, intentId },
          'upload processing stopped by an unavailable dependency; it resumes once its lease runs out',
        )
      } else {
        this.#log?.error({ err: error, intentId }, 'upload processing failed')
      }
    } finally {
      clearInterval(renew)
    }
  }

  async #run(intent: IntentRow, fileId: string): Promise<void> {
    const key = blobKeyOf(intent.account_id, fileId)
    const previewKey = previewKeyOf(intent.account_id, fileId)
    // A process that died after creating the file left only the completion to do.
    let created = await this.#files.exists(fileId)
    try {
      const stat = await this.#blobs.stat(key)
      if (!stat) throw new Error(`the stored blob ${key} is missing`)
      if (stat.size !== intent.size) {
        throw new Rejected(
          `The uploaded file has ${stat.size} bytes, but ${intent.size} were declared. Prepare the upload again with the right size.`,
        )
      }
      const detected = await detectType(await this.#head(key, stat.size))
      const contentType = chooseContentType(intent.content_type, detected)
      // The blob endpoint computed both digests as the bytes went by. A blob stored without them (S3 joined its
      // parts) is not read whole here either: the file is usable at once, and both follow
      // (files/file-digests.job.ts). So do those of an intent adopted before the CRC was kept (migration 0028).
      const { crc32 } = intent

      let preview: FilePreview | undefined
      if (detected !== undefined && PREVIEWABLE.has(detected) && stat.size <= PREVIEW_MAX_INPUT_BYTES) {
        const rendered = await renderPreview(await this.#blobs.get(key))
        if (rendered) {
          await this.#blobs.put(previewKey, Readable.from([rendered.data]))
          const { width, height, data } = rendered
          preview = {
            fileId,
            blobKey: previewKey,
            contentType: PREVIEW_TYPE,
            width,
            height,
            size: data.length,
          }
        }
      }

      if (!created) {
        await this.#createFile(intent, fileId, key, contentType)
        created = true
        faultPoint('file-created')
      }
      // The preview and the completion together, after the file exists: a crash before this leaves the
      // intent to be resumed and finished.
      await this.#transaction(async (trx) => {
        if (preview) await this.#files.insertPreview(trx, preview)
        if (crc32 === null) await this.#digests.record(trx, fileId)
        else await this.#files.setCrc32(trx, fileId, crc32)
        await this.#uploads.markComplete(trx, intent.id)
      })
      if (crc32 === null) this.#digests.kick()
    } catch (error) {
      // Once the file exists, its bytes are its own: leave the intent to be resumed rather than undo it. So too
      // when a dependency failed (the database, the blob store): nothing was said about the file, whose bytes
      // stay for the next attempt.
      if (created || isTransient(error)) throw error
      // A refusal of the domain (a file request that was deleted, say) is the uploader's to read.
      const rejected = error instanceof Rejected || (error instanceof AppError && error.status < 500)
      if (!rejected) this.#log?.error({ err: error, intentId: intent.id }, 'upload failed')
      const message = rejected ? (error as Error).message : FAULT_MESSAGE
      // Removed before the intent says error, so a client that sees the error finds nothing left behind.
      await this.#blobs.delete(previewKey)
      await this.#blobs.delete(key)
      await this.#uploads.fail(intent.id, 'processing', message)
    }
  }

  async #head(key: string, size: number): Promise<Buffer> {
    if (size === 0) return Buffer.alloc(0)
    const chunks: Buffer[] = []
    for await (const chunk of await this.#blobs.get(key, {
      start: 0,
      end: Math.min(size, SNIFF_BYTES) - 1,
    })) {
      chunks.push(chunk as Buffer)
    }
    return Buffer.concat(chunks)
  }

  async #createFile(intent: IntentRow, fileId: string, key: string, contentType: string): Promise<void> {
    const file = {
      id: fileId,
      accountId: intent.account_id,
      name: intent.name,
      contentType,
      size: intent.size,
      blobKey: key,
      sha256: intent.sha256,
    }
    if (intent.request_id !== null) {
      await this.#submissions.receive({
        requestId: intent.request_id,
        submitterName: intent.submitter_name,
        submitterEmail: intent.submitter_email,
        message: intent.submitter_message,
        sendingId: intent.sending_id,
        declaredType: intent.content_type,
        file,
      })
      return
    }
    try {
      await this.#filesService.create({ ...file, folderId: intent.folder_id })
    } catch (error) {
      // The folder was deleted while the file uploaded: like the folder's other files, it goes to root.
      if (!(error instanceof AppError && error.code === 'not_found') || intent.folder_id === null) throw error
      await this.#filesService.create({ ...file, folderId: null })
    }
  }
}
