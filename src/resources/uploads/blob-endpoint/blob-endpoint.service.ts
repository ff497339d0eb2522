// The storage side of an upload: what the @vercel/blob client's requests do (docs/blob-protocol.md). Each
// request carries a client token signed at the handshake; it is verified before a byte is read, the bytes are
// streamed into the BlobStore and counted (no file, nor any part of one, is ever held in memory), and once a
// blob is whole its intent adopts it (`UploadsService.blobStored`), where the real service would send its
// completion callback. Multipart uploads map onto the BlobStore's own: a part goes straight into the store as
// it arrives, and the store joins the parts at `complete`.

import { randomBytes } from 'node:crypto'
import { blobKeyOf, fileIdOfBlobKey } from '../../../platform/blob/blob-keys.ts'
import {
  type BlobStore,
  InvalidPartError,
  MAX_PART_NUMBER,
  type MultipartUpload,
  MultipartUploadNotFoundError,
  PartLengthError,
  type PartRef,
  type WrittenPart,
} from '../../../platform/blob/blob-store.ts'
import { BlobLengthError } from '../../../platform/blob/sources.ts'
import { newId } from '../../../platform/ids.ts'
import { essenceOf } from '../../../platform/media-types.ts'
import type { PublicUrls } from '../../../platform/public-urls.ts'
import type { StagedBlobs } from '../staged-blobs.ts'
import type { IntentRow, StagedBlob, UploadsRepository } from '../uploads.repository.ts'
import type { UploadsService } from '../uploads.service.ts'
import { ByteMeter, type Digest } from './byte-meter.ts'
import { type ClientTokenPayload, verifyClientToken } from './client-token.ts'
import { BlobApiError, notAccepting, tooLarge } from './errors.ts'
import type { SigningKeyring } from './signing-keys.ts'

/** What the client sends besides the body, read from the request by the route. */
export interface BlobRequest {
  authorization: string | undefined
  /** Every `pathname` of the query string, URLSearchParams-decoded: exactly one is accepted. */
  pathnames: string[]
  access: string | undefined
  /** `x-content-type`: the contentType passed to upload(). */
  contentType: string | undefined
  /** `content-length`, or `x-content-length` when the body is streamed. */
  length: number | undefined
}

export interface PutBlobResult {
  url: string
  downloadUrl: string
  pathname: string
  contentType: string
  contentDisposition: string
  etag: string
}

/** A verified request: the token's payload and the intent it is for, which still accepts bytes. */
export interface Ticket {
  token: ClientTokenPayload
  intent: IntentRow
}

/**
 * The fewest bytes a part may hold, but the last: Vercel Blob's rule and S3's, kept on every store so that a
 * client works the same whatever holds the bytes (the @vercel/blob client sends 8 MiB parts).
 */
export const MIN_PART_BYTES = 5 * 1024 * 1024

export type Body = AsyncIterable<Uint8Array>

const UPLOAD_ID = /^mpu_[0-9a-f]{24}$/
const MAX_PARTS = MAX_PART_NUMBER

/** A multipart upload as the service knows it: the staged blob it makes, and the store's upload. */
interface OpenUpload {
  fileId: string
  upload: MultipartUpload
  /** Set once the store completed the blob (a completion whose adoption failed is retried with it). */
  completed: Digest | undefined
}

const notUploaded = (part: PartRef | undefined) =>
  new BlobApiError('bad_request', `Part ${part?.partNumber} with etag "${part?.etag}" was not uploaded.`)

const closedUpload = () =>
  new BlobApiError(
    'bad_request',
    'The multipart upload is no longer open: it was completed, or abandoned on the server; send the file again.',
  )

const isPartList = (v: unknown): v is { partNumber: number; etag: string }[] =>
  Array.isArray(v) &&
  v.length <= MAX_PARTS &&
  v.every(
    (p) =>
      typeof p === 'object' &&
      p !== null &&
      Number.isInteger(p.partNumber) &&
      p.partNumber >= 1 &&
      p.partNumber <= MAX_PARTS &&
      typeof p.etag === 'string',
  )

async function readJson(body: Body, limit: number): Promise<unknown> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.byteLength
    if (size > limit) throw new BlobApiError('bad_request', `The request body exceeds ${limit} bytes.`)
    chunks.push(chunk)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new BlobApiError('bad_request', 'The request body is not valid JSON.')
  }
}

/** RFC 6266 with an RFC 8187 `filename*` for names beyond ASCII. */
function attachment(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\]/g, '_')
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(name)}`
}

export class BlobEndpointService {
  readonly #uploads: UploadsRepository
  readonly #staged: StagedBlobs
  readonly #intents: Pick<UploadsService, 'blobStored'>
  readonly #blobs: BlobStore
  readonly #keyring: SigningKeyring
  readonly #urls: PublicUrls

  constructor(deps: {
    uploads: UploadsRepository
    staged: StagedBlobs
    /** Has an intent adopt the blob stored for it. */
    intents: Pick<UploadsService, 'blobStored'>
    blobs: BlobStore
    keyring: SigningKeyring
    urls: PublicUrls
  }) {
    this.#uploads = deps.uploads
    this.#staged = deps.staged
    this.#intents = deps.intents
    this.#blobs = deps.blobs
    this.#keyring = deps.keyring
    this.#urls = deps.urls
  }

  /**
   * Checks a request against its client token and the intent's state, before any byte is read. A completion
   * (`completing`: the multipart upload id it names) is also let through once the intent adopted that very
   * upload's blob: it is the same completion sent again after its answer was lost, and gets the same answer.
   */
  async authorize(request: BlobRequest, completing?: string): Promise<Ticket> {
    const bearer = /^Bearer (\S+)$/.exec(request.authorization ?? '')?.[1]
    const { clientToken: key } = await this.#keyring.keys()
    const token = bearer === undefined ? undefined : verifyClientToken(key, bearer)
    if (!token) {
      throw new BlobApiError(
        'forbidden',
        'The client token is missing, malformed or not signed by this server.',
      )
    }
    // The library recognises exactly this message as an expired token.
    if (Date.now() > token.validUntil) throw new BlobApiError('client_token_expired', 'Token expired')
    const [pathname, ...more] = request.pathnames
    if (pathname === undefined) {
      throw new BlobApiError('bad_request', 'The query parameter "pathname" is required.')
    }
    if (more.length > 0) {
      throw new BlobApiError('bad_request', 'The query parameter "pathname" must be given once.')
    }
    if (pathname !== token.pathname) {
      throw new BlobApiError(
        'client_token_pathname_mismatch',
        `"pathname" "${pathname}" does not match the token payload`,
      )
    }
    if (request.access !== 'private') {
      throw new BlobApiError('bad_request', 'Uploads must use private access: pass access: "private".')
    }
    if (
      request.contentType !== undefined &&
      !token.allowedContentTypes.some(
        (allowed) => essenceOf(allowed) === essenceOf(request.contentType ?? ''),
      )
    ) {
      throw new BlobApiError(
        'content_type_not_allowed',
        `"contentType" "${request.contentType}" is not allowed; the upload was prepared for "${token.allowedContentTypes.join('", "')}"`,
      )
    }
    if (request.length !== undefined && request.length > token.maximumSizeInBytes) {
      throw tooLarge(token.maximumSizeInBytes)
    }
    const intent = await this.#uploads.intent(token.tokenPayload)
    if (intent?.pathname !== token.pathname) throw notAccepting()
    const completedAlready = completing !== undefined && intent.adopted_upload_id === completing
    if (intent.state !== 'uploading' && !completedAlready) throw notAccepting()
    return { token, intent }
  }

  /**
   * Single PUT: the whole blob in one body, of `length` bytes when the client said so (the store may need it to
   * stream, as S3 does; a body of another length is refused).
   */
  async put(ticket: Ticket, body: Body, length?: number): Promise<PutBlobResult> {
    const { intent, token } = ticket
    // A file id of its own, so that a concurrent attempt can never overwrite the bytes another one stored.
    const fileId = newId('fil')
    const key = blobKeyOf(intent.account_id, fileId)
    await this.#uploads.stage(key, intent.id)
    const meter = new ByteMeter(token.maximumSizeInBytes, { digest: true })
    await this.#write(
      key,
      meter.measure(body),
      () => (meter.size > token.maximumSizeInBytes ? tooLarge(token.maximumSizeInBytes) : undefined),
      length,
    )
    return this.#adopt(ticket, fileId, key, meter.digest())
  }

  async createMultipart(ticket: Ticket): Promise<{ uploadId: string; key: string }> {
    const { intent, token } = ticket
    // Each upload makes a file id of its own, so two multipart uploads of one intent never write one blob.
    const uploadId = `mpu_${randomBytes(12).toString('hex')}`
    const upload = await this.#blobs.createMultipart(blobKeyOf(intent.account_id, newId('fil')))
    // Recorded before any part is written to it. A crash in between leaves an empty upload in the store, which
    // the store sweeps as it sweeps a crashed write.
    try {
      await this.#uploads.stage(upload.key, intent.id, { uploadId, storeUploadId: upload.uploadId })
    } catch (error) {
      await this.#blobs.abortMultipart(upload).catch(() => {})
      throw error
    }
    return { uploadId, key: token.pathname }
  }

  async uploadPart(
    ticket: Ticket,
    headers: {
      uploadId: string | undefined
      key: string | undefined
      partNumber: string | undefined
      length: number | undefined
    },
    body: Body,
  ): Promise<{ etag: string }> {
    const { upload } = await this.#openUpload(ticket, headers)
    // Digits only: Number() would also take " 1", "1e0" and "0x1" as part 1.
    const partNumber = /^[1-9][0-9]{0,4}$/.test(headers.partNumber ?? '')
      ? Number(headers.partNumber)
      : Number.NaN
    if (!(partNumber >= 1 && partNumber <= MAX_PARTS)) {
      throw new BlobApiError('bad_request', `"x-mpu-part-number" must be an integer from 1 to ${MAX_PARTS}.`)
    }
    const { token } = ticket
    // Parts stored under other numbers count against the declared size; a part sent again replaces its earlier
    // write, so only the largest write of each number counts. The store keeps the list: it survives any crash.
    const largest = new Map<number, number>()
    for (const p of await this.#listParts(upload)) {
      if (p.partNumber !== partNumber)
        largest.set(p.partNumber, Math.max(largest.get(p.partNumber) ?? 0, p.size))
    }
    const others = [...largest.values()].reduce((a, b) => a + b, 0)
    const limit = token.maximumSizeInBytes - others
    if (limit < 0 || (headers.length ?? 0) > limit) throw tooLarge(token.maximumSizeInBytes)
    // An announced length is held to by the store, which refuses any other; a body of unknown length is counted.
    const meter = headers.length === undefined ? new ByteMeter(limit, { digest: false }) : undefined
    try {
      // The store's etag goes to the client as is: `complete` hands the list back to the store, which checks it.
      const { etag } = await this.#blobs.writePart(
        upload,
        partNumber,
        meter?.measure(body) ?? body,
        headers.length,
      )
      return { etag }
    } catch (error) {
      if (meter && meter.size > limit) throw tooLarge(token.maximumSizeInBytes)
      if (error instanceof PartLengthError) {
        throw new BlobApiError(
          'bad_request',
          `The part's length differs from the one announced: ${error.message}.`,
        )
      }
      if (error instanceof MultipartUploadNotFoundError) throw closedUpload()
      throw error
    }
  }

  async completeMultipart(
    ticket: Ticket,
    headers: { uploadId: string | undefined; key: string | undefined },
    body: Body,
  ): Promise<PutBlobResult> {
    const uploadId = this.#uploadId(ticket, headers)
    const adopted = ticket.intent.file_id
    if (ticket.intent.adopted_upload_id === uploadId && adopted !== null) {
      // Completed already (authorize let it through for that): the answer it got, or should have.
      return this.#result(ticket, adopted)
    }
    const { fileId, upload, completed } = await this.#openUpload(ticket, headers)
    const listed = await readJson(body, 1024 * 1024)
    if (!isPartList(listed)) {
      throw new BlobApiError(
        'bad_request',
        `The body must be a JSON array of at most ${MAX_PARTS} { partNumber, etag } objects.`,
      )
    }
    // A file has at least one byte (the API's rule), so an upload always has parts to list.
    if (listed.length === 0) {
      throw new BlobApiError(
        'bad_request',
        `The list of parts is empty, but the upload declared ${ticket.token.maximumSizeInBytes} bytes.`,
      )
    }
    const ordered = [...listed].sort((a, b) => a.partNumber - b.partNumber)
    for (const [i, p] of ordered.entries()) {
      if (i > 0 && ordered[i - 1]?.partNumber === p.partNumber) {
        throw new BlobApiError('bad_request', `Part ${p.partNumber} is listed twice.`)
      }
    }
    // A retry after the adoption failed: the store joined the parts already (and forgot them).
    const blob = completed ?? (await this.#join(ticket, upload, ordered))
    // Should the adoption fail on a fault, the blob stays for a retried `complete` to report again.
    const result = await this.#adopt(ticket, fileId, upload.key, blob, { keepOnFault: true })
    // The store forgot this upload's parts as it joined them; other uploads of the intent, and blobs never
    // adopted, go now, or with the sweep once the intent has ended: the upload succeeded either way.
    await this.#staged.discardAll(ticket.intent.id).catch(() => {})
    return result
  }

  /**
   * Has the store join the listed parts (sorted by number) into the upload's blob. A join that happened already
   * (a completion that failed after it, on a database outage say) is found in the store and reported again:
   * the blob's key is this upload's alone, made for it at `create`, and only a join writes it.
   */
  async #join(ticket: Ticket, upload: MultipartUpload, listed: PartRef[]): Promise<Digest> {
    try {
      return await this.#joinParts(ticket, upload, listed)
    } catch (error) {
      if (!(error instanceof MultipartUploadNotFoundError)) throw error
      const joined = await this.#blobs.stat(upload.key)
      if (!joined) throw closedUpload()
      return { size: joined.size, sha256: null, crc32: null }
    }
  }

  async #joinParts(ticket: Ticket, upload: MultipartUpload, listed: PartRef[]): Promise<Digest> {
    const stored = new Map<string, WrittenPart>()
    for (const p of await this.#blobs.listParts(upload)) stored.set(`${p.partNumber}:${p.etag}`, p)
    let total = 0
    for (const [i, p] of listed.entries()) {
      const part = stored.get(`${p.partNumber}:${p.etag}`)
      if (!part) throw notUploaded(p)
      if (part.size < MIN_PART_BYTES && i < listed.length - 1) {
        throw new BlobApiError(
          'bad_request',
          `Part ${p.partNumber} holds ${part.size} bytes; every part but the last must hold at least ${MIN_PART_BYTES} (5 MiB), as in Vercel Blob and S3.`,
        )
      }
      total += part.size
    }
    if (total > ticket.token.maximumSizeInBytes) throw tooLarge(ticket.token.maximumSizeInBytes)
    // Recorded first: should anything fail once the store has joined the parts, the sweep knows to look.
    await this.#uploads.startCompleting(upload.key)
    try {
      const blob = await this.#blobs.completeMultipart(upload, listed)
      return { size: blob.size, sha256: blob.sha256 ?? null, crc32: blob.crc32 ?? null }
    } catch (error) {
      // Listed a moment ago, but not usable after all: another write of the number replaced it meanwhile.
      if (error instanceof InvalidPartError) {
        throw notUploaded(listed.find((p) => p.partNumber === error.partNumber) ?? listed[0])
      }
      throw error
    }
  }

  /** The parts the store holds for an upload still open. */
  async #listParts(upload: MultipartUpload): Promise<WrittenPart[]> {
    try {
      return await this.#blobs.listParts(upload)
    } catch (error) {
      if (error instanceof MultipartUploadNotFoundError) throw closedUpload()
      throw error
    }
  }

  /** The intent's multipart upload the request names, if it is still open. */
  async #openUpload(
    ticket: Ticket,
    headers: { uploadId: string | undefined; key: string | undefined },
  ): Promise<OpenUpload> {
    const uploadId = this.#uploadId(ticket, headers)
    const staged: StagedBlob | undefined = await this.#uploads.multipartUpload(ticket.intent.id, uploadId)
    if (!staged?.storeUploadId) {
      throw new BlobApiError('bad_request', '"x-mpu-upload-id" is not an upload id this server gave out.')
    }
    // The blob's key is blobKeyOf(account, fileId), made at `create`.
    const fileId = fileIdOfBlobKey(staged.key)
    if (blobKeyOf(ticket.intent.account_id, fileId) !== staged.key) {
      throw new Error(`the staged blob ${staged.key} is not a file of account ${ticket.intent.account_id}`)
    }
    // Its size is recorded once the store joined the parts (its SHA-256 too, when the store gives one).
    const completed =
      staged.size !== null ? { size: staged.size, sha256: staged.sha256, crc32: staged.crc32 } : undefined
    return { fileId, upload: { key: staged.key, uploadId: staged.storeUploadId }, completed }
  }

  #uploadId(ticket: Ticket, part: { uploadId: string | undefined; key: string | undefined }): string {
    const uploadId = part.uploadId ?? ''
    if (!UPLOAD_ID.test(uploadId)) {
      throw new BlobApiError('bad_request', '"x-mpu-upload-id" is not an upload id this server gave out.')
    }
    let key: string | undefined
    try {
      key = part.key === undefined ? undefined : decodeURIComponent(part.key)
    } catch {
      key = undefined
    }
    if (key !== ticket.token.pathname) {
      throw new BlobApiError('bad_request', '"x-mpu-key" does not match the key of the multipart upload.')
    }
    return uploadId
  }

  /**
   * Records a whole final blob and has its intent adopt it. A blob the intent refuses (it no longer accepts
   * one) is deleted, and so is one whose adoption failed on a fault, unless `keepOnFault`.
   */
  async #adopt(
    ticket: Ticket,
    fileId: string,
    key: string,
    digest: Digest,
    options: { keepOnFault: boolean } = { keepOnFault: false },
  ): Promise<PutBlobResult> {
    const { intent } = ticket
    if (!(await this.#uploads.staged(key, intent.id, digest))) {
      if (await this.#adopted(intent.id, fileId)) return this.#result(ticket, fileId)
      await this.#staged.discard([key])
      throw notAccepting()
    }
    let adopted: boolean
    try {
      adopted = await this.#intents.blobStored(intent.id, key)
    } catch (error) {
      if (!options.keepOnFault) await this.#staged.discard([key])
      throw error
    }
    if (!adopted && !(await this.#adopted(intent.id, fileId))) {
      await this.#staged.discard([key])
      throw notAccepting()
    }
    return this.#result(ticket, fileId)
  }

  /**
   * Whether the intent adopted the blob of `fileId` already: the sweep finished a stalled completion of it
   * (`finishStalledCompletion`) while the client sent the completion again.
   */
  async #adopted(intentId: string, fileId: string): Promise<boolean> {
    return (await this.#uploads.intent(intentId))?.file_id === fileId
  }

  /** What the client is told of its stored blob: where to follow the upload, and the blob's etag (its file id). */
  #result({ intent, token }: Ticket, fileId: string): PutBlobResult {
    const statusUrl = this.#urls.uploadStatus(intent.id)
    return {
      url: statusUrl,
      downloadUrl: statusUrl,
      pathname: token.pathname,
      contentType: intent.content_type,
      contentDisposition: attachment(intent.name),
      etag: `"${fileId}"`,
    }
  }

  /** Streams into the store; nothing is left behind on failure, and the staging record goes with it. */
  async #write(
    key: string,
    data: AsyncIterable<Uint8Array>,
    overLimit: () => BlobApiError | undefined,
    length?: number,
  ) {
    try {
      await this.#blobs.put(key, data, length)
    } catch (error) {
      await this.#uploads.unstage([key])
      if (error instanceof BlobLengthError) {
        throw (
          overLimit() ??
          new BlobApiError(
            'bad_request',
            `The body's length differs from the one announced: ${error.message}.`,
          )
        )
      }
      throw overLimit() ?? error
    }
  }
}
