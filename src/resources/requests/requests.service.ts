// File requests: public pages that collect files from outside submitters (public-requests.service.ts), and
// the submissions they receive. A request's folder must be the account's, and the folder's request count
// moves with every request that enters or leaves it, in the same transaction.
import {
  type AuditDetails,
  type AuditLog,
  changedSettings,
  type SettingsOf,
} from '../../platform/audit/audit-log.ts'
import type { Transaction, Transactor } from '../../platform/db/database.ts'
import { isForeignKeyViolation } from '../../platform/db/errors.ts'
import type { Page } from '../../platform/db/pagination.ts'
import { AppError, conflict, invalid, notFound } from '../../platform/errors.ts'
import { newId, newPublicId } from '../../platform/ids.ts'
import { withLfLineBreaks } from '../../platform/line-breaks.shared.ts'
import type { Folder, FoldersRepository } from '../folders/folders.repository.ts'
import type { ClosedBecause } from '../webhooks/event-types.ts'
import type { EventLog } from '../webhooks/events.ts'
import type {
  FileRequest,
  RequestChanges,
  RequestLimits,
  RequestsRepository,
  Submission,
  SubmissionWithFile,
} from './requests.repository.ts'
import { normalizeAllowedType } from './submission-rules.shared.ts'

export interface NewFileRequest {
  title: string
  description?: string
  collectEmail?: boolean
  emailRequired?: boolean
  folderId?: string | null
  /** Limits set with the request, in the same transaction (the owner's pages); none when absent. */
  limits?: LimitsInput
  /** Whether its owner is told of submissions by email; true when absent. */
  emailOwner?: boolean
}

/** A request's new limits; a property left out is no limit of that kind. */
export interface LimitsInput {
  deadlineAt?: number | null
  maxFiles?: number | null
  maxFileSize?: number | null
  allowedTypes?: string[]
}

/** Absent properties are left unchanged; `description: null` clears, `folderId: null` moves to root. */
export interface FileRequestPatch {
  title?: string
  description?: string | null
  collectEmail?: boolean
  emailRequired?: boolean
  isActive?: boolean
  folderId?: string | null
  /** Replaces every limit, in the same transaction as the rest of the patch (the owner's pages). */
  limits?: LimitsInput
  emailOwner?: boolean
}

/** What the owner's page of a request shows: the request, a page of its submissions, the folders to move to. */
export interface RequestDetails {
  request: FileRequest
  submissions: Page<SubmissionWithFile>
  /** The account's first folders by name, plus the request's own folder when it is not among them. */
  folders: FolderChoices
}

/** Folders to choose from in a form: the first ones by name; `more` when the account has others. */
export interface FolderChoices {
  folders: Folder[]
  more: boolean
}

function cleanTitle(title: string): string {
  const trimmed = title.trim()
  if (trimmed.length < 3) {
    throw invalid(
      'The request body "title" must be at least 3 characters long, not counting outer spaces.',
      undefined,
      'title',
    )
  }
  return trimmed
}

const contradictoryEmail = () =>
  invalid(
    'The request body sets "emailRequired" to true and "collectEmail" to false: an email that is not collected cannot be required.',
    'Set "collectEmail" to true, or "emailRequired" to false.',
  )

const requestNotFound = (requestId: string) => notFound(`File request ${requestId}`)

/** A folder named in a body that the account does not have: named as the field, so a form can mark it. */
const folderNotFound = (folderId: string | null | undefined) =>
  new AppError('not_found', `Folder ${folderId} not found.`, undefined, 'folderId')

/**
 * What the audit log says of a request: its title and settings as a reader may see them (not its description,
 * a text of any length whose changes `changed` names).
 */
export function requestAuditDetails(
  request: Pick<FileRequest, 'title' | 'folderId' | 'isActive' | 'limits'>,
): AuditDetails {
  const { deadlineAt, maxFiles, maxFileSize, allowedTypes } = request.limits
  return {
    title: request.title,
    folderId: request.folderId,
    isActive: request.isActive,
    deadline: deadlineAt === null ? null : new Date(deadlineAt).toISOString(),
    maxFiles,
    maxFileSize,
    allowedTypes,
  }
}

/** The settings of a request that a change may give other values, by the names the API gives them. */
const SETTINGS: SettingsOf<FileRequest> = {
  title: (request) => request.title,
  description: (request) => request.description,
  collectEmail: (request) => request.collectEmail,
  emailRequired: (request) => request.emailRequired,
  isActive: (request) => request.isActive,
  folderId: (request) => request.folderId,
  emailOwner: (request) => request.emailOwner,
  deadline: (request) => request.limits.deadlineAt,
  maxFiles: (request) => request.limits.maxFiles,
  maxFileSize: (request) => request.limits.maxFileSize,
  allowedTypes: (request) => request.limits.allowedTypes.join(' '),
}

/** The events file requests record, and what from: the request as the change leaves it. */
export interface RequestEvents {
  'submission.received': { request: FileRequest; submission: Submission }
  'request.closed': { request: FileRequest; reason: ClosedBecause }
}

export class RequestsService {
  readonly #transaction: Transactor
  readonly #requests: RequestsRepository
  readonly #folders: FoldersRepository
  readonly #maxFileSize: number
  readonly #events: EventLog<RequestEvents>
  readonly #audit: AuditLog

  constructor(deps: {
    transaction: Transactor
    requests: RequestsRepository
    folders: FoldersRepository
    maxFileSize: number
    /** Records request.closed when the owner disables a request, in the same transaction. */
    events: EventLog<RequestEvents>
    /** Records request.created, request.changed and request.closed (disabled), in the same transactions. */
    audit: AuditLog
  }) {
    this.#transaction = deps.transaction
    this.#requests = deps.requests
    this.#folders = deps.folders
    this.#maxFileSize = deps.maxFileSize
    this.#events = deps.events
    this.#audit = deps.audit
  }

  /** The account's requests, newest first; `folderId` (an owned folder, else 404) narrows to one folder. */
  async list(
    accountId: string,
    options: { cursor?: string; limit: number; folderId?: string },
  ): Promise<Page<FileRequest>> {
    if (options.folderId !== undefined) await this.#folders.assertOwned(accountId, options.folderId)
    return this.#requests.list(accountId, options)
  }

  /** The account's request; another account's request is "not found". */
  async get(accountId: string, requestId: string): Promise<FileRequest> {
    const request = await this.#requests.get(accountId, requestId)
    if (!request) throw requestNotFound(requestId)
    return request
  }

  /**
   * What the owner's page of a request shows: the request (another account's is "not found"), a page of its
   * submissions with whether each file still exists, and the folders it may move to (`folderLimit` by name).
   */
  async details(
    accountId: string,
    requestId: string,
    options: { cursor?: string; limit: number; folderLimit: number },
  ): Promise<RequestDetails> {
    const request = await this.get(accountId, requestId)
    const [submissions, folders] = await Promise.all([
      this.#requests.listSubmissionsWithFiles(requestId, options),
      this.folderChoices(accountId, options.folderLimit, request.folder),
    ])
    return { request, submissions, folders }
  }

  /** The account's request and the folders it may move to (`folderLimit` by name): its edit form. */
  async forEditing(
    accountId: string,
    requestId: string,
    folderLimit: number,
  ): Promise<{ request: FileRequest; folders: FolderChoices }> {
    const request = await this.get(accountId, requestId)
    return { request, folders: await this.folderChoices(accountId, folderLimit, request.folder) }
  }

  /**
   * The account's first `limit` folders by name, for a form's choice of folder, and whether there are more;
   * `current` (a request's folder) is always among them.
   */
  async folderChoices(accountId: string, limit: number, current?: Folder | null): Promise<FolderChoices> {
    const folders = await this.#folders.byName(accountId, limit + 1)
    const more = folders.length > limit
    const shown = folders.slice(0, limit)
    if (current && !shown.some((folder) => folder.id === current.id)) shown.unshift(current)
    return { folders: shown, more }
  }

  /**
   * Creates an active request, with its limits if given, in one transaction; the folder, if any, must be
   * owned and its request count moves with it.
   */
  async create(accountId: string, input: NewFileRequest): Promise<FileRequest> {
    const title = cleanTitle(input.title)
    const collectEmail = input.collectEmail ?? true
    if (!collectEmail && input.emailRequired === true) throw contradictoryEmail()
    const limits = input.limits === undefined ? undefined : this.#checkLimits(input.limits)
    const folderId = input.folderId ?? null
    const now = Date.now()
    const id = newId('req', now)
    try {
      return await this.#transaction(async (trx) => {
        if (folderId !== null) await this.#assertFolder(accountId, folderId, trx)
        await this.#requests.insert(trx, {
          id,
          accountId,
          folderId,
          publicId: newPublicId(),
          title,
          description: input.description === undefined ? null : withLfLineBreaks(input.description),
          collectEmail,
          emailRequired: collectEmail && (input.emailRequired ?? true),
          emailOwner: input.emailOwner ?? true,
          createdAt: now,
        })
        if (limits) await this.#requests.setLimits(accountId, id, limits, trx)
        await this.#folders.adjustCount(trx, folderId, 'request_count', 1)
        const created = (await this.#requests.get(accountId, id, trx)) as FileRequest
        await this.#audit.record(trx, {
          accountId,
          kind: 'request.created',
          subjectId: id,
          details: requestAuditDetails(created),
        })
        return created
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw folderNotFound(folderId)
      throw error
    }
  }

  /**
   * Applies a patch, and its limits if given, in one transaction. Moving between folders adjusts both
   * folders' request counts in the same transaction. See EMAIL_RULE (requests.schemas.ts) for how
   * `collectEmail` and `emailRequired` constrain each other.
   */
  async update(accountId: string, requestId: string, patch: FileRequestPatch): Promise<FileRequest> {
    if (patch.collectEmail === false && patch.emailRequired === true) throw contradictoryEmail()
    const title = patch.title === undefined ? undefined : cleanTitle(patch.title)
    const limits = patch.limits === undefined ? undefined : this.#checkLimits(patch.limits)
    try {
      return await this.#transaction(async (trx) => {
        // Taken first, so the folder and email settings read here stay current until this transaction
        // commits: a concurrent move cannot make both transactions decrement the same old folder.
        const current = await this.#requests.touch(trx, accountId, requestId)
        if (!current) throw requestNotFound(requestId)
        const before = (await this.#requests.get(accountId, requestId, trx)) as FileRequest

        const changes: RequestChanges = {}
        if (title !== undefined) changes.title = title
        if (patch.description !== undefined) {
          changes.description = patch.description === null ? null : withLfLineBreaks(patch.description)
        }
        if (patch.isActive !== undefined) changes.is_active = patch.isActive
        if (patch.collectEmail !== undefined) changes.collect_email = patch.collectEmail
        if (patch.emailRequired !== undefined) changes.email_required = patch.emailRequired
        if (patch.emailOwner !== undefined) changes.email_owner = patch.emailOwner
        if (patch.collectEmail === false) changes.email_required = false
        if (patch.emailRequired === true && !(patch.collectEmail ?? current.collectEmail)) {
          throw conflict(
            'This file request does not collect email ("collectEmail" is false), so "emailRequired" cannot be true.',
            'Send "collectEmail": true in the same body to collect and require the email.',
          )
        }
        if (patch.folderId !== undefined && patch.folderId !== current.folderId) {
          if (patch.folderId !== null) await this.#assertFolder(accountId, patch.folderId, trx)
          changes.folder_id = patch.folderId
          await this.#folders.adjustCount(trx, current.folderId, 'request_count', -1)
          await this.#folders.adjustCount(trx, patch.folderId, 'request_count', 1)
        }
        await this.#requests.update(trx, requestId, changes)
        if (limits) await this.#requests.setLimits(accountId, requestId, limits, trx)
        const updated = (await this.#requests.get(accountId, requestId, trx)) as FileRequest
        await this.#recordChange(trx, accountId, before, updated)
        if (current.isActive && patch.isActive === false) {
          const audience = await this.#events.audience(trx, accountId, 'request.closed')
          if (audience) await this.#events.record(trx, audience, [{ request: updated, reason: 'disabled' }])
        }
        return updated
      })
    } catch (error) {
      if (isForeignKeyViolation(error)) throw folderNotFound(patch.folderId)
      throw error
    }
  }

  /**
   * Replaces the limits of the account's request: a deadline in the future, a largest file within the
   * server's, and a list of accepted types each an extension or a MIME type (stored in lower case, once each).
   */
  async setLimits(accountId: string, requestId: string, input: LimitsInput): Promise<RequestLimits> {
    const limits = this.#checkLimits(input)
    await this.#transaction(async (trx) => {
      // Taken first, so that the limits read next are those this change replaces (what the audit log says).
      if (!(await this.#requests.touch(trx, accountId, requestId))) throw requestNotFound(requestId)
      const before = (await this.#requests.get(accountId, requestId, trx)) as FileRequest
      await this.#requests.setLimits(accountId, requestId, limits, trx)
      await this.#recordChange(trx, accountId, before, { ...before, limits })
    })
    return limits
  }

  /**
   * Records what a change did to the request, in its transaction: request.closed (`disabled`) when its owner
   * turned it off, and request.changed naming the other settings it gave other values; nothing for a change
   * that changed nothing.
   */
  async #recordChange(trx: Transaction, accountId: string, before: FileRequest, after: FileRequest) {
    const closed = before.isActive && !after.isActive
    const changed = changedSettings(SETTINGS, before, after).filter(
      (name) => !(closed && name === 'isActive'),
    )
    const entry = (kind: 'request.changed' | 'request.closed', what: AuditDetails) => ({
      accountId,
      kind,
      subjectId: after.id,
      details: { ...what, ...requestAuditDetails(after) },
    })
    await this.#audit.recordEach(trx, [
      ...(changed.length > 0 ? [entry('request.changed', { changed })] : []),
      ...(closed ? [entry('request.closed', { reason: 'disabled' })] : []),
    ])
  }

  /** The limits as stored, or the first reason they cannot be (see `setLimits`). */
  #checkLimits(input: LimitsInput): RequestLimits {
    const deadlineAt = input.deadlineAt ?? null
    if (deadlineAt !== null && deadlineAt <= Date.now()) {
      throw invalid('The request body "deadline" must be in the future.', undefined, 'deadline')
    }
    const maxFileSize = input.maxFileSize ?? null
    if (maxFileSize !== null && maxFileSize > this.#maxFileSize) {
      throw invalid(
        `The request body "maxFileSize" must be at most ${this.#maxFileSize}, the largest file this server accepts.`,
        'The operator sets the server maximum with MAX_FILE_SIZE.',
        'maxFileSize',
      )
    }
    const allowedTypes: string[] = []
    for (const [i, entry] of (input.allowedTypes ?? []).entries()) {
      const normalized = normalizeAllowedType(entry)
      if (normalized === undefined) {
        throw invalid(
          `The request body "allowedTypes[${i}]" must be an extension such as ".pdf" or a MIME type such as "application/pdf" or "image/*".`,
          undefined,
          `allowedTypes[${i}]`,
        )
      }
      if (!allowedTypes.includes(normalized)) allowedTypes.push(normalized)
    }
    return { deadlineAt, maxFiles: input.maxFiles ?? null, maxFileSize, allowedTypes }
  }

  /** The account's folder, in the caller's transaction; another's or none is "not found" for `folderId`. */
  async #assertFolder(accountId: string, folderId: string, trx: Transaction): Promise<void> {
    try {
      await this.#folders.assertOwned(accountId, folderId, trx)
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') throw folderNotFound(folderId)
      throw error
    }
  }

  /** Submissions of the account's request, newest first; each keeps its file's summary as submitted. */
  async listSubmissions(
    accountId: string,
    requestId: string,
    page: { cursor?: string; limit: number },
  ): Promise<Page<Submission>> {
    if (!(await this.#requests.exists(accountId, requestId))) throw requestNotFound(requestId)
    return this.#requests.listSubmissions(requestId, page)
  }
}
