// BlobStore on an S3-compatible object store (AWS S3, Ceph's RADOS Gateway, MinIO, R2...). A blob is the object
// `<prefix><key>`; the store's multipart uploads are S3's own, so parts written through any process of a fleet
// are completed by any other, and nothing of a write ever touches the local disk.
//
// What S3 gives and the contract needs: a PUT and a CompleteMultipartUpload make their object appear whole or
// not at all, and a GET reads one version even while the key is overwritten. What S3 lacks, done here:
// - A stream of unknown length cannot be PUT: it goes through a multipart upload of its own (lib-storage's
//   Upload), aborted if the stream fails.
// - A range past the end of an object is answered short, not refused: the answer's Content-Range says so, and
//   the read is refused with a RangeError as the contract wants.
// - CompleteMultipartUpload neither takes an empty list nor gives the blob's SHA-256: an upload without parts
//   is aborted and an empty object put in its place, and the blob is read back once to hash it (the caller
//   never sees the parts in order).
// - Every part but the last must hold at least 5 MiB (S3's rule, and Vercel Blob's); a list breaking it is an
//   InvalidPartError, checked against ListParts before completing, which also names a part that was not written.
//
// Checksums: the SDK's default (a CRC32 of every request body, sent as a trailer) makes streamed PUTs fail on
// Ceph (MissingContentLength) and is refused by other servers; only what the API requires is computed.
import type { Readable } from 'node:stream'
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  type ListPartsCommandOutput,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types'
import {
  assertPartNumber,
  assertRangeWithin,
  assertValidKey,
  BlobNotFoundError,
  type BlobSource,
  type BlobStat,
  type BlobStore,
  BlobStoreUnavailableError,
  type ByteRange,
  InvalidPartError,
  isValidKey,
  type Leftover,
  type ListedBlob,
  type MultipartBlob,
  type MultipartUpload,
  MultipartUploadNotFoundError,
  PartLengthError,
  type PartRef,
  type PresignedGetOptions,
  type StoredObject,
  type WrittenPart,
} from './blob-store.ts'
import { collect, type Measured, measured, readableOf, withHeldErrors } from './sources.ts'

/** S3's smallest part, but for the last one of an upload. */
export const S3_MIN_PART_BYTES = 5 * 1024 * 1024
/** A part whose length is not announced is held in memory to learn it (UploadPart needs it): up to this. */
const UNANNOUNCED_PART_MAX_BYTES = 64 * 1024 * 1024
/** Parts of the multipart uploads that carry streams of unknown length, and how many go at once. */
const STREAM_PART_BYTES = S3_MIN_PART_BYTES
const STREAM_PARTS_AT_ONCE = 2

export interface S3BlobStoreOptions {
  bucket: string
  /** `''`, or segments ending with `/`. */
  prefix: string
  forcePathStyle: boolean
  /** How long a request may go without a byte either way (S3_TIMEOUT_SECONDS). */
  timeoutMs: number
}

/**
 * Attempts of a request that fails on a fault of the store (a timeout, a refused connection, a 5xx): the
 * first and one more, so that a blip passes unseen while a store that is down answers within two timeouts.
 */
const MAX_ATTEMPTS = 2
/** The longest wait for a connection: one to a reachable store takes milliseconds, even across a region. */
const CONNECT_TIMEOUT_MS = 5000

type ListedPart = WrittenPart & { modifiedAt?: number }

export class S3BlobStore implements BlobStore {
  readonly #s3: S3Client
  readonly #bucket: string
  readonly #prefix: string

  private constructor(s3: S3Client, options: S3BlobStoreOptions) {
    s3.middlewareStack.add(namedErrors, { step: 'initialize', name: 'cofferNamedErrors', override: true })
    this.#s3 = s3
    this.#bucket = options.bucket
    this.#prefix = options.prefix
  }

  /**
   * A client configured as the AWS SDK configures itself (environment, profiles, instance roles), and a first
   * request to the bucket: a bucket that is missing or unreadable fails here, naming the settings.
   */
  static async open(options: S3BlobStoreOptions, client?: S3Client): Promise<S3BlobStore> {
    const s3 = client ?? (await defaultClient(options))
    const store = new S3BlobStore(s3, options)
    await store.check()
    return store
  }

  /** Throws BlobStoreUnavailableError unless the bucket answers (a missing or forbidden bucket included). */
  async check(): Promise<void> {
    try {
      await this.#s3.send(new HeadBucketCommand({ Bucket: this.#bucket }))
    } catch (error) {
      const status = statusOf(error)
      const why =
        status === 404
          ? 'does not exist'
          : status === 403
            ? 'is not readable with these credentials'
            : `cannot be reached (${describe(error)})`
      throw new BlobStoreUnavailableError(
        `S3_BUCKET "${this.#bucket}" ${why}; check S3_BUCKET, the endpoint (AWS_ENDPOINT_URL_S3) and the credentials`,
        { cause: error },
      )
    }
  }

  close(): void {
    this.#s3.destroy()
  }

  #objectKey(key: string): string {
    assertValidKey(key)
    return this.#prefix + key
  }

  async put(key: string, data: BlobSource, length?: number): Promise<BlobStat> {
    const Key = this.#objectKey(key)
    return withHeldErrors(data, () => this.#put(Key, data, length))
  }

  async #put(Key: string, data: BlobSource, length?: number): Promise<BlobStat> {
    if (data instanceof Uint8Array && (length === undefined || length === data.length)) {
      await this.#s3.send(
        new PutObjectCommand({ Bucket: this.#bucket, Key, Body: data, ContentLength: data.length }),
      )
      return { size: data.length }
    }
    const counted = measured(data, length)
    if (length !== undefined) {
      const { body, abortSignal } = requestBody(counted)
      try {
        await this.#s3.send(
          new PutObjectCommand({ Bucket: this.#bucket, Key, Body: body, ContentLength: length }),
          { abortSignal },
        )
      } catch (error) {
        throw counted.failure() ?? error
      }
      return { size: counted.size() }
    }
    const upload = new Upload({
      client: this.#s3,
      params: { Bucket: this.#bucket, Key, Body: readableOf(counted.chunks) },
      partSize: STREAM_PART_BYTES,
      queueSize: STREAM_PARTS_AT_ONCE,
      leavePartsOnError: false,
    })
    try {
      await upload.done()
    } catch (error) {
      throw counted.failure() ?? error
    }
    return { size: counted.size() }
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const Key = this.#objectKey(key)
    if (range) assertRangeWithin(range, Number.MAX_SAFE_INTEGER)
    let answer: GetObjectCommandOutput
    try {
      answer = await this.#s3.send(
        new GetObjectCommand({
          Bucket: this.#bucket,
          Key,
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      )
    } catch (error) {
      if (isMissingObject(error)) throw new BlobNotFoundError(key)
      if (statusOf(error) === 416 && range) {
        const size = (await this.stat(key))?.size
        if (size === undefined) throw new BlobNotFoundError(key)
        assertRangeWithin(range, size)
      }
      throw error
    }
    const body = answer.Body as Readable
    if (range) {
      // S3 answers a range that runs past the end with what there is; the contract refuses it.
      const size = Number(/\/(\d+)$/.exec(answer.ContentRange ?? '')?.[1])
      try {
        assertRangeWithin(range, Number.isFinite(size) ? size : 0)
      } catch (error) {
        body.destroy()
        throw error
      }
    }
    return body
  }

  /**
   * A URL that lets anyone holding it GET the object for `expiresInSeconds`, answered with these Content-Type
   * and Content-Disposition (DOWNLOAD_REDIRECT=presigned).
   */
  presignedGet(key: string, options: PresignedGetOptions): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.#bucket,
      Key: this.#objectKey(key),
      ResponseContentType: options.contentType,
      ResponseContentDisposition: options.contentDisposition,
    })
    return getSignedUrl(this.#s3, command, { expiresIn: options.expiresInSeconds })
  }

  async stat(key: string): Promise<BlobStat | undefined> {
    const Key = this.#objectKey(key)
    try {
      const head = await this.#s3.send(new HeadObjectCommand({ Bucket: this.#bucket, Key }))
      return { size: head.ContentLength ?? 0 }
    } catch (error) {
      if (isMissingObject(error)) return undefined
      throw error
    }
  }

  async delete(key: string): Promise<void> {
    await this.#s3.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#objectKey(key) }))
  }

  async *list(prefix: string): AsyncIterable<ListedBlob> {
    for await (const object of this.#objects(prefix)) {
      if (object.key !== undefined)
        yield { key: object.key, size: object.size, modifiedAt: object.modifiedAt }
    }
  }

  inventory(): AsyncIterable<StoredObject> {
    return this.#objects('')
  }

  /** Every object whose key starts with the store's prefix and then `prefix`, a page of ListObjectsV2 at a time. */
  async *#objects(prefix: string): AsyncIterable<StoredObject> {
    let ContinuationToken: string | undefined
    do {
      const page = await this.#s3.send(
        new ListObjectsV2Command({
          Bucket: this.#bucket,
          Prefix: this.#prefix + prefix,
          ContinuationToken,
        }),
      )
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue
        const name = object.Key.slice(this.#prefix.length)
        const size = object.Size ?? 0
        const modifiedAt = object.LastModified?.getTime() ?? 0
        yield { key: isValidKey(name) ? name : undefined, name, size, modifiedAt }
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (ContinuationToken)
  }

  /** The multipart uploads under the prefix that nobody completed or aborted (yet), with what they hold. */
  async *leftovers(): AsyncIterable<Leftover> {
    let KeyMarker: string | undefined
    let UploadIdMarker: string | undefined
    do {
      const page = await this.#s3.send(
        new ListMultipartUploadsCommand({
          Bucket: this.#bucket,
          Prefix: this.#prefix,
          KeyMarker,
          UploadIdMarker,
        }),
      )
      for (const upload of page.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId) continue
        const key = upload.Key.slice(this.#prefix.length)
        let parts: ListedPart[]
        try {
          parts = await this.#listedParts({ key, uploadId: upload.UploadId })
        } catch (error) {
          // Completed or aborted since the listing began.
          if (error instanceof MultipartUploadNotFoundError) continue
          throw error
        }
        const lastPart = Math.max(0, ...parts.map((part) => part.modifiedAt ?? 0))
        yield {
          id: leftoverId(key, upload.UploadId),
          size: parts.reduce((sum, part) => sum + part.size, 0),
          modifiedAt: Math.max(upload.Initiated?.getTime() ?? 0, lastPart),
        }
      }
      KeyMarker = page.IsTruncated ? page.NextKeyMarker : undefined
      UploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined
    } while (KeyMarker)
  }

  async removeLeftover(id: string): Promise<void> {
    const separator = id.indexOf(' ')
    if (separator < 0) return
    await this.abortMultipart({ key: id.slice(0, separator), uploadId: id.slice(separator + 1) })
  }

  async createMultipart(key: string): Promise<MultipartUpload> {
    const created = await this.#s3.send(
      new CreateMultipartUploadCommand({ Bucket: this.#bucket, Key: this.#objectKey(key) }),
    )
    if (!created.UploadId) throw new Error('the object store gave no UploadId for a new multipart upload')
    return { key, uploadId: created.UploadId }
  }

  async writePart(
    upload: MultipartUpload,
    partNumber: number,
    data: BlobSource,
    length?: number,
  ): Promise<WrittenPart> {
    const Key = this.#objectKey(upload.key)
    assertPartNumber(partNumber)
    return withHeldErrors(data, () => this.#writePart(Key, upload, partNumber, data, length))
  }

  async #writePart(
    Key: string,
    upload: MultipartUpload,
    partNumber: number,
    data: BlobSource,
    length?: number,
  ): Promise<WrittenPart> {
    let body: Uint8Array | Readable
    let size: number
    let counted: Measured | undefined
    let abortSignal: AbortSignal | undefined
    if (data instanceof Uint8Array) {
      if (length !== undefined && length !== data.length) {
        throw new PartLengthError(partNumber, length, `its source holds ${data.length}`)
      }
      body = data
      size = data.length
    } else if (length === undefined) {
      body = await collect(
        data,
        UNANNOUNCED_PART_MAX_BYTES,
        () =>
          new PartLengthError(
            partNumber,
            UNANNOUNCED_PART_MAX_BYTES,
            `a part of unannounced length may hold at most ${UNANNOUNCED_PART_MAX_BYTES} bytes on this store`,
          ),
      )
      size = body.length
    } else {
      counted = measured(data, length, partNumber)
      ;({ body, abortSignal } = requestBody(counted))
      size = length
    }
    try {
      const written = await this.#s3.send(
        new UploadPartCommand({
          Bucket: this.#bucket,
          Key,
          UploadId: upload.uploadId,
          PartNumber: partNumber,
          Body: body,
          ContentLength: size,
        }),
        { abortSignal },
      )
      if (!written.ETag) throw new Error(`the object store gave no ETag for part ${partNumber}`)
      return { partNumber, etag: written.ETag, size }
    } catch (error) {
      const failure = counted?.failure()
      if (failure) throw failure
      if (isMissingUpload(error)) throw new MultipartUploadNotFoundError(upload.uploadId)
      throw error
    }
  }

  async listParts(upload: MultipartUpload): Promise<WrittenPart[]> {
    return (await this.#listedParts(upload)).map(({ modifiedAt: _, ...part }) => part)
  }

  /** Every part of the upload, with when it was written, through as many pages as ListParts takes. */
  async #listedParts(upload: MultipartUpload): Promise<ListedPart[]> {
    const Key = this.#objectKey(upload.key)
    const parts: ListedPart[] = []
    let PartNumberMarker: string | undefined
    do {
      let page: ListPartsCommandOutput
      try {
        page = await this.#s3.send(
          new ListPartsCommand({ Bucket: this.#bucket, Key, UploadId: upload.uploadId, PartNumberMarker }),
        )
      } catch (error) {
        if (isMissingUpload(error)) throw new MultipartUploadNotFoundError(upload.uploadId)
        throw error
      }
      for (const part of page.Parts ?? []) {
        if (part.PartNumber === undefined || !part.ETag) continue
        parts.push({
          partNumber: part.PartNumber,
          etag: part.ETag,
          size: part.Size ?? 0,
          modifiedAt: part.LastModified?.getTime(),
        })
      }
      PartNumberMarker = page.IsTruncated ? page.NextPartNumberMarker : undefined
    } while (PartNumberMarker)
    return parts
  }

  async completeMultipart(upload: MultipartUpload, parts: PartRef[]): Promise<MultipartBlob> {
    const Key = this.#objectKey(upload.key)
    const written = new Map((await this.#listedParts(upload)).map((part) => [part.partNumber, part]))
    for (const [i, ref] of parts.entries()) {
      if (i > 0 && ref.partNumber <= (parts[i - 1]?.partNumber ?? 0)) {
        throw new InvalidPartError(ref.partNumber, 'parts must be listed in ascending order, each once')
      }
      const part = written.get(ref.partNumber)
      if (!part || part.etag !== ref.etag) {
        throw new InvalidPartError(ref.partNumber, 'no write of it with this etag is in the upload')
      }
      if (i < parts.length - 1 && part.size < S3_MIN_PART_BYTES) {
        throw new InvalidPartError(
          ref.partNumber,
          `it holds ${part.size} bytes; every part but the last must hold at least ${S3_MIN_PART_BYTES}`,
        )
      }
    }
    try {
      if (parts.length === 0) {
        await this.abortMultipart(upload)
        await this.#s3.send(new PutObjectCommand({ Bucket: this.#bucket, Key, Body: new Uint8Array(0) }))
      } else {
        await this.#s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.#bucket,
            Key,
            UploadId: upload.uploadId,
            MultipartUpload: {
              Parts: parts.map(({ partNumber, etag }) => ({ PartNumber: partNumber, ETag: etag })),
            },
          }),
        )
      }
    } catch (error) {
      if (isMissingUpload(error)) throw new MultipartUploadNotFoundError(upload.uploadId)
      if (error instanceof S3ServiceException && error.name === 'InvalidPart') {
        throw new InvalidPartError(parts[0]?.partNumber ?? 0, 'the object store refused the list of parts')
      }
      throw error
    }
    // The joined object is the listed parts, in order. Its SHA-256 would take reading it all back: the caller
    // has it computed later, if it wants it.
    let size = 0
    for (const ref of parts) size += written.get(ref.partNumber)?.size ?? 0
    return { size, sha256: undefined, crc32: undefined }
  }

  async abortMultipart(upload: MultipartUpload): Promise<void> {
    try {
      await this.#s3.send(
        new AbortMultipartUploadCommand({
          Bucket: this.#bucket,
          Key: this.#objectKey(upload.key),
          UploadId: upload.uploadId,
        }),
      )
    } catch (error) {
      if (!isMissingUpload(error)) throw error
    }
  }
}

/**
 * What Coffer sets of the SDK's configuration, the rest being the SDK's own (environment, profiles, roles):
 * only the checksums S3 requires (see the top of this file), and bounded waits.
 */
export function clientSettings(options: Pick<S3BlobStoreOptions, 'forcePathStyle' | 'timeoutMs'>) {
  return {
    forcePathStyle: options.forcePathStyle,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    logger: SILENT_LOGGER,
    maxAttempts: MAX_ATTEMPTS,
    // The socket's timeout is one of inactivity: it ends a request to a store that stopped answering (or
    // stopped reading), and a download whose body stopped coming, but never a transfer that moves. A
    // connection to a store that takes none is given up sooner.
    requestHandler: {
      connectionTimeout: Math.min(CONNECT_TIMEOUT_MS, options.timeoutMs),
      socketTimeout: options.timeoutMs,
    },
  } as const
}

async function defaultClient(options: S3BlobStoreOptions): Promise<S3Client> {
  const settings = clientSettings(options)
  const s3 = new S3Client(settings)
  try {
    await s3.config.region()
    return s3
  } catch {
    // No region in the environment or a profile: S3-compatible servers seldom care, AWS's default region.
    s3.destroy()
    return new S3Client({ ...settings, region: 'us-east-1' })
  }
}

/**
 * A request body streamed from a measured source, and the signal that aborts its request as soon as the source
 * fails: the request would otherwise wait for the bytes its Content-Length promised. The failure itself is
 * the caller's to report (`Measured.failure`).
 */
function requestBody(counted: Measured): { body: Readable; abortSignal: AbortSignal } {
  const controller = new AbortController()
  const body = readableOf(counted.chunks)
  body.on('error', () => controller.abort())
  return { body, abortSignal: controller.signal }
}

/**
 * Errors that say what failed, once the SDK has made its attempts:
 * - a fault of the store rather than of the request (it cannot be reached, it stopped answering, it answered
 *   5xx or asked to slow down) is a BlobStoreUnavailableError, which callers answer with a 503 and retry;
 * - some servers (Ceph) answer errors without a message, which the SDK then calls "UnknownError": the code and
 *   the status are what a log needs.
 */
const namedErrors: InitializeMiddleware<object, MetadataBearer> = (next) => async (args) => {
  try {
    return await next(args)
  } catch (error) {
    if (error instanceof S3ServiceException && (!error.message || error.message === 'UnknownError')) {
      error.message = `${error.name} (HTTP ${error.$metadata.httpStatusCode ?? 'status unknown'})`
    }
    if (isStoreFault(error)) {
      throw new BlobStoreUnavailableError(`the object store is unavailable: ${describe(error)}`, {
        cause: error,
      })
    }
    throw error
  }
}

/** Node's codes of a connection that could not be made or broke. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
])
/** What S3 and the SDK call a request that timed out, or a store asking its clients to slow down. */
const FAULT_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'SlowDown'])

/** Whether a request failed on a fault of the store (see `namedErrors`), not on what it asked. */
function isStoreFault(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  if ((error as { name?: unknown }).name === 'AbortError') return false
  const status = statusOf(error) ?? 0
  const { name, code } = error as { name?: unknown; code?: unknown }
  return (
    status >= 500 ||
    status === 429 ||
    (typeof name === 'string' && FAULT_NAMES.has(name)) ||
    (typeof code === 'string' && SOCKET_CODES.has(code))
  )
}

/** The SDK writes some warnings to the console unless given a logger: the errors reach the caller anyway. */
const SILENT_LOGGER = { trace() {}, debug() {}, info() {}, warn() {}, error() {} }

const leftoverId = (key: string, uploadId: string) => `${key} ${uploadId}`

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error)
}

const isMissingObject = (error: unknown) =>
  error instanceof S3ServiceException && (error.name === 'NoSuchKey' || error.name === 'NotFound')

// Ceph answers NoSuchKey, not NoSuchUpload, for the parts of an upload that was completed or aborted.
const isMissingUpload = (error: unknown) =>
  error instanceof S3ServiceException && (error.name === 'NoSuchUpload' || error.name === 'NoSuchKey')
