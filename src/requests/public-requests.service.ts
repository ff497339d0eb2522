// What the public request page (`/r/{publicId}`) needs: the request behind a public id, and recording what
// a submitter sent. The public id is the capability: no account is involved.
import type { Transactor } from '../db/database.ts'
import { conflict, invalid, notFound } from '../errors.ts'
import type { FilesRepository } from '../files/files.repository.ts'
import { newId } from '../ids.ts'
import type { PublicFileRequest, RequestsRepository, Submission } from './requests.repository.ts'

export interface NewSubmission {
  /** The public ID of the request link (`/r/{publicId}`). */
  publicId: string
  /** A file of the request's owner, already stored. */
  fileId: string
  submitterName?: string | null
  submitterEmail?: string | null
  message?: string | null
}

/** Bounds of what a submitter types on the public page (the API contract leaves them open). */
export const SUBMISSION_LIMITS = { name: 100, email: 254, message: 1000 } as const

// The pattern of ajv-formats' `email` format, which the Submission schema declares for submitterEmail.
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i

/** Trims what a submitter typed; blank means not given. */
function submitted(value: string | null | undefined, field: string, max: number): string | null {
  const trimmed = value?.trim() ?? ''
  if (trimmed.length === 0) return null
  if (trimmed.length > max) throw invalid(`The ${field} must be at most ${max} characters long.`)
  return trimmed
}

export class PublicRequestsService {
  readonly #transaction: Transactor
  readonly #requests: RequestsRepository
  readonly #files: FilesRepository

  constructor(deps: { transaction: Transactor; requests: RequestsRepository; files: FilesRepository }) {
    this.#transaction = deps.transaction
    this.#requests = deps.requests
    this.#files = deps.files
  }

  /** The request behind a public link; an unknown link is "not found". */
  async get(publicId: string): Promise<PublicFileRequest> {
    const request = await this.#requests.byPublicId(publicId)
    if (!request) throw notFound('File request')
    return request
  }

  /**
   * Records a submission to the request behind `publicId`: 409 when the request is inactive, 400 when it
   * requires an email that is missing or malformed; an email it does not collect is dropped. The file's
   * summary is copied, so the submission outlives the file.
   */
  async addSubmission(input: NewSubmission): Promise<Submission> {
    const submitterName = submitted(input.submitterName, 'submitter name', SUBMISSION_LIMITS.name)
    const message = submitted(input.message, 'message', SUBMISSION_LIMITS.message)
    const email = submitted(input.submitterEmail, 'submitter email', SUBMISSION_LIMITS.email)
    return this.#transaction(async (trx) => {
      // Counted first, which locks the request until the commit; a refusal below rolls the count back.
      const request = await this.#requests.countSubmission(trx, input.publicId)
      if (!request) throw notFound('File request')
      if (!request.isActive) {
        throw conflict(
          'This file request is no longer accepting files.',
          'Ask the owner to reactivate the request.',
        )
      }
      const submitterEmail = request.collectEmail ? email : null
      if (submitterEmail === null && request.emailRequired) {
        throw invalid('This file request requires the submitter email.', 'Give an email address.')
      }
      if (submitterEmail !== null && !EMAIL.test(submitterEmail)) {
        throw invalid('The submitter email is not a valid email address.')
      }
      const file = await this.#files.summary(trx, request.accountId, input.fileId)
      if (!file) throw notFound(`File ${input.fileId}`)
      const now = Date.now()
      const submission = {
        id: newId('sub', now),
        submitterName,
        submitterEmail,
        message,
        createdAt: now,
        file,
      }
      await this.#requests.insertSubmission(trx, { ...submission, requestId: request.id })
      return submission
    })
  }
}
