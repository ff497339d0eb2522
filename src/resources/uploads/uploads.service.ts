// Upload intents (docs/uploads.md): POST /files prepares one intent per file and hands out a grant; the blob
// client trades the grant for a client token at the handshake and sends the bytes to the blob endpoint
// (blob-endpoint/), which has the intent adopt the stored blob (`blobStored`); processing (processing.job.ts) then
// makes the File.
import { constantTimeEqual, hashSecret, newSecret } from '../../platform/auth/secrets.ts'
import { fileIdOfBlobKey } from '../../platform/blob/blob-keys.ts'
import type { Config } from '../../platform/config.ts'
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import { isForeignKeyViolation } from '../../platform/db/errors.ts'
import { AppError, conflict, invalid, notFound } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import { nonBlankName } from '../../platform/names.ts'
import type { PublicUrls } from '../../platform/public-urls.ts'
import type { FoldersRepository } from '../folders/folders.repository.ts'
import type { QuotasService } from '../quotas/quotas.service.ts'
import { type ClientTokenPayload, signClientToken } from './blob-endpoint/client-token.ts'
import type { SigningKeyring } from './blob-endpoint/signing-keys.ts'
import type { UploadProcessor } from './processing.job.ts'
import type { StagedBlobs, StoredUpload } from './staged-blobs.ts'
import type { IntentRow, UploadsRepository } from './uploads.repository.ts'

export const GRANT_PREFIX = 'coffer_grant_'

export interface FileDeclaration {
  name: string
  type: string
  size: number
}

export interface Grant {
  intentId: string
  name: string
  contentType: string
  size: number
  pathname: string
  handleUploadUrl: string
  statusUrl: string
  clientPayload: { intentId: string; name: string; grant: string }
  expiresAt: number
}

/**
 * An upload prepared on a file request's public page: the request it is for and what the submitter typed,
 * recorded in the Submission when processing creates the file.
 */
export interface SubmissionBinding {
  requestId: string
  submitterName: string | null
  submitterEmail: string | null
  message: string | null
}

export interface PrepareOptions {
  /** Binds the uploads to a submission to a file request. */
  submission?: SubmissionBinding
  /**
   * Runs first in the transaction that records the intents, so that what it checks (a request's limits, say)
   * still holds when they are committed; throwing prepares nothing.
   */
  check?(trx: Transaction): Promise<void>
  /** The client address the uploads were prepared from (a public page's), held while they may take bytes. */
  client?: string
  /**
   * Grants whose upload has not started this many seconds after the preparation expire then; an upload that
   * has started (the handshake) keeps the server's whole grant lifetime. Unset, grants have the whole of it.
   */
  unusedGrantSeconds?: number
}

/** An intent and the grant that authorizes it, as a public page holds them. */
export interface GrantedIntent {
  intentId: string
  grant: string
}

export const CANCELLED_MESSAGE = 'The upload was cancelled.'

export type UploadStatus =
  | { status: 'pending'; phase: 'uploading'; multipart?: StoredUpload }
  | { status: 'pending'; phase: 'processing' }
  | { status: 'complete'; result: { id: string } }
  | { status: 'error'; error: string }

export interface HandshakeRequest {
  pathname: string
  clientPayload: string | null
}

/** A storage pathname from the file name: ASCII letters, digits, `.`, `_` and `-`, under the intent id. */
export function pathnameFor(intentId: string, name: string): string {
  const ascii = name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
  const safe = ascii
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+/, '')
    .slice(0, 100)
    .replace(/[-.]+$/, '')
  return `${intentId}/${safe || 'file'}`
}

const badGrant = () =>
  new AppError(
    'unauthorized',
    'The upload grant is not valid.',
    'Pass clientPayload exactly as POST /files returned it, serialised with JSON.stringify.',
  )

export class UploadsService {
  readonly #transaction: Transactor
  readonly #uploads: UploadsRepository
  readonly #folders: FoldersRepository
  readonly #quotas: Pick<QuotasService, 'admit'>
  readonly #keyring: SigningKeyring
  readonly #processor: UploadProcessor
  readonly #staged: StagedBlobs
  readonly #config: Pick<Config, 'maxFileSize' | 'uploadGrantTtlSeconds'>
  readonly #urls: PublicUrls

  constructor(deps: {
    transaction: Transactor
    uploads: UploadsRepository
    folders: FoldersRepository
    /** Refuses uploads that would pass the account's quota, in the transaction that records them. */
    quotas: Pick<QuotasService, 'admit'>
    keyring: SigningKeyring
    processor: UploadProcessor
    /** What an unfinished upload stored so far, which its status tells. */
    staged: StagedBlobs
    config: Pick<Config, 'maxFileSize' | 'uploadGrantTtlSeconds'>
    urls: PublicUrls
  }) {
    this.#transaction = deps.transaction
    this.#uploads = deps.uploads
    this.#folders = deps.folders
    this.#quotas = deps.quotas
    this.#keyring = deps.keyring
    this.#processor = deps.processor
    this.#staged = deps.staged
    this.#config = deps.config
    this.#urls = deps.urls
  }

  async prepare(
    accountId: string,
    input: { files: FileDeclaration[]; folderId?: string | null },
    options: PrepareOptions = {},
  ): Promise<Grant[]> {
    const max = this.#config.maxFileSize
    for (const [i, file] of input.files.entries()) {
      nonBlankName(file.name, `files[${i}].name`)
      if (file.size > max) {
        throw invalid(
          `The request body "files[${i}].size" must be at most ${max}, the largest file this server accepts.`,
          `Send files of at most ${max} bytes; the operator sets the limit with MAX_FILE_SIZE.`,
        )
      }
    }
    const folderId = input.folderId ?? null
    const now = Date.now()
    const lifetime = this.#config.uploadGrantTtlSeconds
    const expiresAt = now + Math.min(options.unusedGrantSeconds ?? lifetime, lifetime) * 1000
    const { submission } = options
    // The files a submitter sends at once are one sending (migration 0030): shown together to the owner.
    const sendingId = submission ? newId('snd', now) : null
    const prepared = input.files.map((file) => {
      const id = newId('upl', now)
      return { id, file, grant: newSecret(GRANT_PREFIX, 32), pathname: pathnameFor(id, file.name) }
    })
    const rows: IntentRow[] = prepared.map(({ id, file, grant, pathname }) => ({
      id,
      account_id: accountId,
      folder_id: folderId,
      name: file.name,
      content_type: file.type,
      size: file.size,
      pathname,
      grant_hash: hashSecret(grant),
      expires_at: expiresAt,
      state: 'uploading',
      error: null,
      file_id: null,
      stored_size: null,
      sha256: null,
      crc32: null,
      stored_at: null,
      lease_until: null,
      request_id: submission?.requestId ?? null,
      submitter_name: submission?.submitterName ?? null,
      submitter_email: submission?.submitterEmail ?? null,
      submitter_message: submission?.message ?? null,
      sending_id: sendingId,
      client: options.client ?? null,
      adopted_upload_id: null,
      created_at: now,
      updated_at: now,
    }))
    try {
      await this.#transaction(async (trx) => {
        await options.check?.(trx)
        // Under the account's lock: what it stores and its uploads under way, which these then join.
        await this.#quotas.admit(trx, accountId, input.files, (locked) =>
          this.#uploads.reservedBytes(locked, accountId),
        )
        if (folderId !== null) await this.#folders.assertOwned(accountId, folderId, trx)
        await this.#uploads.insertIntents(trx, rows)
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(`Folder ${folderId}`)
      throw error
    }
    return prepared.map(({ id, file, grant, pathname }) => ({
      intentId: id,
      name: file.name,
      contentType: file.type,
      size: file.size,
      pathname,
      handleUploadUrl: this.#urls.uploadHandshake,
      statusUrl: this.#urls.uploadStatus(id),
      clientPayload: { intentId: id, name: file.name, grant },
      expiresAt,
    }))
  }

  async status(accountId: string, intentId: string): Promise<UploadStatus> {
    const intent = await this.#uploads.intent(intentId)
    if (!intent || intent.account_id !== accountId) throw notFound(`Upload ${intentId}`)
    return this.#statusOf(intent)
  }

  /**
   * The status of several of the account's uploads at once (the web app follows its uploads this way); an
   * upload of another account, or none, is "not found" and refuses them all.
   */
  async statuses(accountId: string, intentIds: string[]): Promise<UploadStatus[]> {
    const intents = await this.#owned(accountId, intentIds)
    return Promise.all(intents.map((intent) => this.#statusOf(intent)))
  }

  /**
   * Cancels the account's uploads that have not stored their file yet, as `cancelByGrant` does for a file
   * request's page: what they had received is removed; an upload already stored goes on.
   */
  async cancel(accountId: string, intentIds: string[]): Promise<void> {
    for (const intent of await this.#owned(accountId, intentIds)) {
      await this.#processor.end(intent.id, CANCELLED_MESSAGE)
    }
  }

  /** The account's intents, in the order asked for; one that is not the account's is "not found". */
  async #owned(accountId: string, intentIds: string[]): Promise<IntentRow[]> {
    const found = new Map((await this.#uploads.intents(intentIds)).map((intent) => [intent.id, intent]))
    return intentIds.map((id) => {
      const intent = found.get(id)
      if (!intent || intent.account_id !== accountId) throw notFound(`Upload ${id}`)
      return intent
    })
  }

  /**
   * The status of uploads prepared for a file request's public page, each authorized by its own grant (sent
   * in a body, never in a URL); one unknown intent or wrong grant refuses them all.
   */
  async statusByGrant(requestId: string, uploads: GrantedIntent[]): Promise<UploadStatus[]> {
    const intents = await this.#granted(requestId, uploads)
    return Promise.all(intents.map((intent) => this.#statusOf(intent)))
  }

  /**
   * Cancels uploads of a file request's public page that have not stored their file yet, each authorized by
   * its grant: they end in error, what they had received is removed, and they no longer count against the
   * request's limit on files. An upload already stored goes on; cancelling twice changes nothing.
   */
  async cancelByGrant(requestId: string, uploads: GrantedIntent[]): Promise<void> {
    for (const intent of await this.#granted(requestId, uploads)) {
      await this.#processor.end(intent.id, CANCELLED_MESSAGE)
    }
  }

  /** The intents behind the grants, all of them prepared for the request; otherwise the grants are refused. */
  async #granted(requestId: string, uploads: GrantedIntent[]): Promise<IntentRow[]> {
    const found = new Map(
      (await this.#uploads.intents(uploads.map((u) => u.intentId))).map((intent) => [intent.id, intent]),
    )
    const intents: IntentRow[] = []
    let refused = false
    for (const { intentId, grant } of uploads) {
      const intent = found.get(intentId)
      // Every grant is hashed and compared, found or not, so the time taken says nothing about which failed.
      const matches = constantTimeEqual(hashSecret(grant), intent?.grant_hash ?? hashSecret(''))
      if (!intent || !matches || intent.request_id !== requestId) refused = true
      else intents.push(intent)
    }
    if (refused) throw badGrant()
    return intents
  }

  async #statusOf(current: IntentRow): Promise<UploadStatus> {
    let intent = current
    if (intent.state === 'uploading' && intent.expires_at <= Date.now()) {
      // The sweeper would get there; a client asking now learns the outcome now.
      await this.#processor.expire(intent.id)
      intent = (await this.#uploads.intent(intent.id)) ?? intent
    }
    switch (intent.state) {
      case 'uploading': {
        // The parts a multipart upload stored so far, so that a client that lost its own count sends the rest.
        const multipart = await this.#staged.resumable(intent.id)
        return multipart
          ? { status: 'pending', phase: 'uploading', multipart }
          : { status: 'pending', phase: 'uploading' }
      }
      case 'processing':
        return { status: 'pending', phase: intent.state }
      case 'complete':
        return { status: 'complete', result: { id: intent.file_id ?? '' } }
      case 'error':
        return { status: 'error', error: intent.error ?? 'The upload failed.' }
    }
  }

  /**
   * The handshake of the blob client (`blob.generate-client-token`): the grant in clientPayload proves the
   * right to upload one file, and buys a client token bound to that file's pathname, declared size and type,
   * valid until the grant expires.
   */
  async handshake(request: HandshakeRequest): Promise<string> {
    const payload = this.#parseClientPayload(request.clientPayload)
    const intent = await this.#uploads.intent(payload.intentId)
    // An unknown intent and a wrong grant look the same, and the comparison takes the same time.
    const grantHash = hashSecret(payload.grant)
    if (!constantTimeEqual(grantHash, intent?.grant_hash ?? hashSecret('')) || !intent) throw badGrant()
    if (payload.name !== intent.name) {
      throw invalid('clientPayload.name does not match the name of the prepared upload.')
    }
    if (request.pathname !== intent.pathname) {
      throw invalid(
        `The pathname must be "${intent.pathname}", the one POST /files returned for this upload.`,
        "Pass the grant's pathname to upload() unchanged.",
      )
    }
    if (intent.state === 'uploading' && intent.expires_at <= Date.now()) {
      await this.#processor.expire(intent.id)
      throw conflict(
        `The upload grant expired at ${new Date(intent.expires_at).toISOString()}.`,
        'Prepare the upload again with POST /files.',
      )
    }
    if (intent.state !== 'uploading') {
      throw conflict(
        intent.state === 'error'
          ? 'This upload failed; its grant can no longer be used.'
          : 'This upload already received its file; its grant can no longer be used.',
        'Prepare a new upload with POST /files.',
      )
    }
    const token: ClientTokenPayload = {
      pathname: intent.pathname,
      validUntil: await this.#startUsing(intent),
      maximumSizeInBytes: intent.size,
      allowedContentTypes: [intent.content_type],
      addRandomSuffix: false,
      allowOverwrite: false,
      tokenPayload: intent.id,
    }
    const { clientToken } = await this.#keyring.keys()
    return signClientToken(clientToken, token)
  }

  /**
   * When a grant whose upload starts now expires: a grant cut short while unused (`unusedGrantSeconds`) gets
   * the whole lifetime the server gives grants, counted from its preparation.
   */
  async #startUsing(intent: IntentRow): Promise<number> {
    const lifetimeEnd = intent.created_at + this.#config.uploadGrantTtlSeconds * 1000
    if (intent.expires_at >= lifetimeEnd) return intent.expires_at
    await this.#uploads.extendGrant(intent.id, lifetimeEnd, Date.now())
    return lifetimeEnd
  }

  /**
   * The blob endpoint stored the whole blob of an upload under `key` (`blobKeyOf` the intent's account and the
   * file id it made for it): the intent adopts it and moves from uploading to processing, and processing starts.
   * False when the intent no longer takes a file (it ended, or adopted another blob) or the blob was not staged
   * for it: adoptStoredBlob checks both in its transaction.
   */
  async blobStored(intentId: string, key: string): Promise<boolean> {
    if (!(await this.#uploads.adoptStoredBlob(intentId, key, fileIdOfBlobKey(key)))) return false
    void this.#processor.kick(intentId)
    return true
  }

  #parseClientPayload(raw: string | null): { intentId: string; name: string; grant: string } {
    let value: unknown
    try {
      value = raw === null ? null : JSON.parse(raw)
    } catch {
      value = null
    }
    const keys = typeof value === 'object' && value !== null ? Object.keys(value).sort() : []
    const v = value as Record<string, unknown>
    if (
      keys.join(',') !== 'grant,intentId,name' ||
      typeof v.intentId !== 'string' ||
      typeof v.name !== 'string' ||
      typeof v.grant !== 'string'
    ) {
      throw invalid(
        'clientPayload must be the JSON string of the clientPayload object POST /files returned: { intentId, name, grant }.',
      )
    }
    return { intentId: v.intentId, name: v.name, grant: v.grant }
  }
}
