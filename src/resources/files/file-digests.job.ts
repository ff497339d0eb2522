// The SHA-256 and CRC-32 of files whose bytes never passed in order through one process on their way in: a
// multipart upload that S3 joined (its parts arrive in any order, at any process, and S3 cannot hash them as
// one). Reading a large object back before the upload may complete would double its time; instead the file is
// usable at once and this job computes both in one read of its blob, afterwards. Until then its ETag is its id
// (files/download.ts) and a zip of it computes the CRC as it streams (files/zip/zip-stream.ts). Recorded in the
// transaction that completes the upload, so no crash loses one; runs in one process at a time.
import { BlobNotFoundError, type BlobStore } from '../../platform/blob/blob-store.ts'
import { Digester } from '../../platform/blob/content-digest.ts'
import type { Exclusively, Transaction } from '../../platform/db/database.ts'
import { Periodic } from '../../platform/jobs/periodic.ts'
import type { FilesRepository } from './files.repository.ts'

/** How often the job looks for files recorded by processes that died, or that another process was running. */
const SWEEP_INTERVAL_MS = 30_000
const BATCH = 10

export interface DigestsLog {
  error(details: object, message: string): void
}

export class FileDigestsService {
  readonly #files: FilesRepository
  readonly #blobs: BlobStore
  readonly #schedule: Periodic
  #stopped = true
  #log: DigestsLog = { error: () => {} }

  constructor(deps: { files: FilesRepository; blobs: BlobStore; exclusively: Exclusively }) {
    this.#files = deps.files
    this.#blobs = deps.blobs
    this.#schedule = new Periodic(() => this.#computeAll(), {
      intervalMs: SWEEP_INTERVAL_MS,
      failure: 'computing the digests of files failed',
      exclusive: { lock: 'file-digests', exclusively: deps.exclusively },
    })
  }

  /** Records that a file's digests are to be computed, in the transaction that completes it. */
  record(trx: Transaction, fileId: string): Promise<void> {
    return this.#files.recordPendingDigests(trx, fileId)
  }

  /** Computes what is recorded, soon (after the commit that recorded it). */
  kick(): void {
    this.#schedule.kick()
  }

  /** Runs now (what earlier processes left), then every SWEEP_INTERVAL_MS. */
  start(log: DigestsLog): void {
    this.#log = log
    this.#stopped = false
    this.#schedule.start(log)
  }

  /** Stops, once the file being read is done. */
  async stop(): Promise<void> {
    this.#stopped = true
    await this.#schedule.stop()
  }

  async #computeAll(): Promise<void> {
    while (!this.#stopped) {
      const files = await this.#files.pendingDigests(BATCH)
      if (files.length === 0) return
      for (const file of files) {
        if (this.#stopped) return
        await this.#files.settleDigests(file.id, await this.#digests(file))
      }
    }
  }

  /** The digests of the file's bytes, or undefined when its blob is gone (the storage check reports that). */
  async #digests(file: { id: string; blobKey: string; size: number }) {
    const digester = new Digester()
    try {
      // Exactly the file's bytes, as downloads and zips send them.
      const range = file.size > 0 ? { start: 0, end: file.size - 1 } : undefined
      for await (const chunk of await this.#blobs.get(file.blobKey, range)) {
        digester.update(chunk as Buffer)
      }
    } catch (error) {
      if (!(error instanceof BlobNotFoundError)) throw error
      this.#log.error({ fileId: file.id, blobKey: file.blobKey }, 'the blob of a file is missing (digests)')
      return undefined
    }
    return digester.digest()
  }
}
