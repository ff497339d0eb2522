// The blobs an upload writes before its intent adopts one (upload_blobs): a final blob of a single PUT, or a
// multipart upload with its parts. The blob endpoint stages them as it writes; processing and its sweep clear
// what an ended intent left, and finish a multipart completion that failed half-way.
import { fileIdOfBlobKey } from '../../platform/blob/blob-keys.ts'
import {
  type BlobStore,
  MultipartUploadNotFoundError,
  type WrittenPart,
} from '../../platform/blob/blob-store.ts'
import type { StagedBlob, UploadsRepository } from './uploads.repository.ts'

/**
 * A multipart upload still open in the store, as a client resumes it: the id the client knows it by, and the
 * parts stored, one per number (the largest write of each), in order.
 */
export interface StoredUpload {
  uploadId: string
  parts: WrittenPart[]
}

export class StagedBlobs {
  readonly #uploads: UploadsRepository
  readonly #blobs: BlobStore

  constructor(deps: { uploads: UploadsRepository; blobs: BlobStore }) {
    this.#uploads = deps.uploads
    this.#blobs = deps.blobs
  }

  /**
   * The intent's multipart upload that holds the most bytes (the newest of equals), with its parts; undefined
   * when it has none open. A client that lost its upload (a killed program, a closed tab) sends only the parts
   * missing from it, and completes it: the parts stay in the store for the grant's life.
   */
  async resumable(intentId: string): Promise<StoredUpload | undefined> {
    let best: (StoredUpload & { bytes: number }) | undefined
    for (const staged of await this.#uploads.stagedBlobs(intentId)) {
      if (staged.storeUploadId === null || staged.uploadId === null || staged.size !== null) continue
      let written: WrittenPart[]
      try {
        written = await this.#blobs.listParts({ key: staged.key, uploadId: staged.storeUploadId })
      } catch (error) {
        // Joined or aborted meanwhile: nothing to resume there.
        if (error instanceof MultipartUploadNotFoundError) continue
        throw error
      }
      const largest = new Map<number, WrittenPart>()
      for (const part of written) {
        if (part.size >= (largest.get(part.partNumber)?.size ?? 0)) largest.set(part.partNumber, part)
      }
      const parts = [...largest.values()].sort((a, b) => a.partNumber - b.partNumber)
      const bytes = parts.reduce((sum, part) => sum + part.size, 0)
      if (!best || bytes >= best.bytes) best = { uploadId: staged.uploadId, parts, bytes }
    }
    return best && { uploadId: best.uploadId, parts: best.parts }
  }

  /**
   * Removes everything staged for an intent: multipart uploads with the parts written to them, and final
   * blobs that were never adopted.
   */
  async discardAll(intentId: string): Promise<void> {
    const staged = await this.#uploads.stagedBlobs(intentId)
    for (const blob of staged) {
      if (blob.storeUploadId !== null) {
        await this.#blobs.abortMultipart({ key: blob.key, uploadId: blob.storeUploadId })
      }
    }
    await this.discard(staged.map((b) => b.key))
  }

  /**
   * Deletes blobs that are still staged, then forgets them. A blob an intent adopted is no longer staged, so a
   * failure reported after its adoption can never delete a file's bytes.
   */
  async discard(keys: string[]): Promise<void> {
    const staged = await this.#uploads.stillStaged(keys)
    for (const key of staged) await this.#blobs.delete(key)
    await this.#uploads.unstage(staged)
  }

  /**
   * Finishes a completion that failed half-way (the sweep's, for `UploadsRepository.stalledCompletions`): when
   * the store joined the parts, records the blob and has the intent adopt it, as the completion would have.
   * Resolves with whether the intent adopted it; false while the upload is still open in the store (its parts
   * were never joined: the client may complete it yet, or the grant's expiry ends it).
   */
  async finishStalledCompletion(staged: StagedBlob): Promise<boolean> {
    if (staged.storeUploadId === null) return false
    // Its size is recorded once the join is known (the blob's digests are computed afterwards, as for S3's).
    if (staged.size === null) {
      try {
        await this.#blobs.listParts({ key: staged.key, uploadId: staged.storeUploadId })
        return false
      } catch (error) {
        if (!(error instanceof MultipartUploadNotFoundError)) throw error
      }
      const joined = await this.#blobs.stat(staged.key)
      if (!joined) return false
      const stored = { size: joined.size, sha256: null, crc32: null }
      if (!(await this.#uploads.staged(staged.key, staged.intentId, stored))) return false
    }
    return this.#uploads.adoptStoredBlob(staged.intentId, staged.key, fileIdOfBlobKey(staged.key))
  }
}
