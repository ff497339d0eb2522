// Where file bytes live. Drivers (local disk, S3-compatible) implement this one contract and all pass the
// shared suite in test/blob-store.suite.ts, so a service never knows which driver it talks to. Drivers
// translate their backend's native errors (ENOENT, NoSuchKey, ...) into the errors declared here.
import type { Readable } from 'node:stream'

export interface BlobStat {
  /** Length of the blob in bytes. */
  size: number
}

export interface ByteRange {
  /** First byte, inclusive. */
  start: number
  /** Last byte, inclusive. */
  end: number
}

/** Bytes to store: a whole buffer, or a stream of chunks that is never held in memory at once. */
export type BlobSource = Uint8Array | AsyncIterable<Uint8Array> | Readable

/**
 * Keys are `/`-separated segments of lowercase letters, digits, `_` and `-`, e.g. `files/acc_x/fil_y`; see
 * `assertValidKey`. Every method refuses any other key with InvalidBlobKeyError, before touching storage.
 * A key may be a prefix of another (`a/b` and `a/b/c` are two independent blobs).
 */
export interface BlobStore {
  /**
   * Streams `data` into `key` and resolves with the number of bytes stored. The blob appears whole or not
   * at all: readers never see a partial blob, and an existing blob under `key` is replaced only once the new
   * one is complete. If the source fails or is destroyed before it ends, put rejects (with the source's own
   * error when it has one), stores nothing and leaves any previous blob under `key` intact. Concurrent puts
   * to one key leave exactly one of them. On failure the source may be partly consumed or destroyed.
   *
   * With `length`, the source must yield exactly that many bytes, or put rejects with BlobLengthError
   * (sources.ts) and stores nothing; a driver may need it to stream (an S3 PUT must state its length).
   */
  put(key: string, data: BlobSource, length?: number): Promise<BlobStat>
  /**
   * Streams the blob, or the inclusive byte range of it. The stream reads one version of the blob even if
   * it is replaced or deleted meanwhile. The caller must consume or destroy it.
   *
   * The caller clamps the range to the blob (an HTTP layer answers 416 itself): a range must hold integers
   * with 0 <= start <= end < size, so an empty blob has no valid range. Throws BlobNotFoundError when the
   * blob is absent, RangeError for a range outside those bounds.
   */
  get(key: string, range?: ByteRange): Promise<Readable>
  /** The blob's size, or undefined if there is none. */
  stat(key: string): Promise<BlobStat | undefined>
  /** Removes the blob; removing an absent blob is not an error. */
  delete(key: string): Promise<void>
  /**
   * Every blob whose key starts with `prefix` (a key, or `''` for all), in no particular order, with its size
   * and the time it was last written: what the storage reconciler compares with the database. A blob written
   * or removed during the listing may or may not be in it.
   */
  list(prefix: string): AsyncIterable<ListedBlob>
  /**
   * Everything the store holds in its own space (its directory, or S3_PREFIX of its bucket), in no particular
   * order: each blob with its key, as `list('')` gives it, and anything else found there (an object or file
   * that no key names, so that nothing wrote it through this contract) with its name and no key. What the
   * storage check accounts for, so that nothing in the store goes unseen. Neither the driver's own temporary
   * state (`leftovers`) nor anything outside its space is in it.
   */
  inventory(): AsyncIterable<StoredObject>

  // What writes leave when they never finish (a process died in the middle of a put, an upload nobody
  // completed): the driver's own temporary state, outside every key. The storage reconciler removes what has
  // been left alone longer than any upload could still be under way.

  /** Everything unfinished writes and multipart uploads hold, with the last time each was touched. */
  leftovers(): AsyncIterable<Leftover>
  /** Removes a leftover by the id `leftovers` gave it; removing one that is gone is not an error. */
  removeLeftover(id: string): Promise<void>

  // Multipart uploads, in the spirit of S3's (which a driver may map them to): parts of one blob are written
  // separately, in any order, concurrently and from any process sharing the store, then joined in one
  // `completeMultipart`. All state lives in the store, so the process that completes an upload need not be the
  // one that wrote its parts. An upload nobody completes or aborts is left to the caller's own sweeping.

  /** Starts a multipart upload of the blob `key`; the answer names it in every later call. */
  createMultipart(key: string): Promise<MultipartUpload>
  /**
   * Streams part `partNumber` (1 to MAX_PART_NUMBER) of `upload` and resolves once it is durable: a crash of
   * the process or the machine afterwards loses nothing. With `length`, the source must yield exactly that
   * many bytes (drivers may use it to place the part), or the write fails with PartLengthError.
   *
   * A failed write (the source fails, or yields the wrong length) rejects, with the source's own error when
   * it has one, and leaves the upload as it was, including earlier writes of the same part number. Writing a
   * part number again gives the new write an etag of its own; completing with it always works, and never with
   * bytes of another write. An earlier write's etag stays usable, or is refused with InvalidPartError (S3
   * keeps only the last write of a number). MultipartUploadNotFoundError once the upload was completed or
   * aborted.
   */
  writePart(
    upload: MultipartUpload,
    partNumber: number,
    data: BlobSource,
    length?: number,
  ): Promise<WrittenPart>
  /**
   * Every part written to the upload so far (with S3, only the last write of each number), in no particular
   * order; a write still under way is not among them. Callers keep no list of their own: this one survives
   * any crash. MultipartUploadNotFoundError once the upload was completed or aborted.
   */
  listParts(upload: MultipartUpload): Promise<WrittenPart[]>
  /**
   * Joins the listed parts (ascending part numbers, each once, gaps allowed) into the blob `upload.key`, with
   * the guarantees of `put`: whole or not at all, durable, replacing a previous blob only once complete. It
   * resolves with the blob's size and, from a driver that can tell it without reading the blob back over the
   * network (the local disk), its SHA-256 and CRC-32 (the caller, which never sees the parts in order, cannot
   * compute them on the way in); S3's leaves them undefined. The upload is gone. A list naming a part that was
   * not written (or whose write was replaced) fails with InvalidPartError and changes nothing: the upload can be completed with
   * a corrected list. MultipartUploadNotFoundError for an upload already completed or aborted, or completing
   * elsewhere; two completions at once may also both answer the one blob they made (S3's completion is
   * idempotent). A store may refuse parts under a least size but the last (S3: 5 MiB) with InvalidPartError, or
   * a list that leaves out a part that was written (Ceph's gateway does).
   */
  completeMultipart(upload: MultipartUpload, parts: PartRef[]): Promise<MultipartBlob>
  /**
   * Ends the upload and removes everything written for it; aborting an absent upload is not an error. Writes
   * still in flight fail, or leave nothing the store keeps.
   */
  abortMultipart(upload: MultipartUpload): Promise<void>
  /**
   * Optional, for a store whose blobs are files on this machine's disk: a blob's file as a path below the store's
   * root, for a web server that serves the root itself (nginx's X-Accel-Redirect, DOWNLOAD_ACCEL_REDIRECT);
   * undefined when there is no blob.
   */
  relativePath?(key: string): Promise<string | undefined>
  /**
   * Optional, for an object store: a URL that lets anyone holding it GET the blob for `expiresInSeconds`,
   * answered with these Content-Type and Content-Disposition (DOWNLOAD_REDIRECT=presigned).
   */
  presignedGet?(key: string, options: PresignedGetOptions): Promise<string>
}

export interface PresignedGetOptions {
  contentType: string
  contentDisposition: string
  expiresInSeconds: number
}

/** A blob as `list` gives it. */
export interface ListedBlob {
  key: string
  size: number
  /** Epoch ms of its last write. */
  modifiedAt: number
}

/** Something the store holds (see `inventory`). */
export interface StoredObject {
  /** The blob's key; undefined for something no key names. */
  key: string | undefined
  /** Its name in the store, relative to the store's space: the key of a blob. */
  name: string
  size: number
  /** Epoch ms of its last write. */
  modifiedAt: number
}

/** The state of an unfinished write or multipart upload (see `leftovers`). */
export interface Leftover {
  /** The driver's name for it, opaque to callers. */
  id: string
  /** Bytes it holds. */
  size: number
  /** Epoch ms of the last time anything in it was written. */
  modifiedAt: number
}

/** A multipart upload under way: the key its blob will get, and the driver's name for the upload. */
export interface MultipartUpload {
  key: string
  uploadId: string
}

/** One written part, as `completeMultipart` wants it listed. */
export interface PartRef {
  partNumber: number
  /** The driver's name for this write of the part (S3's ETag); opaque to the caller. */
  etag: string
}

export interface WrittenPart extends PartRef {
  size: number
}

export interface MultipartBlob extends BlobStat {
  /** Lowercase hex SHA-256 of the blob's bytes, from a driver that computes it (see `completeMultipart`). */
  sha256: string | undefined
  /** CRC-32 of the blob's bytes, from a driver that computes the SHA-256. */
  crc32: number | undefined
}

/** S3's bound on part numbers. */
export const MAX_PART_NUMBER = 10_000

/**
 * Clients send a file in parts above 5 MiB, as the upload procedure says (docs/uploads.md): S3's smallest part
 * but the last. Every client of the blob stores reads it here: the upload grants, the pages that upload, the
 * capability index and the OpenAPI document.
 */
export const MULTIPART_THRESHOLD_BYTES = 5 * 1024 * 1024

export class BlobNotFoundError extends Error {
  readonly key: string

  constructor(key: string) {
    super(`blob not found: ${key}`)
    this.name = 'BlobNotFoundError'
    this.key = key
  }
}

/**
 * The store could not be used for a reason of its own that may pass: it is down, unreachable, too slow to
 * answer, or failing (S3's 5xx): not a verdict on the key or the bytes. Callers answer 503 and retry; they never
 * take it as a sign that a blob is missing or bad.
 */
export class BlobStoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'BlobStoreUnavailableError'
  }
}

export class MultipartUploadNotFoundError extends Error {
  constructor(uploadId: string) {
    super(
      `multipart upload ${uploadId.slice(0, 80)} does not exist: it was completed, aborted or never created`,
    )
    this.name = 'MultipartUploadNotFoundError'
  }
}

/** `completeMultipart` was given a part that cannot be used. */
export class InvalidPartError extends Error {
  readonly partNumber: number

  constructor(partNumber: number, reason: string) {
    super(`part ${partNumber}: ${reason}`)
    this.name = 'InvalidPartError'
    this.partNumber = partNumber
  }
}

/** A part's source did not yield the length announced for it. */
export class PartLengthError extends Error {
  constructor(partNumber: number, declared: number, got: string) {
    super(`part ${partNumber} was announced as ${declared} bytes but ${got}`)
    this.name = 'PartLengthError'
  }
}

export class InvalidBlobKeyError extends Error {
  constructor(key: unknown) {
    const shown = typeof key === 'string' ? JSON.stringify(key.slice(0, 80)) : typeof key
    super(
      `invalid blob key ${shown}${typeof key === 'string' && key.length > 80 ? '…' : ''}: a key is at most ` +
        `${MAX_KEY_LENGTH} characters of "/"-separated segments, each 1 to ${MAX_SEGMENT_LENGTH} of ` +
        'a-z, 0-9, "_" and "-", starting with a letter or digit',
    )
    this.name = 'InvalidBlobKeyError'
  }
}

/**
 * S3's own bound on object keys is 1024 bytes; this leaves the rest to a driver's prefix (S3_PREFIX, at most
 * 256 characters).
 */
export const MAX_KEY_LENGTH = 768
/** Leaves room for a driver's suffix within the 255-byte file name limit of common filesystems. */
export const MAX_SEGMENT_LENGTH = 200

// No dots at all: `.` and `..` cannot occur, names starting with `.` stay free for a driver's own
// bookkeeping, and a driver may add a dotted suffix no key can produce. Lowercase only, so two keys never
// collide on a case-insensitive filesystem.
const SEGMENT = `[a-z0-9][a-z0-9_-]{0,${MAX_SEGMENT_LENGTH - 1}}`
const KEY = new RegExp(`^${SEGMENT}(?:/${SEGMENT})*$`)

/** Throws InvalidBlobKeyError unless `key` has the shape described on BlobStore. */
export function assertValidKey(key: string): void {
  if (!isValidKey(key)) throw new InvalidBlobKeyError(key)
}

/** Whether `key` has the shape described on BlobStore (`assertValidKey` without the throw). */
export function isValidKey(key: string): boolean {
  return typeof key === 'string' && key.length <= MAX_KEY_LENGTH && KEY.test(key)
}

/** Throws RangeError unless `partNumber` is an integer from 1 to MAX_PART_NUMBER. */
export function assertPartNumber(partNumber: number): void {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PART_NUMBER) {
    throw new RangeError(`part number ${partNumber} is not an integer from 1 to ${MAX_PART_NUMBER}`)
  }
}

/** Throws RangeError unless `range` selects at least one byte of a blob of `size` bytes. */
export function assertRangeWithin(range: ByteRange, size: number): void {
  const { start, end } = range
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || start > end || end >= size) {
    throw new RangeError(
      `byte range ${start}-${end} is not within a blob of ${size} bytes: it needs 0 <= start <= end < size`,
    )
  }
}
