// The storage side of an upload: what the @vercel/blob client's requests do (docs/blob-protocol.md). Each
// request carries a client token signed at the handshake; it is verified before a byte is read, the bytes are
// streamed into the BlobStore and counted (no file is ever held in memory: at most a few multipart parts), and
// once a blob is whole the API is told through the signed completion callback, as the real service does.
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import type { BlobStore } from '../blob/blob-store.ts'
import type { Config } from '../config.ts'
import { blobKeyOf } from '../files/files.service.ts'
import { newId } from '../ids.ts'
import { essence } from '../uploads/sniff.ts'
import type { IntentRow, StagedBlob, UploadStore } from '../uploads/upload-store.ts'
import { ByteMeter, type Digest } from './byte-stream.ts'
import { type ClientTokenPayload, signCallback, verifyClientToken } from './client-token.ts'
import { Composer, type StagedPart } from './composer.ts'
import { BlobApiError, notAccepting, tooLarge } from './errors.ts'
import type { SigningKeyring } from './signing-keys.ts'

/** What the client sends besides the body, read from the request by the route. */
export interface BlobRequest {
  authorization: string | undefined
  /** `pathname` of the query string, URLSearchParams-decoded. */
  pathname: string | undefined
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

/** Delivers a completion callback; resolves with the HTTP status the API answered. */
export type CallbackSender = (url: string, body: string, signature: string) => Promise<number>

export type Body = AsyncIterable<Uint8Array>

const UPLOAD_ID = /^mpu_[0-9a-f]{24}$/
/** How long a part that arrived ahead of its turn waits to stream straight into the composition. */
const TURN_WAIT_MS = 2000
/** A composition that receives no part for this long is dropped. */
const COMPOSITION_IDLE_MS = 10 * 60_000
const MAX_PARTS = 10_000

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

export class BlobApiService {
  readonly #store: UploadStore
  readonly #blobs: BlobStore
  readonly #keyring: SigningKeyring
  readonly #publicUrl: string
  /**
   * With one process (SQLite), every request of a multipart upload reaches this process, so a part can go
   * straight into the composition here. With several, parts and `complete` may reach different processes,
   * and every part is staged in the shared store.
   */
  readonly #singleProcess: boolean
  /** Compositions under way in this process, by multipart upload id. */
  readonly #composers = new Map<
    string,
    { intentId: string; composer: Promise<Composer>; expiry: NodeJS.Timeout }
  >()

  constructor(deps: { store: UploadStore; blobs: BlobStore; keyring: SigningKeyring; config: Config }) {
    this.#store = deps.store
    this.#blobs = deps.blobs
    this.#keyring = deps.keyring
    this.#publicUrl = deps.config.publicUrl
    this.#singleProcess = deps.config.databaseUrl === undefined
  }

  /** Checks a request against its client token and the intent's state, before any byte is read. */
  async authorize(request: BlobRequest): Promise<Ticket> {
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
    if (request.pathname === undefined) {
      throw new BlobApiError('bad_request', 'The query parameter "pathname" is required.')
    }
    if (request.pathname !== token.pathname) {
      throw new BlobApiError(
        'client_token_pathname_mismatch',
        `"pathname" "${request.pathname}" does not match the token payload`,
      )
    }
    if (request.access !== 'private') {
      throw new BlobApiError('bad_request', 'Uploads must use private access: pass access: "private".')
    }
    if (
      request.contentType !== undefined &&
      !token.allowedContentTypes.some((allowed) => essence(allowed) === essence(request.contentType ?? ''))
    ) {
      throw new BlobApiError(
        'content_type_not_allowed',
        `"contentType" "${request.contentType}" is not allowed; the upload was prepared for "${token.allowedContentTypes.join('", "')}"`,
      )
    }
    if (request.length !== undefined && request.length > token.maximumSizeInBytes) {
      throw tooLarge(token.maximumSizeInBytes)
    }
    const intent = await this.#store.intent(token.tokenPayload)
    if (intent?.state !== 'uploading' || intent.pathname !== token.pathname) throw notAccepting()
    return { token, intent }
  }

  /** Single PUT: the whole blob in one body. */
  async put(ticket: Ticket, body: Body, deliver: CallbackSender): Promise<PutBlobResult> {
    return this.#storeFinal(ticket, body, deliver)
  }

  async createMultipart(ticket: Ticket): Promise<{ uploadId: string; key: string }> {
    // Parts are recorded under this id, so two multipart uploads of one intent never mix their parts.
    return { uploadId: `mpu_${randomBytes(12).toString('hex')}`, key: ticket.token.pathname }
  }

  async uploadPart(
    ticket: Ticket,
    headers: { uploadId: string | undefined; key: string | undefined; partNumber: string | undefined },
    body: Body,
  ): Promise<{ etag: string }> {
    const uploadId = this.#uploadId(ticket, headers)
    const partNumber = Number(headers.partNumber)
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PARTS) {
      throw new BlobApiError('bad_request', `"x-mpu-part-number" must be an integer from 1 to ${MAX_PARTS}.`)
    }
    const { intent, token } = ticket
    // The composition only speeds `complete` up; the part is stored whether or not it can take it.
    const composer = await this.#composer(ticket, uploadId).catch(() => undefined)
    // Parts already stored (or taken) under other numbers count against the declared size; a retried part
    // replaces its earlier attempt, so only the largest attempt of each number counts.
    const largest = new Map<number, number>()
    for (const p of await this.#store.parts(intent.id, uploadId)) {
      if (p.partNumber !== null && p.partNumber !== partNumber && p.size !== null) {
        largest.set(p.partNumber, Math.max(largest.get(p.partNumber) ?? 0, p.size))
      }
    }
    for (const p of composer?.takenParts() ?? []) {
      if (p.partNumber !== partNumber)
        largest.set(p.partNumber, Math.max(largest.get(p.partNumber) ?? 0, p.size))
    }
    const others = [...largest.values()].reduce((a, b) => a + b, 0)
    const limit = token.maximumSizeInBytes - others
    if (limit < 0) throw tooLarge(token.maximumSizeInBytes)
    const meter = new ByteMeter(limit, { hash: false })
    const etag = randomBytes(8).toString('hex')

    let source: AsyncIterable<Uint8Array> = meter.measure(body)
    if (this.#singleProcess && composer && (await composer.awaitTurn(partNumber, TURN_WAIT_MS))) {
      // Its turn: received whole, then written once, into the final blob. Should the transfer break off,
      // nothing was handed over and the client sends the part again.
      const chunks: Uint8Array[] = []
      for await (const chunk of source) chunks.push(chunk)
      if (composer.take({ partNumber, etag }, chunks)) return { etag }
      source = Readable.from(chunks)
    }

    const key = `uploads/${intent.id}/${uploadId}/${partNumber}-${etag}`
    await this.#store.stage(key, intent.id, { uploadId, partNumber, etag })
    await this.#write(key, source, () =>
      meter.size > limit ? tooLarge(token.maximumSizeInBytes) : undefined,
    )
    if (!(await this.#store.staged(key, intent.id, meter.size, null))) {
      await this.#discard([key])
      throw notAccepting()
    }
    composer?.offer({ partNumber, etag, key }, meter.size)
    return { etag }
  }

  async completeMultipart(
    ticket: Ticket,
    headers: { uploadId: string | undefined; key: string | undefined },
    body: Body,
    deliver: CallbackSender,
  ): Promise<PutBlobResult> {
    const uploadId = this.#uploadId(ticket, headers)
    const listed = await readJson(body, 1024 * 1024)
    if (!isPartList(listed)) {
      throw new BlobApiError(
        'bad_request',
        `The body must be a JSON array of at most ${MAX_PARTS} { partNumber, etag } objects.`,
      )
    }
    const ordered = [...listed].sort((a, b) => a.partNumber - b.partNumber)
    for (const [i, p] of ordered.entries()) {
      if (i > 0 && ordered[i - 1]?.partNumber === p.partNumber) {
        throw new BlobApiError('bad_request', `Part ${p.partNumber} is listed twice.`)
      }
    }
    // A list the client can correct leaves the composition as it is, for the corrected `complete`.
    const entry = this.#composers.get(uploadId)
    const composer = await entry?.composer.catch(() => undefined)
    const stored = new Map<string, StagedBlob>()
    for (const p of await this.#store.parts(ticket.intent.id, uploadId)) {
      if (p.size !== null) stored.set(`${p.partNumber}:${p.etag}`, p)
    }
    const parts: StagedPart[] = []
    let taken = false
    let total = 0
    for (const p of ordered) {
      const staged = stored.get(`${p.partNumber}:${p.etag}`)
      const handed = composer?.handed(p)
      if (!staged && !handed?.taken) {
        throw new BlobApiError('bad_request', `Part ${p.partNumber} with etag "${p.etag}" was not uploaded.`)
      }
      taken ||= handed?.taken === true
      parts.push({ partNumber: p.partNumber, etag: p.etag, key: staged?.key ?? '' })
      total += staged?.size ?? handed?.size ?? 0
    }
    if (total > ticket.token.maximumSizeInBytes) throw tooLarge(ticket.token.maximumSizeInBytes)
    if (entry) {
      this.#composers.delete(uploadId)
      clearTimeout(entry.expiry)
    }

    let result = composer && (await this.#finishComposition(ticket, composer, parts, deliver))
    if (!result) {
      if (taken) {
        // Parts taken into a composition that could not be finished exist nowhere else.
        throw new BlobApiError(
          'bad_request',
          'The multipart upload was interrupted on the server and cannot be completed; send the file again.',
        )
      }
      result = await this.#storeFinal(ticket, this.#concatenate(parts.map((p) => p.key)), deliver)
    }
    // The parts are no longer needed once the final blob is adopted, nor are those of abandoned attempts.
    await this.discardStaged(ticket.intent.id)
    return result
  }

  /** Removes every blob staged for an intent: parts, and final blobs that were never adopted. */
  async discardStaged(intentId: string): Promise<void> {
    for (const [uploadId, entry] of this.#composers) {
      if (entry.intentId === intentId) await this.#abandon(uploadId, new Error('the upload ended'))
    }
    const staged = await this.#store.stagedBlobs(intentId)
    await this.#discard(staged.map((b) => b.key))
  }

  /** Abandons the compositions under way, for a process that stops. */
  async stop(): Promise<void> {
    for (const uploadId of [...this.#composers.keys()])
      await this.#abandon(uploadId, new Error('shutting down'))
  }

  /**
   * The composition of a multipart upload in this process, started with its first part here. One that sees
   * no part for a while (the client gave up, or completes through another process) is dropped, and so is one
   * whose grant expired.
   */
  #composer(ticket: Ticket, uploadId: string): Promise<Composer> {
    const { intent, token } = ticket
    const idle = () => Math.max(0, Math.min(COMPOSITION_IDLE_MS, token.validUntil - Date.now()))
    const running = this.#composers.get(uploadId)
    if (running) {
      running.expiry.refresh()
      return running.composer
    }
    const fileId = newId('fil')
    const key = blobKeyOf(intent.account_id, fileId)
    const composer = this.#store
      .stage(key, intent.id)
      .then(() => new Composer(this.#blobs, fileId, key, token.maximumSizeInBytes))
    const expiry = setTimeout(() => {
      // A record left behind by a failure here is removed by the sweep once the intent ends.
      this.#abandon(uploadId, new Error('the upload went idle')).catch(() => {})
    }, idle())
    expiry.unref()
    this.#composers.set(uploadId, { intentId: intent.id, composer, expiry })
    composer.catch(() => {
      clearTimeout(expiry)
      this.#composers.delete(uploadId)
    })
    return composer
  }

  async #abandon(uploadId: string, reason: Error): Promise<void> {
    const entry = this.#composers.get(uploadId)
    if (!entry) return
    this.#composers.delete(uploadId)
    clearTimeout(entry.expiry)
    const composer = await entry.composer.catch(() => undefined)
    if (!composer) return
    await composer.abort(reason)
    await this.#store.unstage([composer.key])
  }

  /** Completes a composition with the listed parts; undefined when it cannot be, for the caller to compose. */
  async #finishComposition(
    ticket: Ticket,
    composer: Composer,
    parts: StagedPart[],
    deliver: CallbackSender,
  ): Promise<PutBlobResult | undefined> {
    const digest = await composer.finish(parts)
    if (!digest) {
      await this.#store.unstage([composer.key])
      return undefined
    }
    return this.#report(ticket, composer.fileId, composer.key, digest, deliver)
  }

  #concatenate(keys: string[]): AsyncGenerator<Uint8Array> {
    const blobs = this.#blobs
    return (async function* () {
      for (const key of keys) yield* await blobs.get(key)
    })()
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
   * Writes the final blob under a file id of its own (so a concurrent attempt can never overwrite the bytes
   * another one reported), then has the API adopt it through the completion callback.
   */
  async #storeFinal(ticket: Ticket, body: Body, deliver: CallbackSender): Promise<PutBlobResult> {
    const { intent, token } = ticket
    const fileId = newId('fil')
    const key = blobKeyOf(intent.account_id, fileId)
    await this.#store.stage(key, intent.id)
    const meter = new ByteMeter(token.maximumSizeInBytes, { hash: true })
    await this.#write(key, meter.measure(body), () =>
      meter.size > token.maximumSizeInBytes ? tooLarge(token.maximumSizeInBytes) : undefined,
    )
    return this.#report(ticket, fileId, key, meter.digest(), deliver)
  }

  /** Records a whole final blob and has the API adopt it through the signed completion callback. */
  async #report(
    ticket: Ticket,
    fileId: string,
    key: string,
    digest: Digest,
    deliver: CallbackSender,
  ): Promise<PutBlobResult> {
    const { intent, token } = ticket
    if (!(await this.#store.staged(key, intent.id, digest.size, digest.sha256))) {
      await this.#discard([key])
      throw notAccepting()
    }

    const statusUrl = `${this.#publicUrl}/api/v1/files/uploads/${intent.id}`
    const blob: PutBlobResult = {
      url: statusUrl,
      downloadUrl: statusUrl,
      pathname: token.pathname,
      contentType: intent.content_type,
      contentDisposition: attachment(intent.name),
      etag: `"${fileId}"`,
    }
    const event = JSON.stringify({
      type: 'blob.upload-completed',
      payload: { blob, tokenPayload: token.onUploadCompleted.tokenPayload },
    })
    const { callback } = await this.#keyring.keys()
    let status: number
    try {
      status = await deliver(token.onUploadCompleted.callbackUrl, event, signCallback(callback, event))
    } catch (error) {
      await this.#discard([key])
      throw error
    }
    if (status < 200 || status > 299) {
      await this.#discard([key])
      if (status === 409) throw notAccepting()
      throw new BlobApiError('internal_server_error', `The completion callback failed with status ${status}.`)
    }
    return blob
  }

  /** Streams into the store; nothing is left behind on failure, and the staging record goes with it. */
  async #write(key: string, data: AsyncIterable<Uint8Array>, overLimit: () => BlobApiError | undefined) {
    try {
      await this.#blobs.put(key, data)
    } catch (error) {
      await this.#store.unstage([key])
      throw overLimit() ?? error
    }
  }

  /**
   * Deletes blobs that are still staged, then forgets them. A blob the API adopted is no longer staged, so a
   * failure reported after its adoption can never delete a file's bytes.
   */
  async #discard(keys: string[]): Promise<void> {
    const staged = await this.#store.stillStaged(keys)
    for (const key of staged) await this.#blobs.delete(key)
    await this.#store.unstage(staged)
  }
}
