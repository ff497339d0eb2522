// What a file request's public page (`/r/{publicId}`) and its public API need: the state of the request
// behind a public id, preparing a submitter's uploads (bound to the request and to what the submitter typed),
// and the status and cancelling of those uploads, each authorized by its grant. The public id is the
// capability: no account is involved. The File and Submission are recorded by SubmissionsService once
// processing has checked the bytes.
import type { Transaction } from '../../platform/db/database.ts'
import { AppError, conflict, invalid, notFound, RetryLater } from '../../platform/errors.ts'
import { formatSize } from '../../platform/format-size.shared.ts'
import { QuotaExceeded } from '../quotas/quota-exceeded.ts'
import type { UploadsRepository } from '../uploads/uploads.repository.ts'
import type {
  FileDeclaration,
  Grant,
  GrantedIntent,
  UploadStatus,
  UploadsService,
} from '../uploads/uploads.service.ts'
import { type RequestState, requestStateOf } from './request-state.ts'
import type { PublicFileRequest, RequestsRepository } from './requests.repository.ts'
import {
  checkSubmitter,
  describeAllowedTypes,
  isAcceptedType,
  type SubmitterInput,
} from './submission-rules.shared.ts'

/**
 * What one submitter, or many, may hold of a request's public page without sending anything (issues 23 and 41):
 * an upload prepared and not started within UNUSED_GRANT_SECONDS expires (its page prepares it again when its
 * turn comes); an address holds at most MAX_PENDING_PER_CLIENT uploads not yet sent, across requests, and
 * MAX_PENDING_PER_CLIENT_PER_REQUEST of one request's, so that a few addresses cannot take all of a request's
 * MAX_UNDER_WAY_PER_REQUEST uploads under way, whatever its own limit on files.
 */
export const UNUSED_GRANT_SECONDS = 10 * 60
export const MAX_PENDING_PER_CLIENT = 500
export const MAX_PENDING_PER_CLIENT_PER_REQUEST = 100
export const MAX_UNDER_WAY_PER_REQUEST = 1000

/** A request behind a public id, with its state (request-state.ts): only an open one takes files. */
export type PublicRequestLookup =
  | { kind: 'unknown' }
  | { kind: 'found'; state: RequestState; request: PublicFileRequest }

/** Why a request takes no files, as its public page and public API say it. */
export const CLOSED_MESSAGES: Record<Exclude<RequestState, 'open'>, string> = {
  disabled: 'This file request no longer accepts files: its owner closed it.',
  past_deadline: 'This file request no longer accepts files: its deadline has passed.',
  full: 'This file request no longer accepts files: it has received every file it asked for.',
}

/**
 * What a submitter is told when the request's owner has no room left for the files (their quota, or their
 * largest file): that the request cannot take them, in plain words, and nothing of the owner's account.
 */
export const NO_ROOM_MESSAGES = {
  quota: 'This file request cannot take these files: there is not enough room left for them.',
  largest_file: 'This file is larger than this file request can take.',
} as const
const NO_ROOM_HINT = 'Send fewer or smaller files, or ask the person who sent the link to make room.'

const closed = (state: Exclude<RequestState, 'open'>) =>
  new AppError(
    'gone',
    CLOSED_MESSAGES[state],
    'Ask the person who sent the link whether they still want the files.',
  )

/** The largest file an account may upload, set by an admin (quotas/); null: none but the server's. */
export interface OwnersLargestFile {
  largestFileOf(accountId: string): Promise<number | null>
}

export class PublicRequestsService {
  readonly #requests: RequestsRepository
  readonly #uploadsRepository: UploadsRepository
  readonly #uploads: UploadsService
  readonly #maxFileSize: number
  readonly #owners: OwnersLargestFile

  constructor(deps: {
    requests: RequestsRepository
    uploadsRepository: UploadsRepository
    uploads: UploadsService
    maxFileSize: number
    owners: OwnersLargestFile
  }) {
    this.#requests = deps.requests
    this.#uploadsRepository = deps.uploadsRepository
    this.#uploads = deps.uploads
    this.#maxFileSize = deps.maxFileSize
    this.#owners = deps.owners
  }

  /** The request behind a public id, and its state. */
  async open(publicId: string): Promise<PublicRequestLookup> {
    const request = await this.#requests.byPublicId(publicId)
    if (!request) return { kind: 'unknown' }
    return { kind: 'found', state: requestStateOf(request), request }
  }

  /**
   * The largest file the request accepts: its own limit, within its owner's (an admin's setting of the account,
   * which a submission counts toward) and the server's. What the page and the public API say, and what the
   * preparation checks, so a submitter is never shown a limit that is not the one applied.
   */
  async largestFile(request: PublicFileRequest): Promise<number> {
    const owners = await this.#owners.largestFileOf(request.accountId)
    return Math.min(this.#maxFileSize, request.limits.maxFileSize ?? Infinity, owners ?? Infinity)
  }

  /**
   * Prepares the uploads of one submission: what the submitter typed and the files they chose. Everything is
   * checked first (the fields, each file against the request's limits, the number of files against what the
   * request still accepts) and nothing is written unless all of it holds. The count and the request's state
   * are checked again under the request's lock, in the transaction that records the uploads, so concurrent
   * preparations never take more files than the request accepts. `client` is the address the preparation
   * came from, as the rate limits name it.
   */
  async prepareUploads(
    publicId: string,
    input: SubmitterInput & { files: FileDeclaration[] },
    client: string,
  ): Promise<Grant[]> {
    const found = await this.open(publicId)
    if (found.kind === 'unknown') throw notFound('File request')
    if (found.state !== 'open') throw closed(found.state)
    const { request } = found
    const checked = checkSubmitter(input, request)
    if ('problem' in checked) throw invalid(checked.problem.message, undefined, checked.problem.field)
    await this.#checkFiles(request, input.files)
    return this.#uploads
      .prepare(
        request.accountId,
        // The folder is the request's when the file arrives (SubmissionsService), not now.
        { files: input.files, folderId: null },
        {
          submission: { requestId: request.id, ...checked.fields },
          check: async (trx) => {
            await this.#checkStillAccepts(trx, request.id, input.files.length)
            await this.#checkClientHolds(trx, request.id, client, input.files.length)
          },
          client,
          unusedGrantSeconds: UNUSED_GRANT_SECONDS,
        },
      )
      .catch((error: unknown) => {
        if (!(error instanceof QuotaExceeded)) throw error
        // The submission counts toward the owner's quota; the owner's figures are not the submitter's to read.
        throw new QuotaExceeded(error.reason, NO_ROOM_MESSAGES[error.reason], NO_ROOM_HINT, error.field)
      })
  }

  /** The status of uploads this page prepared, each authorized by its grant. */
  async uploadStatus(publicId: string, uploads: GrantedIntent[]): Promise<UploadStatus[]> {
    const request = await this.#requests.byPublicId(publicId)
    if (!request) throw notFound('File request')
    return this.#uploads.statusByGrant(request.id, uploads)
  }

  /** Cancels uploads this page prepared that have not stored their file yet. */
  async cancelUploads(publicId: string, uploads: GrantedIntent[]): Promise<void> {
    const request = await this.#requests.byPublicId(publicId)
    if (!request) throw notFound('File request')
    await this.#uploads.cancelByGrant(request.id, uploads)
  }

  async #checkFiles(request: PublicFileRequest, files: FileDeclaration[]): Promise<void> {
    const largest = await this.largestFile(request)
    const { allowedTypes } = request.limits
    for (const [i, file] of files.entries()) {
      if (file.size > largest) {
        throw invalid(
          `"${file.name}" is ${formatSize(file.size)}; this request accepts files of at most ${formatSize(largest)}.`,
          'Send a smaller file.',
          `files[${i}].size`,
        )
      }
      if (!isAcceptedType(file.name, file.type, allowedTypes)) {
        throw invalid(
          `"${file.name}" is not of a type this request accepts: it accepts ${describeAllowedTypes(allowedTypes)}.`,
          'Send a file of an accepted type.',
          `files[${i}].type`,
        )
      }
    }
  }

  /** Under the request's lock: it still takes files, and `count` more within its limit on files. */
  async #checkStillAccepts(trx: Transaction, requestId: string, count: number): Promise<void> {
    const request = await this.#requests.lock(trx, requestId)
    if (!request) throw notFound('File request')
    const state = requestStateOf(request)
    if (state !== 'open') throw closed(state)
    const underWay = await this.#uploadsRepository.underWayForRequest(trx, requestId, Date.now())
    if (underWay + count > MAX_UNDER_WAY_PER_REQUEST) {
      throw new RetryLater(
        `This file request has ${underWay.toLocaleString('en')} uploads under way; it takes at most ${MAX_UNDER_WAY_PER_REQUEST.toLocaleString('en')} at once.`,
        60,
        'Send again in a minute or two, when some of them have finished.',
      )
    }
    const { maxFiles } = request.limits
    if (maxFiles === null) return
    const taken = request.submissionCount + underWay
    const left = Math.max(0, maxFiles - taken)
    if (count > left) {
      throw conflict(
        left === 0
          ? `This file request accepts ${maxFiles} file${maxFiles === 1 ? '' : 's'} in all and has received them.`
          : `This file request accepts ${maxFiles} files in all; ${left} more can be sent, not ${count}.`,
        left === 0
          ? 'Ask the person who sent the link whether they still want files.'
          : `Send at most ${left}.`,
        'files',
      )
    }
  }

  /** The address does not hold more than MAX_PENDING_PER_CLIENT uploads not yet sent, with `count` more. */
  async #checkClientHolds(trx: Transaction, requestId: string, client: string, count: number): Promise<void> {
    const now = Date.now()
    const forRequest = await this.#uploadsRepository.pendingFromClient(trx, client, now, requestId)
    if (forRequest.count + count > MAX_PENDING_PER_CLIENT_PER_REQUEST) {
      throw new RetryLater(
        `This address has ${forRequest.count} uploads prepared for this file request and not yet sent; it may hold at most ${MAX_PENDING_PER_CLIENT_PER_REQUEST}.`,
        ((forRequest.firstExpiry ?? now) - now) / 1000,
        'Send or cancel the uploads already prepared, then prepare more.',
      )
    }
    const pending = await this.#uploadsRepository.pendingFromClient(trx, client, now)
    if (pending.count + count <= MAX_PENDING_PER_CLIENT) return
    throw new RetryLater(
      `This address has ${pending.count} uploads prepared and not yet sent; it may hold at most ${MAX_PENDING_PER_CLIENT}.`,
      ((pending.firstExpiry ?? now) - now) / 1000,
      'Send or cancel the uploads already prepared, then prepare more.',
    )
  }
}
