// Receiving what a submitter sent through a file request's public page: once processing has checked an
// upload's bytes, its File and its Submission are recorded together, in one transaction, in the request's
// folder (root when it has none), owned by the request's owner, with the submission count moved by one.
// Called by the upload processor (uploads/processing.job.ts), which is given this service by wiring.ts.
import { type AuditLog, VISITOR } from '../../platform/audit/audit-log.ts'
import type { Transaction } from '../../platform/db/database.ts'
import { AppError, invalid } from '../../platform/errors.ts'
import { newId } from '../../platform/ids.ts'
import type { FilesService } from '../files/files.service.ts'
import type { ReceivedUpload, SubmissionReceiver } from '../uploads/processing.job.ts'
import type { EventLog } from '../webhooks/events.ts'
import type { RequestsRepository, Submission } from './requests.repository.ts'
import { type RequestEvents, requestAuditDetails } from './requests.service.ts'
import { describeAllowedTypes, isAcceptedType } from './submission-rules.shared.ts'

const requestDeleted = () =>
  new AppError(
    'gone',
    'The file request was deleted before the file arrived, so the file was not kept.',
    'Ask the person who sent the link for a new one.',
  )

export class SubmissionsService implements SubmissionReceiver {
  readonly #requests: RequestsRepository
  readonly #files: FilesService
  readonly #events: EventLog<RequestEvents>
  readonly #tellOwners: boolean
  readonly #audit: AuditLog

  constructor(deps: {
    requests: RequestsRepository
    files: FilesService
    /** Records submission.received, and request.closed when the file limit is reached, in the same transaction. */
    events: EventLog<RequestEvents>
    /** Records request.closed (`maxFiles`) when a submission fills the request, in its transaction. */
    audit: AuditLog
    /**
     * Whether owners are told of submissions by email (the server sends email): each submission to a request whose
     * switch is on is then queued for submission-notices.job.ts, in its transaction.
     */
    tellOwners: boolean
  }) {
    this.#requests = deps.requests
    this.#files = deps.files
    this.#events = deps.events
    this.#tellOwners = deps.tellOwners
    this.#audit = deps.audit
  }

  /**
   * Records the upload's File and its Submission together. A request that was disabled or passed its deadline
   * since the upload was prepared still receives it (the page accepted it); one that was deleted does not
   * (`gone`), nor a file whose bytes show another type than declared, one the request does not accept
   * (`invalid_request`). Either
   * refusal is the upload's error, and processing removes its bytes.
   */
  async receive(upload: ReceivedUpload): Promise<void> {
    const request = await this.#requests.byId(upload.requestId)
    if (!request) throw requestDeleted()
    const { file } = upload
    const { allowedTypes } = request.limits
    // Checked again only when the bytes showed another type than the one the preparation accepted: a change
    // of the request's limits since then does not refuse what was prepared under the old ones.
    const retyped = file.contentType !== upload.declaredType
    if (retyped && !isAcceptedType(file.name, file.contentType, allowedTypes)) {
      throw invalid(
        `The contents of "${file.name}" are of type ${file.contentType}, which this request does not accept: it accepts ${describeAllowedTypes(allowedTypes)}.`,
        'Send a file of an accepted type.',
      )
    }
    const record = (folderId: string | null) =>
      this.#files.create({ ...file, accountId: request.accountId, folderId }, async (trx, created) => {
        const { filled, maxFiles } = await this.#requests.countSubmission(trx, request.id)
        if (filled) {
          // The submitter's doing, whether processing runs in their request or in the background after it.
          await this.#audit.record(trx, {
            accountId: request.accountId,
            kind: 'request.closed',
            subjectId: request.id,
            details: { reason: 'maxFiles', ...requestAuditDetails(request), maxFiles },
            actor: VISITOR,
          })
        }
        const submission: Submission = {
          id: newId('sub', created.createdAt),
          submitterName: upload.submitterName,
          submitterEmail: upload.submitterEmail,
          message: upload.message,
          sendingId: upload.sendingId,
          createdAt: created.createdAt,
          file: { id: file.id, name: file.name, contentType: file.contentType, size: file.size },
        }
        await this.#requests.insertSubmission(trx, { ...submission, requestId: request.id })
        if (this.#tellOwners && request.emailOwner) {
          await this.#requests.queueNotice(trx, {
            submissionId: submission.id,
            requestId: request.id,
            createdAt: submission.createdAt,
          })
        }
        await this.#recordEvents(trx, request.accountId, request.id, submission)
      })
    try {
      await record(request.folderId)
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'not_found')) throw error
      // The request or its folder went while the file was recorded. Without its request there is no
      // submission to record; a deleted folder's files and requests go to root, and so does this file.
      if (!(await this.#requests.byId(request.id))) throw requestDeleted()
      if (request.folderId === null) throw error
      await record(null)
    }
  }

  /**
   * submission.received, and request.closed if this file was the last the request allows; the request as this
   * transaction leaves it.
   */
  async #recordEvents(trx: Transaction, accountId: string, requestId: string, submission: Submission) {
    const received = await this.#events.audience(trx, accountId, 'submission.received')
    const closed = await this.#events.audience(trx, accountId, 'request.closed')
    if (!received && !closed) return
    const request = await this.#requests.get(accountId, requestId, trx)
    if (!request) return
    if (received) await this.#events.record(trx, received, [{ request, submission }])
    const { maxFiles } = request.limits
    if (closed && maxFiles !== null && request.submissionCount === maxFiles) {
      await this.#events.record(trx, closed, [{ request, reason: 'maxFiles' }])
    }
  }
}
